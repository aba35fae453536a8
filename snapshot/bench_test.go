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
	ctx := context.Background()
	for _, tc := range []struct{ name, key, upstream, model string }{
		{"market", "k-chain", "market", "openai/gpt-4o"}, {"edge", "k-chain", "edge", "openai/gpt-4o"},
		{"openai", "k-chain", "openai", "openai/gpt-4o"}, {"anthropic", "k-chain", "anthropic", "anthropic/claude-sonnet-4.5"},
		// With a data policy set: native on the marketplaces, reduced to an
		// allow-list on the one without a knob for it, decided locally on
		// a direct upstream by its declared agreement; a chain entry no
		// endpoint of which satisfies it is dropped.
		{"data/market", "k-zdrchain", "market", "openai/gpt-4o"}, {"data/edge", "k-zdrchain", "edge", "openai/gpt-4o"},
		{"data/edge-allow-list", "k-quant", "edge", "meta-llama/llama-3.1-70b-instruct"}, {"data/openai", "k-zdrchain", "openai", "openai/gpt-4o"},
	} {
		up := tc.upstream
		key := snap.Config.KeyByID(tc.key)
		raw := []byte(`{"model":"` + tc.model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident report in three bullet points."}],"temperature":0.2,"max_tokens":256}`)
		req, perr := request.Parse(raw)
		if perr != nil {
			b.Fatal(perr)
		}
		if _, err := snap.Decision(ctx, key.Principal()); err != nil {
			b.Fatal(err) // warms the decision cache
		}
		b.Run(tc.name, func(b *testing.B) {
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
