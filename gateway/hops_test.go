package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/simulator/errorbodies"
)

// hopRoutes are routes of the per-hop tests, appended to the demo config.
const hopRoutes = `
# one target on each upstream the demo guardrail lets serve (its provider
# deny list keeps the Vercel upstream, which cannot express it, from every
# request): every hop carries its own upstream's key.
[[routes]]
model = "every-upstream"
limits = { retries = 3 }
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o-mini"
[[routes.targets]]
upstream = "anthropic"
model = "anthropic/claude-sonnet-4.5"

# the cheap model first, the dear one after it, on one upstream.
[[routes]]
model = "cheap-then-dear"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o-mini"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o"

# one target on the Anthropic upstream, which a chat request reaches by
# translation.
[[routes]]
model = "anthropic-only"
[[routes.targets]]
upstream = "anthropic"
model = "anthropic/claude-sonnet-4.5"

# a pool whose tail starts with a target the guardrail forbids.
[[routes]]
model = "tail-skips-forbidden"
strategy = "fastest"
targets = [{upstream = "market", model = "a/free-1"}]
then = { targets = [{upstream = "market", model = "x-ai/grok-4"}, {upstream = "openai", model = "openai/gpt-4o-mini"}], on = ["overflow"] }
`

func withHopRoutes() [2]string {
	return [2]string{"\n# The cheap model answers everything", hopRoutes + "\n# The cheap model answers everything"}
}

// TestEachHopCarriesItsUpstreamsKey: a request that fails over from one
// upstream to the next sends each attempt with the platform key of the
// upstream it goes to, never the previous hop's.
func TestEachHopCarriesItsUpstreamsKey(t *testing.T) {
	h := newHarness(t, withHopRoutes())
	resp, b := h.post(secretChat, chatBody("every-upstream", noChain), "X-Sim-Fault", "status=503;model=openai/gpt-4o,status=503;model=openai/gpt-4o-mini")
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Equal(t, 3, h.row(resp.Header.Get(gateway.HeaderRequestID)).Attempts)
	type cred struct{ host, auth, apiKey string }
	var got []cred
	for _, s := range h.sent.take() {
		host := ""
		for _, up := range []string{"openrouter", "openai", "anthropic"} {
			if strings.Contains(s.URL, "/"+up+"/") {
				host = up
				break
			}
		}
		got = append(got, cred{host, s.Auth, s.APIKey})
	}
	require.Equal(t, []cred{
		{"openrouter", "Bearer " + platformKeys["OPENROUTER_API_KEY"], ""},
		{"openai", "Bearer " + platformKeys["OPENAI_API_KEY"], ""},
		{"anthropic", "", platformKeys["ANTHROPIC_API_KEY"]},
	}, got)
}

// completionCap is the completion cap an OpenAI-connector request carries.
func completionCap(t *testing.T, body []byte) int {
	t.Helper()
	var b struct {
		MaxTokens int `json:"max_completion_tokens"`
	}
	require.NoError(t, json.Unmarshal(body, &b))
	return b.MaxTokens
}

// TestHopsRecomputeTheirCap: a metered hop's completion cap is priced at
// its own model: 0.0004 USD pays ~666 tokens of gpt-4o-mini (0.6 USD per
// million) but only ~40 of gpt-4o (10), so the fallback hop is capped anew.
// A safety-net hop is metered where the caller's own key was not: the
// caller-key attempt goes as asked, the platform-key hop capped.
func TestHopsRecomputeTheirCap(t *testing.T) {
	t.Run("fallback hop", func(t *testing.T) {
		h := newHarness(t, batchKey("monthly_budget_usd = 0.0004\n"), withHopRoutes())
		resp, b := h.post(secretBatch, chatBody("cheap-then-dear", `,"max_tokens":4000`), "X-Sim-Fault", "status=503;model=openai/gpt-4o-mini")
		require.Equal(t, 200, resp.StatusCode, string(b))
		sent := h.sent.take()
		require.Len(t, sent, 2)
		first, second := completionCap(t, sent[0].Body), completionCap(t, sent[1].Body)
		require.Greater(t, first, 600)
		require.Less(t, first, 700)
		require.Greater(t, second, 30)
		require.LessOrEqual(t, second, 40, "the gpt-4o hop is capped at gpt-4o's price, not the first hop's")
	})
	t.Run("safety-net hop", func(t *testing.T) {
		t.Setenv("BATCH_OPENAI_KEY", callerSecret)
		h := newHarness(t, batchKey("safety_net = true\nplan = \"pro\"\nmonthly_budget_usd = 0.0004\n[keys.byok]\nopenai_env = \"BATCH_OPENAI_KEY\"\n"))
		resp, b := h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"max_tokens":4000`), "X-Sim-Fault", "status=503;times=1")
		require.Equal(t, 200, resp.StatusCode, string(b))
		require.Equal(t, gateway.SwitchSafetyNet, h.row(resp.Header.Get(gateway.HeaderRequestID)).RoutingSwitchReason)
		sent := h.sent.take()
		require.Len(t, sent, 2)
		require.Equal(t, "Bearer "+callerSecret, sent[0].Auth)
		require.Equal(t, 4000, completionCap(t, sent[0].Body), "the caller's own key is not metered: sent as asked")
		require.Equal(t, "Bearer "+platformKeys["OPENAI_API_KEY"], sent[1].Auth)
		capped := completionCap(t, sent[1].Body)
		require.Greater(t, capped, 600)
		require.Less(t, capped, 700)
	})
}

// TestTailTargetsAreOrdinary: a tail target the request may not be sent to
// (here one the guardrail forbids) is skipped, never dialled, as a member
// would be; the next tail target serves.
func TestTailTargetsAreOrdinary(t *testing.T) {
	h := newHarness(t, withHopRoutes())
	resp, b := h.post(secretChat, chatBody("tail-skips-forbidden", noChain), "X-Sim-Fault", "error=openrouter/context_length_exceeded;model=a/free-1")
	require.Equal(t, 200, resp.StatusCode, string(b))
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "openai/gpt-4o-mini", row.ServedModel)
	require.Equal(t, 2, row.Attempts)
	require.Equal(t, "overflow", row.FallbackReason)
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Model: "x-ai/grok-4"}))
}

// TestFilteredAnswerIsAnAnswer: a 200 whose finish_reason is content_filter
// is an answer, not a refusal: a route with a target taking over refusals
// forwards it after one attempt, without retry or takeover.
func TestFilteredAnswerIsAnAnswer(t *testing.T) {
	h := routeHarness(t)
	resp, b := h.post(secretChat, chatBody("assistant", noChain), "X-Sim-Fault", "filtered;model=meta-llama/llama-3.1-70b-instruct")
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"finish_reason":"content_filter"`)
	require.Empty(t, resp.Header.Get(gateway.HeaderFallback))
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 1, row.Attempts)
	require.Empty(t, row.FallbackReason)
	require.Equal(t, "meta-llama/llama-3.1-70b-instruct", row.ServedModel)
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindAnthropic}), "the refusal target is not dialled")
}

// TestClientErrorInTheCallersShape: a client error is final and reaches a
// chat caller with its meaning unchanged (status, message, type, code): byte
// for byte from an upstream that speaks chat completions, retold in the
// chat shape from one that answered in the Messages API.
func TestClientErrorInTheCallersShape(t *testing.T) {
	recs, err := errorbodies.Load()
	require.NoError(t, err)
	h := newHarness(t, withHopRoutes())
	for _, tc := range []struct {
		model, fault string
		native       bool
	}{
		{"anthropic-only", "anthropic/invalid_request_error", false},
		{"anthropic-only", "anthropic/permission_error", false},
		{"openai/gpt-4o", "openai/invalid_request", true}, // k-chat's upstream is the marketplace
	} {
		t.Run(tc.fault, func(t *testing.T) {
			rec := recs[tc.fault]
			resp, b := h.post(secretChat, chatBody(tc.model, noChain), "X-Sim-Fault", "error="+tc.fault)
			require.Equal(t, rec.Status, resp.StatusCode, string(b))
			if tc.native {
				require.Equal(t, string(rec.Body), string(b), "a native upstream's error body is forwarded byte for byte")
				return
			}
			var in struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body, &in))
			var got struct {
				Error struct {
					Message string          `json:"message"`
					Type    string          `json:"type"`
					Code    json.RawMessage `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(b, &got))
			require.Equal(t, in.Error.Message, got.Error.Message)
			require.Equal(t, in.Error.Type, got.Error.Type)
			require.Equal(t, "null", string(got.Error.Code))
			require.NotContains(t, string(b), `"type":"error"`, "not the Messages API's envelope")
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
}
