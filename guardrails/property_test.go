package guardrails

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

var segs = []string{"a", "b", "ab", "ba", "A", "aB", "x-1", "b.c"}

func randSeg(r *rand.Rand) string { return segs[r.Intn(len(segs))] }

func randSlug(r *rand.Rand, maxSegs int) string {
	n := 1 + r.Intn(maxSegs)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = randSeg(r)
	}
	return strings.Join(parts, "/")
}

// randPattern builds a pattern from segments, "*", "**" and partial-segment stars.
func randPattern(r *rand.Rand) string {
	n := 1 + r.Intn(3)
	parts := make([]string, n)
	for i := range parts {
		switch r.Intn(6) {
		case 0:
			parts[i] = "*"
		case 1:
			parts[i] = "**"
		case 2:
			parts[i] = randSeg(r) + "*"
		case 3:
			parts[i] = "*" + randSeg(r)
		default:
			parts[i] = randSeg(r)
		}
	}
	return strings.Join(parts, "/")
}

func randCase(r *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if r.Intn(2) == 0 {
			b[i] = byte(strings.ToUpper(string(c))[0])
		}
	}
	return string(b)
}

func anyRef(ps []string, s string) bool {
	for _, p := range ps {
		if MatchPattern(p, s) {
			return true
		}
	}
	return false
}

// TestExpansionMatchesReference checks that membership in the expanded literal
// sets equals matching the patterns directly with MatchPattern.
func TestExpansionMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(20250101))
	for iter := 0; iter < 300; iter++ {
		// A random catalog: 2-3 segment model slugs, providers with optional tags.
		var models []map[string]any
		seen := map[string]bool{}
		for i := 0; i < 20; i++ {
			slug := randSeg(r) + "/" + randSlug(r, 2)
			if seen[strings.ToLower(slug)] {
				continue
			}
			seen[strings.ToLower(slug)] = true
			ep := map[string]any{"provider": strings.ReplaceAll(randSeg(r), ".", ""), "price_in": 1, "price_out": 1}
			if r.Intn(2) == 0 {
				ep["tag"] = randSeg(r)
			}
			models = append(models, map[string]any{"slug": slug, "context_window": 1000, "endpoints": []any{ep}})
		}
		raw, err := json.Marshal(map[string]any{"models": models})
		require.NoError(t, err)
		cat, ds := ParseCatalog("catalog.json", raw)
		require.Empty(t, ds)

		var pats Patterns
		for i := r.Intn(3); i > 0; i-- {
			pats.AllowModels = append(pats.AllowModels, randPattern(r))
		}
		for i := r.Intn(3); i > 0; i-- {
			pats.DenyModels = append(pats.DenyModels, randPattern(r))
		}
		for i := 1 + r.Intn(2); i > 0; i-- {
			pats.AllowProviders = append(pats.AllowProviders, randPattern(r))
		}
		d := expand(cat, profiles.Principal{}, "rev", pats)
		ctx := fmt.Sprintf("iteration %d, patterns %+v", iter, pats)

		for _, m := range cat.Models() {
			want := (len(pats.AllowModels) == 0 || anyRef(pats.AllowModels, m.Slug)) && !anyRef(pats.DenyModels, m.Slug)
			require.Equal(t, want, d.ModelAllowed(randCase(r, m.Slug)), "%s: model %s", ctx, m.Slug)

			for _, e := range m.Endpoints {
				// An endpoint is allowed when some entry covers its slug; the
				// reference: a pattern without "/" matches the provider, one with
				// "/" matches the provider/tag slug.
				wantEp := false
				for _, p := range pats.AllowProviders {
					if strings.Contains(p, "/") {
						wantEp = wantEp || (e.Tag != "" && MatchPattern(p, e.Slug()))
					} else {
						wantEp = wantEp || MatchPattern(p, e.Provider)
					}
				}
				gotEp := false
				for _, a := range d.AllowedProviders() {
					gotEp = gotEp || covers(a, e.Slug())
				}
				require.Equal(t, wantEp, gotEp, "%s: endpoint %s in %v", ctx, e.Slug(), d.AllowedProviders())
			}
		}
		// A random slug outside the catalog: allowed only without model rules.
		slug := "zz/" + randSlug(r, 2)
		require.Equal(t, len(pats.AllowModels)+len(pats.DenyModels) == 0, d.ModelAllowed(slug))
	}
}

// TestCompiledMatcherMatchesReference compares the compiled matcher used for
// expansion with MatchPattern over random patterns and slugs.
func TestCompiledMatcherMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 20000; i++ {
		p, s := randPattern(r), randSlug(r, 4)
		m := compilePattern(p)
		require.Equal(t, MatchPattern(p, s), m.match(strings.ToLower(s)), "pattern %q slug %q", p, s)
	}
}

func TestMatchPatternExamples(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"openai/*", "openai/gpt-4o", true},
		{"openai/*", "openai/o1/preview", false},
		{"openai/**", "openai/o1/preview", true},
		{"OpenAI/GPT-*", "openai/gpt-4o", true},
		{"*", "openai", true},
		{"*", "openai/gpt", false},
		{"**", "openai/gpt", true},
		{"a/*", "a/", true},
		{"a/**", "a", false},
		{"*/*:free", "meta/llama:free", true},
		{"openai/gpt-4o", "openai/gpt-4o-mini", false},
		{"open?i/*", "openai/x", false},
		{"deepinfra", "deepinfra/fp8", false},
	} {
		require.Equal(t, c.want, MatchPattern(c.p, c.s), "%q ~ %q", c.p, c.s)
	}
}

// corpusSeeds returns the corpus catalogs, for fuzzing.
func corpusSeeds(t interface{ Helper() }) [][]byte {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*", "catalog.json"))
	files = append(files, filepath.Join(demoDir, "catalog.json"))
	var out [][]byte
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b)
		}
	}
	return out
}

func FuzzMatchPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"openai/*", "openai/gpt-4o"}, {"meta-llama/**", "meta-llama/llama-3.1-8b-instruct:free"},
		{"x-ai/**", "X-AI/Grok-4"}, {"*/*:free", "a/b:free"}, {"deepinfra/fp*", "deepinfra/fp8"},
		{"**", "a/b/c"}, {"a*b*c", "aXbYc"}, {"OPENAI/*", "openai/o1/preview"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 128 || strings.Count(p, "*") > 8 {
			return // the backtracking matcher is meant for short config patterns
		}
		m := compilePattern(p)
		want := MatchPattern(p, s)
		if got := m.match(strings.ToLower(s)); got != want {
			t.Fatalf("compiled %v, reference %v for %q ~ %q", got, want, p, s)
		}
		if !strings.Contains(p, "*") && want != strings.EqualFold(p, s) && strings.ToLower(p) == p && strings.ToLower(s) == s {
			t.Fatalf("literal pattern %q vs %q: %v", p, s, want)
		}
	})
}

func FuzzParseCatalog(f *testing.F) {
	for _, b := range corpusSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, ds := ParseCatalog("catalog.json", raw)
		if (c == nil) == (len(ds) == 0) {
			t.Fatalf("catalog %v with diagnostics %v", c != nil, ds)
		}
		for _, d := range ds {
			if d.Code == "" || d.File != "catalog.json" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		if c == nil {
			return
		}
		if c.Len() == 0 || len(c.Revision()) != 64 {
			t.Fatalf("len %d revision %q", c.Len(), c.Revision())
		}
		path := filepath.Join(t.TempDir(), "last-good.json")
		if err := c.SaveLastGood(path); err != nil {
			t.Fatal(err)
		}
		c2, ds := LoadCatalogFile(path)
		if len(ds) > 0 || c2.Revision() != c.Revision() {
			t.Fatalf("round trip: %v %v", ds, c2 != nil)
		}
	})
}
