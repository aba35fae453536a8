package snapshot

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicegw/sluice/gateway/request"
)

// BenchmarkCompile measures decide + check + translate for one request with
// a cached guardrail decision, per connector (the hot path after parsing).
func BenchmarkCompile(b *testing.B) {
	snap, diags := Load(filepath.Join(compileDir, "config"))
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	key := snap.Config.KeyByID("k-chain")
	ctx := context.Background()
	for _, tc := range []struct{ upstream, model string }{
		{"market", "openai/gpt-4o"}, {"edge", "openai/gpt-4o"}, {"openai", "openai/gpt-4o"}, {"anthropic", "anthropic/claude-sonnet-4.5"},
	} {
		up := tc.upstream
		raw := []byte(`{"model":"` + tc.model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident report in three bullet points."}],"temperature":0.2,"max_tokens":256}`)
		req, perr := request.Parse(raw)
		if perr != nil {
			b.Fatal(perr)
		}
		if _, err := snap.Decision(ctx, key.Principal()); err != nil {
			b.Fatal(err) // warms the decision cache
		}
		b.Run(up, func(b *testing.B) {
			b.ReportAllocs()
			// One memo, initialised afresh for each request: the gateway's
			// lives inside the request's turn, allocated with it.
			var m Memo
			for b.Loop() {
				d, err := snap.Decision(ctx, key.Principal())
				if err != nil {
					b.Fatal(err)
				}
				snap.InitMemo(&m, key, d, req.Routing, Pin{}, req.Body)
				c, err := m.Compile(up, req.Model)
				if err != nil || c.Native == nil {
					b.Fatalf("%v %+v", err, c.Refused())
				}
			}
		})
	}
}
