package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// testRoutes are appended to the demo config for the failover tests.
const testRoutes = `
# main serves everything; burst only takes over throttling and timeouts.
[[routes]]
model = "burst"
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o-mini"
takes_over = ["throttled", "timeout"]

# the premium target answers only refusals that named hate.
[[routes]]
model = "hate-only"
[[routes.targets]]
upstream = "market"
model = "meta-llama/llama-3.1-70b-instruct"
[[routes.targets]]
upstream = "anthropic"
model = "anthropic/claude-sonnet-4.5"
takes_over = ["refusal:hate"]

# three ordinary targets, one retry; the alias is written in mixed case and
# still matches requests (and /v1/models) case-insensitively.
[[routes]]
model = "Budgeted"
limits = { retries = 1 }
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o-mini"
[[routes.targets]]
upstream = "market"
model = "mistralai/mistral-large"

# a forbidden first target is skipped, not failed over to.
[[routes]]
model = "skips-forbidden"
[[routes.targets]]
upstream = "market"
model = "x-ai/grok-4"
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o-mini"
`

func routeHarness(t *testing.T) *harness {
	return newHarness(t,
		[2]string{"max_body_bytes = 65536\n", "max_body_bytes = 1048576\n"},
		[2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"},
		[2]string{"\n# The cheap model answers everything", testRoutes + "\n# The cheap model answers everything"})
}

// noChain keeps the marketplace from walking the profile's model chain, so
// failures reach the gateway's own failover.
const noChain = `,"routing":{"fallbacks":[]}`

type routeCase struct {
	name     string
	model    string
	body     string // extra members
	fault    string
	status   int
	served   string
	attempts int
	reason   string // fallback_reason
	switched string
	header   bool // X-Sluice-Fallback
	calls    map[string]int
}

func (h *harness) runRouteCase(t *testing.T, tc routeCase) {
	t.Helper()
	h.sim.Reset()
	var hdr []string
	if tc.fault != "" {
		hdr = []string{"X-Sim-Fault", tc.fault}
	}
	resp, body := h.post(secretChat, chatBody(tc.model, noChain+tc.body), hdr...)
	require.Equal(t, tc.status, resp.StatusCode, string(body))
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, tc.attempts, row.Attempts, "attempts")
	require.Equal(t, tc.reason, row.FallbackReason, "fallback_reason")
	require.Equal(t, tc.switched, row.RoutingSwitchReason, "routing_switch_reason")
	require.Equal(t, tc.model, row.Route)
	if tc.served != "" {
		require.Equal(t, tc.served, row.ServedModel)
	}
	if tc.header {
		require.Equal(t, "true", resp.Header.Get(gateway.HeaderFallback))
	} else {
		require.Empty(t, resp.Header.Get(gateway.HeaderFallback))
	}
	for m, n := range tc.calls {
		require.Equal(t, n, h.sim.CallCount(simulator.CallFilter{Model: m}), "calls to %s", m)
	}
}

// TestRestrictedTargets follows the reference's fixed examples: a restricted
// target is never dialled first, takes over only the failures it names, and
// a refusal never goes to an ordinary target.
func TestRestrictedTargets(t *testing.T) {
	h := routeHarness(t)
	for _, tc := range []routeCase{
		{name: "ordinary target serves everything", model: "assistant", status: 200, served: "meta-llama/llama-3.1-70b-instruct", attempts: 1,
			calls: map[string]int{"anthropic/claude-sonnet-4.5": 0}},
		{name: "refusal taken over by the premium target", model: "assistant",
			fault: "error=openai/content_policy_violation;model=meta-llama/llama-3.1-70b-instruct", status: 200,
			served: "anthropic/claude-sonnet-4.5", attempts: 2, reason: "refusal:content_policy_violation", switched: "target_fallback", header: true},
		{name: "throttling is not the premium target's to take", model: "assistant",
			fault: "status=429;model=meta-llama/llama-3.1-70b-instruct", status: 429, attempts: 1,
			calls: map[string]int{"anthropic/claude-sonnet-4.5": 0}},
		{name: "burst takes over throttling", model: "burst", fault: "status=429;model=openai/gpt-4o", status: 200,
			served: "openai/gpt-4o-mini", attempts: 2, reason: "throttled", switched: "target_fallback", header: true},
		{name: "burst never takes a 500", model: "burst", fault: "status=500;model=openai/gpt-4o", status: 500, attempts: 1,
			calls: map[string]int{"openai/gpt-4o-mini": 0}},
		{name: "refusal naming hate taken over", model: "hate-only",
			fault: "error=azure/content_filter;model=meta-llama/llama-3.1-70b-instruct", status: 200,
			served: "anthropic/claude-sonnet-4.5", attempts: 2, reason: "refusal:hate", switched: "target_fallback", header: true},
		{name: "refusal not naming hate forwarded unchanged", model: "hate-only",
			fault: "error=openai/content_policy_violation;model=meta-llama/llama-3.1-70b-instruct", status: 400, attempts: 1,
			calls: map[string]int{"anthropic/claude-sonnet-4.5": 0}},
		{name: "client error is final", model: "budgeted", fault: "error=openai/invalid_request;model=openai/gpt-4o", status: 400, attempts: 1,
			calls: map[string]int{"openai/gpt-4o-mini": 0}},
		{name: "retry budget bounds attempts", model: "budgeted", fault: "status=503", status: 503, attempts: 2, reason: "server_error",
			calls: map[string]int{"mistralai/mistral-large": 0}},
		{name: "retryable failure moves to the next ordinary target", model: "budgeted", fault: "status=502;model=openai/gpt-4o", status: 200,
			served: "openai/gpt-4o-mini", attempts: 2, reason: "server_error", switched: "target_fallback", header: true},
		{name: "guardrail-forbidden target is skipped", model: "skips-forbidden", status: 200, served: "openai/gpt-4o-mini", attempts: 1,
			calls: map[string]int{"x-ai/grok-4": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) { h.runRouteCase(t, tc) })
	}
	// A route of one ordinary and one restricted target sends every request
	// to the ordinary one.
	h.sim.Reset()
	for i := 0; i < 20; i++ {
		resp, _ := h.post(secretChat, chatBody("assistant", noChain))
		require.Equal(t, 200, resp.StatusCode)
	}
	require.Equal(t, 20, h.sim.CallCount(simulator.CallFilter{Model: "meta-llama/llama-3.1-70b-instruct"}))
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindAnthropic}))
}

// TestPoolWithGuardedTail: members fail over among themselves; only the last
// member's failure of a listed class reaches the tail; an oversized prompt
// goes straight to the tail.
func TestPoolWithGuardedTail(t *testing.T) {
	h := routeHarness(t)
	big := `,"messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 7000) + `"}]`
	for _, tc := range []routeCase{
		{name: "a member answers", model: "free-pool", status: 200, attempts: 1,
			calls: map[string]int{"openai/gpt-4o": 0}},
		{name: "members fail over among themselves", model: "free-pool", fault: "status=500;times=1", status: 200,
			attempts: 2, reason: "server_error", header: true, switched: "target_fallback",
			calls: map[string]int{"openai/gpt-4o": 0}},
		{name: "last member's server error does not reach the paid tail", model: "free-pool", fault: "status=500", status: 500, attempts: 2,
			reason: "server_error", calls: map[string]int{"openai/gpt-4o": 0}},
		{name: "last member's overflow reaches the tail", model: "free-pool",
			fault: "error=openrouter/context_length_exceeded;model=a/free-1,error=openrouter/context_length_exceeded;model=b/free-2", status: 200,
			served: "openai/gpt-4o", attempts: 3, reason: "overflow", switched: "target_fallback", header: true},
		{name: "oversized prompt goes straight to the tail", model: "free-pool", body: big, status: 200,
			served: "openai/gpt-4o", attempts: 1, reason: "overflow", header: true,
			calls: map[string]int{"a/free-1": 0, "b/free-2": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body != "" {
				// The big prompt replaces the messages: build the body by hand.
				h.sim.Reset()
				resp, b := h.post(secretChat, `{"model":"free-pool"`+tc.body+noChain+`}`)
				require.Equal(t, tc.status, resp.StatusCode, string(b))
				row := h.row(resp.Header.Get(gateway.HeaderRequestID))
				require.Equal(t, tc.served, row.ServedModel)
				require.Equal(t, tc.attempts, row.Attempts)
				require.Equal(t, tc.reason, row.FallbackReason)
				require.Equal(t, "openai/gpt-4o", row.DecidedModel)
				require.Equal(t, "true", resp.Header.Get(gateway.HeaderFallback))
				for m, n := range tc.calls {
					require.Equal(t, n, h.sim.CallCount(simulator.CallFilter{Model: m}), m)
				}
				return
			}
			h.runRouteCase(t, tc)
		})
	}
}

// TestColdMembersTriedBeforeTail: when every member is merely cold, they
// are tried again before the tail, so health skipping never becomes paid
// spend.
func TestColdMembersTriedBeforeTail(t *testing.T) {
	h := routeHarness(t)
	for i := 0; i < 4; i++ { // make both members cold
		resp, _ := h.post(secretChat, chatBody("free-pool", noChain), "X-Sim-Fault", "status=503")
		require.Equal(t, 503, resp.StatusCode)
	}
	h.sim.Reset()
	resp, b := h.post(secretChat, chatBody("free-pool", noChain))
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Model: "openai/gpt-4o"}), "the paid tail is not used")
	require.Equal(t, 1, h.sim.CallCount(simulator.CallFilter{Kind: simulator.KindOpenRouter}))
}

// TestStreamingPointOfNoReturn: before the first chunk a stream fails over
// like any request; after it, there is no switch.
func TestStreamingPointOfNoReturn(t *testing.T) {
	h := routeHarness(t)
	stream := `,"stream":true` + noChain
	resp, raw := h.post(secretChat, chatBody("burst", stream), "X-Sim-Fault", "status=429;model=openai/gpt-4o")
	require.Equal(t, 200, resp.StatusCode, string(raw))
	require.True(t, strings.HasSuffix(string(raw), "data: [DONE]\n\n"))
	require.Empty(t, resp.Header.Get(gateway.HeaderFallback), "streams do not carry the fallback header")
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 2, row.Attempts)
	require.Equal(t, "throttled", row.FallbackReason)
	require.Equal(t, "openai/gpt-4o-mini", row.ServedModel)

	h.sim.Reset()
	resp, raw = h.post(secretChat, chatBody("burst", stream), "X-Sim-Fault", "cut_after=2;model=openai/gpt-4o")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(raw), "upstream_stream_cut")
	require.NotContains(t, string(raw), "[DONE]")
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Model: "openai/gpt-4o-mini"}), "no switch after the first chunk")
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 1, row.Attempts)
	require.Equal(t, 502, row.Status)

	// An error as the stream's first event comes before anything reached
	// the caller: it is an ordinary failure of its class (here the
	// upstream's 502, a server error), failed over where the route allows.
	h.sim.Reset()
	budgeted := `,"stream":true`
	resp, raw = h.post(secretChat, chatBody("budgeted", budgeted), "X-Sim-Fault", "stream_error_after=0;model=openai/gpt-4o")
	require.Equal(t, 200, resp.StatusCode, string(raw))
	require.True(t, strings.HasSuffix(string(raw), "data: [DONE]\n\n"), string(raw))
	require.NotContains(t, string(raw), "simulated fault", "the failed first event never reaches the caller")
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 2, row.Attempts)
	require.Equal(t, "openai/gpt-4o-mini", row.ServedModel)
	require.Equal(t, 200, row.Status)
	require.Equal(t, "server_error", row.FallbackReason)
	// burst's second target takes over only throttling and timeouts: the
	// caller gets the gateway's error, before any chunk.
	h.sim.Reset()
	resp, raw = h.post(secretChat, chatBody("burst", stream), "X-Sim-Fault", "stream_error_after=0;model=openai/gpt-4o")
	require.Equal(t, 502, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `"code":"upstream_unavailable"`)
	require.Contains(t, string(raw), "failed before its first token")
	require.Zero(t, h.sim.CallCount(simulator.CallFilter{Model: "openai/gpt-4o-mini"}))
}

// TestRouteAliasesListed: route aliases are listed in /v1/models, and an
// unknown alias is just an unknown model.
func TestRouteAliasesListed(t *testing.T) {
	h := routeHarness(t)
	_, b := h.get("/v1/models", secretChat)
	var l struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b, &l))
	aliases := map[string]bool{}
	for _, d := range l.Data {
		if d.OwnedBy == "sluice-route" {
			aliases[d.ID] = true
		}
	}
	require.Equal(t, map[string]bool{"assistant": true, "free-pool": true, "burst": true, "hate-only": true, "budgeted": true, "skips-forbidden": true, "claude-on-bedrock": true, "llama-on-bedrock": true}, aliases)
	resp, _ := h.post(secretChat, chatBody("no-such-route", ""))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an unknown name is neither a route nor a catalog model: model_not_in_catalog")
}

// TestClientErrorsLeaveHealthAlone: a client error is the request's doing,
// so it neither clears a target's run of health failures nor counts in it:
// two 503s, a 400, one more 503, and the target is cold — the next request
// skips it.
func TestClientErrorsLeaveHealthAlone(t *testing.T) {
	h := routeHarness(t)
	gpt := simulator.CallFilter{Model: "openai/gpt-4o"}
	send := func(i int, fault string, status int) {
		t.Helper()
		var hdr []string
		if fault != "" {
			hdr = []string{"X-Sim-Fault", fault + ";model=openai/gpt-4o"}
		}
		resp, raw := h.post(secretChat, chatBody("budgeted", fmt.Sprintf(`,"user":"h%d"`, i)+noChain), hdr...)
		require.Equal(t, status, resp.StatusCode, string(raw))
	}
	send(1, "status=503", 200)                   // failed over to gpt-4o-mini
	send(2, "status=503", 200)                   // two health failures in a row
	send(3, "error=openai/invalid_request", 400) // final, and no verdict on health
	send(4, "status=503", 200)                   // the third health failure: cold
	h.sim.Reset()
	send(5, "", 200)
	require.Zero(t, h.sim.CallCount(gpt), "a cold target is skipped while a warm one remains")
}
