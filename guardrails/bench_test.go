package guardrails

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicegw/sluice/profiles"
)

// synthetic writes a 400-model / 60-provider catalog and a realistic policy
// (org-wide denies, a team with model and provider allow lists) to a directory.
func synthetic(b testing.TB) string {
	dir := b.TempDir()
	var models []map[string]any
	for i := 0; i < 400; i++ {
		var eps []any
		for j := 0; j < 3+i%3; j++ {
			ep := map[string]any{"provider": fmt.Sprintf("provider-%02d", (i*7+j*13)%60), "price_in": 1.0, "price_out": 2.0, "latency_ms": 500}
			if j == 2 {
				ep["tag"] = []string{"fp8", "fp4", "turbo"}[i%3]
			}
			eps = append(eps, ep)
		}
		models = append(models, map[string]any{
			"slug": fmt.Sprintf("author-%02d/model-%03d", i%40, i), "context_window": 128000, "endpoints": eps,
		})
	}
	raw, err := json.Marshal(map[string]any{"models": models})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), raw, 0o644); err != nil {
		b.Fatal(err)
	}
	gdir := filepath.Join(dir, GuardrailsDir)
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		b.Fatal(err)
	}
	org := `package sluice.guardrails

deny_models contains p if some p in {"author-03/**", "author-1*/model-1??"}

deny_providers contains p if some p in {"provider-0*/fp4", "provider-59"}
`
	teams := `package sluice.guardrails

team_models := {
	"ml": {"author-0*/*", "author-1*/**", "author-2*/model-2*", "author-30/*", "author-31/*", "author-32/*"},
}

team_providers := {
	"ml": {"provider-1*", "provider-2*", "provider-3*/fp8", "provider-4*/turbo", "provider-50"},
}

allow_models contains p if some p in team_models[input.principal.team]

allow_providers contains p if some p in team_providers[input.principal.team]

content_filter := "pii-redact" if input.principal.project == "patients"

# The data restrictions: every issue of the ml team's decision reads all four.
zero_retention := true if input.principal.team == "ml"

no_training := true if input.principal.team == "ml"

quantizations contains q if {
	input.principal.team == "ml"
	some q in {"fp8", "bf16", "fp16"}
}

max_price := {"input": 3, "output": 15} if input.principal.team == "ml"
`
	for name, src := range map[string]string{"org.rego": org, "teams.rego": teams} {
		if err := os.WriteFile(filepath.Join(gdir, name), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func syntheticIssuer(b *testing.B) *Issuer {
	dir := synthetic(b)
	p, ds := LoadPolicy(dir)
	if len(ds) > 0 {
		b.Fatal(ds)
	}
	c, ds := LoadCatalog(dir)
	if len(ds) > 0 {
		b.Fatal(ds)
	}
	return NewIssuer(p, c)
}

var mlPrincipal = profiles.Principal{Org: "acme", Team: "ml", Project: "p", Key: "k"}

// BenchmarkDecisionIssue measures one uncached decision: one Rego evaluation
// plus the Go expansion over 400 models and 60 providers, with all four data
// restrictions set. Budget: 1 ms.
func BenchmarkDecisionIssue(b *testing.B) {
	is := syntheticIssuer(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := is.issue(ctx, mlPrincipal)
		if err != nil {
			b.Fatal(err)
		}
		if !d.patterns.ZeroRetention || d.patterns.MaxPrice == nil {
			b.Fatal("the data restrictions were not read")
		}
	}
}

// BenchmarkExpandOnly measures the Go expansion without the Rego evaluation.
func BenchmarkExpandOnly(b *testing.B) {
	is := syntheticIssuer(b)
	d, err := is.issue(context.Background(), mlPrincipal)
	if err != nil {
		b.Fatal(err)
	}
	pats := d.Patterns()
	b.ReportAllocs()
	for b.Loop() {
		expand(is.catalog, mlPrincipal, is.revision, pats)
	}
}

// BenchmarkDecideCached measures a cache hit.
func BenchmarkDecideCached(b *testing.B) {
	is := syntheticIssuer(b)
	ctx := context.Background()
	if _, err := is.Decide(ctx, mlPrincipal); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := is.Decide(ctx, mlPrincipal); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkModelAllowed(b *testing.B) {
	is := syntheticIssuer(b)
	d, err := is.Decide(context.Background(), mlPrincipal)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !d.ModelAllowed("author-01/model-001") {
			b.Fatal("expected allowed")
		}
	}
}

// BenchmarkFilterChain4 filters a 4-entry chain with a cached decision and a
// reused buffer, one entry dropped. Budget: 1 us, 1 alloc.
func BenchmarkFilterChain4(b *testing.B) {
	is := syntheticIssuer(b)
	d, err := is.Decide(context.Background(), mlPrincipal)
	if err != nil {
		b.Fatal(err)
	}
	chain := []string{"author-01/model-001", "author-03/model-003", "author-10/model-050", "author-20/model-220"}
	dst := make([]string, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		kept, dropped := d.FilterChain(chain, dst)
		if len(kept) != 3 || len(dropped) != 1 {
			b.Fatalf("kept %v dropped %v", kept, dropped)
		}
	}
}

// BenchmarkFilterChain4NoDrop is the common case: nothing dropped, no allocation.
func BenchmarkFilterChain4NoDrop(b *testing.B) {
	is := syntheticIssuer(b)
	d, err := is.Decide(context.Background(), mlPrincipal)
	if err != nil {
		b.Fatal(err)
	}
	chain := []string{"author-01/model-001", "author-02/model-002", "author-10/model-050", "author-20/model-220"}
	dst := make([]string, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		kept, dropped := d.FilterChain(chain, dst)
		if len(kept) != 4 || dropped != nil {
			b.Fatalf("kept %v dropped %v", kept, dropped)
		}
	}
}

func BenchmarkCombineProviders(b *testing.B) {
	is := syntheticIssuer(b)
	d, err := is.Decide(context.Background(), mlPrincipal)
	if err != nil {
		b.Fatal(err)
	}
	allowed := []string{"provider-10", "provider-31/fp8", "provider-45"}
	b.ReportAllocs()
	for b.Loop() {
		CombineProviders(allowed, []string{"provider-12"}, true, d)
	}
}

func BenchmarkLoadPolicy(b *testing.B) {
	dir := synthetic(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := LoadPolicy(dir); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}

func BenchmarkLoadCatalog(b *testing.B) {
	dir := synthetic(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := LoadCatalog(dir); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}

// tenThousandKeys is the principals a configuration of 10,000 keys names:
// one org, 50 teams, 500 projects, every key's ladder (10,551 principals).
func tenThousandKeys() []profiles.Principal {
	ps := []profiles.Principal{{Org: "acme"}}
	for t := range 50 {
		team := fmt.Sprintf("team-%02d", t)
		if t == 0 {
			team = "ml" // the team every data restriction applies to
		}
		ps = append(ps, profiles.Principal{Org: "acme", Team: team})
		for p := range 10 {
			project := fmt.Sprintf("project-%03d", t*10+p)
			ps = append(ps, profiles.Principal{Org: "acme", Team: team, Project: project})
			for k := range 20 {
				ps = append(ps, profiles.Principal{Org: "acme", Team: team, Project: project, Key: fmt.Sprintf("key-%05d", (t*10+p)*20+k)})
			}
		}
	}
	return ps
}

// BenchmarkCheckPrincipals10k measures the load-time check of a
// configuration of 10,000 keys (Policy.CheckPrincipals over 10,551
// principals, on GOMAXPROCS goroutines): what every start-up, reload and
// `sluice check` adds. Run with -benchtime=3x; -cpu 1,2 shows the
// parallel gain.
func BenchmarkCheckPrincipals10k(b *testing.B) {
	is := syntheticIssuer(b)
	ps := tenThousandKeys()
	if len(ps) != 10551 {
		b.Fatalf("%d principals", len(ps))
	}
	ctx := context.Background()
	for b.Loop() {
		if ds := is.policy.CheckPrincipals(ctx, ps); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}
