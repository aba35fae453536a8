package profiles

import "testing"

// BenchmarkMerge merges a full ladder (org, team, project, key, request),
// every rung setting a field.
func BenchmarkMerge(b *testing.B) {
	str := func(s string) *string { return &s }
	list := func(s ...string) *[]string { return &s }
	mk := func(f func(*Profile)) *Profile { p := &Profile{}; f(p); return p }
	layers := []Layer{
		{Rung: "org", Profile: mk(func(p *Profile) {
			p.Fallbacks = list("a/b")
			p.Providers.RankBy = str("cost")
			p.Providers.Denied = list("x/fp4")
		})},
		{Rung: "team:ml", Profile: mk(func(p *Profile) { p.Providers.Preferred = list("openai", "azure") })},
		{Rung: "project:chat", Profile: mk(func(p *Profile) { p.Providers.RankBy = str("latency") })},
		{Rung: "key:k", Profile: mk(func(p *Profile) { p.Providers.Allowed = list("openai", "azure", "anthropic") })},
		{Rung: "request", Profile: mk(func(p *Profile) { p.Fallbacks = list() })},
	}
	b.ReportAllocs()
	for b.Loop() {
		m := Merge(layers...)
		if !m.Fallbacks.Set {
			b.Fatal("unset")
		}
	}
}
