package profiles

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the expected files of the test corpora")

const corpusDir = "../testdata/profiles"

// TestCorpus runs one subtest per directory of testdata/profiles. A case is a
// config directory; request.json (optional) holds a request's "routing"
// object; want.json holds the explanation of every key, or want.errors the
// exact diagnostics, one a line.
func TestCorpus(t *testing.T) {
	cases, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(corpusDir, c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			got := runCase(t, dir)
			wantFile := filepath.Join(dir, "want.json")
			if strings.HasSuffix(got, "\n") && !strings.HasPrefix(got, "{") {
				wantFile = filepath.Join(dir, "want.errors")
			}
			if *update {
				_ = os.Remove(filepath.Join(dir, "want.json"))
				_ = os.Remove(filepath.Join(dir, "want.errors"))
				require.NoError(t, os.WriteFile(wantFile, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(wantFile)
			require.NoError(t, err, "missing %s (run go test ./profiles -update and review the diff)", wantFile)
			require.Equal(t, string(want), got)
		})
	}
}

func runCase(t *testing.T, dir string) string {
	cfg, diags := Load(dir)
	var request *Profile
	if b, err := os.ReadFile(filepath.Join(dir, "request.json")); err == nil {
		var body struct {
			Routing json.RawMessage `json:"routing"`
		}
		require.NoError(t, json.Unmarshal(b, &body))
		p, rd := ParseRouting(body.Routing)
		diags = append(diags, rd...)
		request = p
		if cfg != nil && p != nil {
			// The request rung may tighten each key's ladder, never loosen
			// it: reported once per loosening, whichever key it loosens.
			seen := map[Diagnostic]bool{}
			for _, k := range cfg.Keys {
				for _, d := range CheckTightening(append(cfg.Profiles.Layers(k.Principal()), Layer{Rung: "request", File: RequestFile, Profile: p})) {
					if !seen[d] {
						seen[d] = true
						diags = append(diags, d)
					}
				}
			}
		}
	}
	if len(diags) > 0 {
		diags.Sort()
		return diags.Error() + "\n"
	}
	out := map[string]Explanation{}
	var ids []string
	for _, k := range cfg.Keys {
		ids = append(ids, k.ID)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e, _ := cfg.Explain(cfg.KeyByID(id), request)
		out[id] = e
	}
	b, err := json.MarshalIndent(out, "", "  ")
	require.NoError(t, err)
	return string(b) + "\n"
}

// corpusFiles returns every file of the corpus with the suffix.
func corpusFiles(t testing.TB, suffix string) [][]byte {
	var out [][]byte
	_ = filepath.WalkDir(corpusDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, suffix) {
			b, _ := os.ReadFile(path)
			out = append(out, b)
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no %s files in %s", suffix, corpusDir)
	}
	return out
}

// FuzzParseProfile checks that any input either yields located diagnostics or
// a profile that keeps the invariants the rest of the pipeline relies on.
func FuzzParseProfile(f *testing.F) {
	for _, b := range corpusFiles(f, ".toml") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, diags := ParseProfile("p.toml", data)
		if len(diags) > 0 {
			require.Nil(t, p)
			for _, d := range diags {
				require.NotEmpty(t, d.Code)
				require.True(t, d.Line > 0 || d.Pointer != "" || d.Code == CodeSchema, d.String())
			}
			return
		}
		checkInvariants(t, p)
		// A rung that restates the one above it tightens nothing and so
		// loosens nothing; the merge keeps the rung above's values.
		twice := []Layer{{Rung: "org", File: "p.toml", Profile: p}, {Rung: "team:t", File: "p.toml", Profile: p}}
		require.Empty(t, CheckTightening(twice))
		once, both := Merge(twice[0]), Merge(twice...)
		require.Equal(t, once.View(), both.View())
	})
}

// FuzzParseRouting does the same for a request's routing object.
func FuzzParseRouting(f *testing.F) {
	for _, b := range corpusFiles(f, "request.json") {
		var body struct {
			Routing json.RawMessage `json:"routing"`
		}
		if json.Unmarshal(b, &body) == nil {
			f.Add([]byte(body.Routing))
		}
	}
	f.Add([]byte(`{"fallbacks":["A/B","a/b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, diags := ParseRouting(data)
		if len(diags) > 0 {
			require.Nil(t, p)
			for _, d := range diags {
				require.True(t, strings.HasPrefix(d.Pointer, "/routing"), d.String())
			}
			return
		}
		checkInvariants(t, p)
	})
}

func checkInvariants(t *testing.T, p *Profile) {
	if p.Fallbacks != nil {
		require.LessOrEqual(t, len(*p.Fallbacks), MaxFallbacks)
	}
	for _, l := range []*[]string{p.Fallbacks, p.Providers.Preferred, p.Providers.Allowed, p.Providers.Denied, p.Providers.Quantizations} {
		if l == nil {
			continue
		}
		seen := map[string]bool{}
		for _, s := range *l {
			require.Equal(t, strings.ToLower(s), s)
			require.False(t, seen[s], "duplicate %q survived", s)
			seen[s] = true
		}
	}
}
