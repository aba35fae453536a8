package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// writeFile writes a file under dir, creating its folder.
func writeFile(tb testing.TB, dir, name, content string) {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// synthetic writes a real-size configuration into a new directory: 100 keys
// across 10 teams (a fifth of them with a key profile of their own), 400
// models from 40 authors served by 60 providers (3–5 endpoints each, tagged
// variants), 4 upstreams (one per connector), 2 routes, an org guardrail and
// per-team model and provider allow lists. With head set, one team profile
// changes (rank_by and a fallback) and one guardrail rule forbids one more
// model family; with catalogChange, one model's price changes as well, which
// makes every key group compile.
func synthetic(tb testing.TB, head, catalogChange bool) string {
	dir := tb.TempDir()
	authors := syntheticAuthor
	var models []map[string]any
	for i := 0; i < 400; i++ {
		var eps []any
		for j := 0; j < 3+i%3; j++ {
			price := 1.0 + float64(j)
			if catalogChange && i == 7 && j == 0 {
				price = 0.5
			}
			ep := map[string]any{"provider": fmt.Sprintf("provider-%02d", (i*7+j*13)%60), "price_in": price, "price_out": 2 * price, "latency_ms": 300 + 50*j, "throughput_tps": 40 + j}
			if j == 2 {
				ep["tag"] = []string{"fp8", "fp4", "turbo"}[i%3]
			}
			eps = append(eps, ep)
		}
		a := authors(i)
		slug := fmt.Sprintf("%s/model-%03d", a, i)
		m := map[string]any{"slug": slug, "context_window": 128000, "endpoints": eps}
		switch a {
		case "openai", "anthropic":
			eps = append(eps, map[string]any{"provider": a, "price_in": 1.0, "price_out": 2.0})
			m["endpoints"] = eps
			m["native"] = map[string]string{a: fmt.Sprintf("model-%03d", i)}
		}
		models = append(models, m)
	}
	raw, err := json.Marshal(map[string]any{"models": models})
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, dir, "catalog.json", string(raw))

	var toml strings.Builder
	toml.WriteString(`[[upstreams]]
name = "market"
connector = "openrouter"
content_filters = ["pii-redact"]

[[upstreams]]
name = "edge"
connector = "vercel"

[[upstreams]]
name = "openai"
connector = "openai"

[[upstreams]]
name = "anthropic"
connector = "anthropic"
`)
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&toml, "\n[[keys]]\nid = \"k-%03d\"\nsha256 = %q\norg = \"acme\"\nteam = \"team-%d\"\nproject = \"p-%d\"\n",
			i, profiles.HashSecret(fmt.Sprint("secret-", i)), i%10, i%25)
		if i%5 == 0 {
			writeFile(tb, dir, fmt.Sprintf("profiles/keys/k-%03d.toml", i), fmt.Sprintf("fallbacks = [\"author-%02d/model-%03d\"]\n", 2+i%38, 2+i%38+40*(i%9)))
		}
	}
	toml.WriteString(`
[[routes]]
model = "assistant"
[[routes.targets]]
upstream = "market"
model = "author-02/model-002"
[[routes.targets]]
upstream = "anthropic"
model = "anthropic/model-001"
takes_over = ["refusal"]

[[routes]]
model = "pool"
strategy = "fastest"
targets = [{upstream = "market", model = "author-03/model-003"}, {upstream = "edge", model = "author-04/model-004"}]
then = { targets = [{upstream = "openai", model = "openai/model-000"}], on = ["overflow"] }
`)
	writeFile(tb, dir, "sluice.toml", toml.String())
	writeFile(tb, dir, "profiles/org.toml", "[providers]\ndenied = [\"provider-59\"]\n")
	for t := 0; t < 10; t++ {
		rank := []string{"cost", "latency", "throughput"}[t%3]
		fallbacks := fmt.Sprintf("%q, %q", fmt.Sprintf("author-%02d/model-%03d", 10+t, 10+t), fmt.Sprintf("openai/model-%03d", 40*t))
		if head && t == 3 {
			rank = "latency"
			fallbacks += `, "anthropic/model-041"`
		}
		p := fmt.Sprintf("fallbacks = [%s]\n\n[providers]\nrank_by = %q\npreferred = [\"provider-%02d\", \"provider-%02d\"]\n", fallbacks, rank, t, t+10)
		if t%4 == 1 {
			p += fmt.Sprintf("allowed = [\"provider-%02d\", \"provider-%02d\", \"provider-%02d\", \"openai\", \"anthropic\"]\n", t, t+10, t+20)
		}
		writeFile(tb, dir, fmt.Sprintf("profiles/teams/team-%d.toml", t), p)
	}
	org := `package sluice.guardrails

deny_models contains p if some p in {"author-39/**", "author-1*/model-1??"}

deny_providers contains p if some p in {"provider-0*/fp4", "provider-58"}
`
	if head {
		org += "\ndeny_models contains \"author-2*/**\" if input.principal.team == \"team-5\"\n"
	}
	writeFile(tb, dir, "guardrails/org.rego", org)
	writeFile(tb, dir, "guardrails/teams.rego", `package sluice.guardrails

team_models := {
	"team-0": {"openai/*", "anthropic/*", "author-0*/*", "author-1*/**"},
	"team-2": {"author-2*/**", "author-3*/*", "openai/**"},
	"team-6": {"**"},
}

allow_models contains p if some p in team_models[input.principal.team]

allow_providers contains p if {
	input.principal.team == "team-4"
	some p in {"provider-1*", "provider-2*", "provider-3*/fp8", "openai", "anthropic"}
}

content_filter := "pii-redact" if input.principal.team == "team-8"
`)
	return dir
}

// syntheticAuthor is the author of the synthetic catalog's model i.
func syntheticAuthor(i int) string {
	switch i % 40 {
	case 0:
		return "openai"
	case 1:
		return "anthropic"
	}
	return fmt.Sprintf("author-%02d", i%40)
}

func loadPair(tb testing.TB, catalogChange bool) (*snapshot.Snapshot, *snapshot.Snapshot) {
	base, d := snapshot.Load(synthetic(tb, false, false))
	if len(d) > 0 {
		tb.Fatal(d)
	}
	head, d := snapshot.Load(synthetic(tb, true, catalogChange))
	if len(d) > 0 {
		tb.Fatal(d)
	}
	return base, head
}

// BenchmarkDiff measures a full diff of a real-size configuration (100 keys
// × 402 models × 4 upstreams): "load+compare" is what `sluice diff` does
// (both directories loaded, every key compared); "compare" is the comparison
// alone; "compare-catalog-changed" changes a catalog price as well, so no
// key group is skipped and every group compiles every model on every
// upstream on both sides.
func BenchmarkDiff(b *testing.B) {
	ctx := context.Background()
	b.Run("load+compare", func(b *testing.B) {
		bd, hd := synthetic(b, false, false), synthetic(b, true, false)
		for b.Loop() {
			base, d1 := snapshot.Load(bd)
			head, d2 := snapshot.Load(hd)
			if len(d1)+len(d2) > 0 {
				b.Fatal(d1, d2)
			}
			if _, err := Compare(ctx, base, head, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name          string
		catalogChange bool
	}{{"compare", false}, {"compare-catalog-changed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			base, head := loadPair(b, tc.catalogChange)
			var r *Report
			for b.Loop() {
				base.Issuer, head.Issuer = freshIssuer(base), freshIssuer(head)
				var err error
				if r, err = Compare(ctx, base, head, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Compared.Groups), "groups")
			b.ReportMetric(float64(r.Summary.KeysAffected), "keys-affected")
		})
	}
}

// freshIssuer returns an issuer with an empty decision cache, so that every
// iteration issues its decisions as a first run would.
func freshIssuer(s *snapshot.Snapshot) *guardrails.Issuer {
	return guardrails.NewIssuer(s.Policy, s.Catalog)
}

// TestSyntheticDiff checks that the benchmark's configuration loads and that
// its head revision changes what it is meant to change.
func TestSyntheticDiff(t *testing.T) {
	base, head := loadPair(t, false)
	r, err := Compare(context.Background(), base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Changed || r.Summary.NewlyForbidden == 0 || r.Summary.NativeChanged == 0 {
		t.Fatalf("summary %+v", r.Summary)
	}
	if r.Compared.Keys != 100 || r.Compared.Models != 402 || r.Compared.Upstreams != 4 {
		t.Fatalf("compared %+v", r.Compared)
	}
	for _, k := range r.Keys {
		if !strings.HasSuffix(k.Base.Team, "-3") && !strings.HasSuffix(k.Base.Team, "-5") {
			t.Errorf("key %s of %s changed", k.Key, k.Base.Team)
		}
	}
}

// BenchmarkDiffTraffic measures `sluice diff --traffic` end to end on the
// real-size configuration (100 keys × 402 models × 4 upstreams) and a
// SQLite request log of one million requests over 7 days, one per
// combination and then some: the grouped query, the comparison and the
// weighing. The log is written before the timed part.
func BenchmarkDiffTraffic(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	base, head := loadPair(b, false)
	store, err := requestlog.OpenSQLite(filepath.Join(b.TempDir(), "requests.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	upstreams := []string{"market", "edge", "openai", "anthropic"}
	start := time.Now()
	for lo := 0; lo < n; lo += 10_000 {
		rows := make([]requestlog.Row, 0, 10_000)
		for i := lo; i < lo+10_000; i++ {
			m := i / 100 % 400
			r := requestlog.Row{TS: from.Add(time.Duration(i) * (7 * 24 * time.Hour / n)), RequestID: fmt.Sprintf("r%08d", i),
				Org: "acme", Team: fmt.Sprintf("team-%d", i%100%10), KeyID: fmt.Sprintf("k-%03d", i%100),
				DecidedModel: fmt.Sprintf("%s/model-%03d", syntheticAuthor(m), m), Upstream: upstreams[i/40_000%4],
				RequestRouting: i%7 == 0, Status: 200}
			if i%50 == 1 {
				r.Route, r.DecidedModel, r.Upstream = "assistant", "author-02/model-002", "market"
			}
			rows = append(rows, r)
		}
		if err := store.Insert(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("wrote %d rows in %v", n, time.Since(start).Round(time.Millisecond))
	topts := TrafficOptions{From: from, To: from.Add(7 * 24 * time.Hour)}
	var r *Report
	for b.Loop() {
		base.Issuer, head.Issuer = freshIssuer(base), freshIssuer(head)
		if r, err = CompareTraffic(ctx, base, head, Options{}, store, topts); err != nil {
			b.Fatal(err)
		}
	}
	if r.Traffic.Requests != n || r.Traffic.Affected == 0 || r.Traffic.Totals.Refused == 0 {
		b.Fatalf("traffic %+v", r.Traffic.Totals)
	}
	b.ReportMetric(float64(r.Traffic.Affected), "affected-requests")
	b.ReportMetric(float64(len(r.Traffic.Impacts)), "impacts")
}
