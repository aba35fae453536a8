package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// TestDataPolicyEndToEnd: zero_retention written once at the org rung binds
// every request, on every upstream, and the rows prove it. The simulator
// enforces the knob it is sent, serving only endpoints its listing marks as
// retaining nothing (the demo catalog's facts), so a served row shows the
// restriction reached the upstream, not only that it was written.
func TestDataPolicyEndToEnd(t *testing.T) {
	h := newHarnessPrep(t, func(dir string) {
		p := filepath.Join(dir, "profiles", "org.toml")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		// The org's deny list goes: the edge upstream cannot express one,
		// and this test is about the data policy alone.
		org := strings.Replace(string(b), "denied = [\"deepinfra/fp4\"]\n", "", 1)
		require.NoError(t, os.WriteFile(p, []byte(org+"\n[data]\nzero_retention = true\n"), 0o644))
		g := filepath.Join(dir, "guardrails", "org.rego")
		rego, err := os.ReadFile(g)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(g, []byte(strings.Replace(string(rego), `deny_providers contains "deepinfra/fp4"`, "", 1)), 0o644))
	})
	sonnet := chatBody("anthropic/claude-sonnet-4.5", "")

	for _, tc := range []struct {
		name, secret, body string
		// upstream is the upstream asked; served the provider that must
		// serve (the only zero-retention endpoint there).
		upstream, served, via string
		// knob is a member the native body must carry.
		knob string
	}{
		{"marketplace knob (OpenRouter provider.zdr)", secretChat, sonnet, "market", "amazon-bedrock", "zero_retention=native", `"zdr":true`},
		{"marketplace knob (Vercel zeroDataRetention)", secretFinance, sonnet, "edge", "bedrock", "zero_retention=native", `"zeroDataRetention":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.sent.take()
			resp, body := h.post(tc.secret, tc.body)
			require.Equal(t, 200, resp.StatusCode, string(body))
			sent := h.sent.take()
			require.NotEmpty(t, sent)
			require.Contains(t, string(sent[len(sent)-1].Body), tc.knob)
			row := h.row(resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, tc.upstream, row.Upstream)
			require.Equal(t, "zero_retention", row.DataPolicy)
			require.Equal(t, tc.via, row.DataPolicyVia)
			require.Contains(t, row.ServedProvider, tc.served, "only the zero-retention endpoint may serve")
			// The team's chain (llama, then the org's gpt-4o-mini) has no
			// endpoint known to retain nothing: dropped before anything is
			// forwarded.
			require.Empty(t, row.Chain)
		})
	}

	// Only a simulated endpoint the listing marks retains nothing: the call
	// log names no other provider for those requests.
	for _, c := range h.sim.Calls() {
		if c.Model == "anthropic/claude-sonnet-4.5" && c.Status == 200 {
			require.Contains(t, c.Provider, "bedrock", "a retaining endpoint served: %+v", c)
		}
	}

	// A direct upstream without a declared agreement is decided locally
	// from the catalog (OpenAI's own endpoint retains): refused, naming the
	// field and the rung.
	resp, body := h.post(secretBatch, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 422, resp.StatusCode, string(body))
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "data_policy_unsatisfiable", e.Error.Code)
	require.Contains(t, e.Error.Message, "zero_retention (set by org (profiles/org.toml))")
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "data_policy_unsatisfiable", row.RefusedCode)
	require.Equal(t, "zero_retention", row.DataPolicy)
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindOpenAI}), "nothing was sent")

	// The account's agreement, declared on the upstream, meets it: decided
	// locally, and recorded so.
	// The upstream declares where it processes too (the provider's EU data
	// residency): the row records it as the served region.
	editConfig(t, h.dir, [2]string{"name = \"openai\"\nconnector = \"openai\"\n", "name = \"openai\"\nconnector = \"openai\"\nzero_retention = true\nregion = \"eu\"\n"})
	require.Empty(t, h.srv.Reload())
	resp, body = h.post(secretBatch, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, resp.StatusCode, string(body))
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "zero_retention=local", row.DataPolicyVia)
	require.Equal(t, "eu", row.ServedRegion)

	// regions in the request rung: held locally against the declared
	// region, recorded beside the others; a geography it does not process
	// in is refused before anything is sent, naming the field and the rung.
	withRegions := func(geo string) string {
		return `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Hi"}],"routing":{"data":{"regions":["` + geo + `"]}}}`
	}
	resp, body = h.post(secretBatch, withRegions("eu"))
	require.Equal(t, 200, resp.StatusCode, string(body))
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "zero_retention,regions", row.DataPolicy)
	require.Equal(t, "zero_retention=local,regions=local", row.DataPolicyVia)
	require.Equal(t, "eu", row.ServedRegion)
	sent := h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindOpenAI})
	resp, body = h.post(secretBatch, withRegions("us"))
	require.Equal(t, 422, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "data_policy_unsatisfiable", e.Error.Code)
	require.Contains(t, e.Error.Message, `regions (set by request): upstream "openai" serves only provider "openai" and is decided here: it processes in region "eu" (geography "eu"), not one of [us]`)
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "zero_retention,regions", row.DataPolicy)
	require.Empty(t, row.ServedRegion, "nothing served")
	require.Equal(t, sent, h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindOpenAI}), "nothing was sent")

	// A request rung may tighten, never loosen: 400, located at the member.
	resp, body = h.post(secretChat, `{"model":"anthropic/claude-sonnet-4.5","messages":[{"role":"user","content":"Hi"}],"routing":{"data":{"zero_retention":false}}}`)
	require.Equal(t, 400, resp.StatusCode, string(body))
	var bad struct {
		Error struct {
			Code, Param string
			Details     []struct{ Pointer, Code string }
		}
	}
	require.NoError(t, json.Unmarshal(body, &bad))
	require.Equal(t, "invalid_routing", bad.Error.Code)
	require.Equal(t, "/routing/data/zero_retention", bad.Error.Param)
	require.Equal(t, "restriction_loosened", bad.Error.Details[0].Code)

	// Nor may a file: a team profile loosening the org's is a located
	// error, and the reload keeps the last good configuration.
	before := h.srv.Snapshot().Revision
	p := filepath.Join(h.dir, "profiles", "teams", "ml.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(b, "\n[data]\nzero_retention = false\n"...), 0o644))
	diags := h.srv.Reload()
	require.NotEmpty(t, diags)
	require.Equal(t, "restriction_loosened", diags[0].Code)
	require.Equal(t, "profiles/teams/ml.toml", diags[0].File)
	require.Positive(t, diags[0].Line)
	require.True(t, strings.Contains(diags[0].Message, "org"), diags[0].Message)
	require.Equal(t, before, h.srv.Snapshot().Revision, "the last good configuration keeps serving")
}
