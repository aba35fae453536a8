package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

type errBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// TestChatOutcomes drives one request per outcome through the real HTTP path
// and checks the answer, the headers, the recorded row and whether any
// upstream was contacted.
func TestChatOutcomes(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name      string
		secret    string
		body      string
		headers   []string
		status    int
		code      string // sluice error code, for refusals
		served    string // served model
		provider  string
		degraded  []string
		switched  string
		simCalls  int // -1: don't check
		rowRefuse string
	}{
		// The ml team's preferred order makes the project's ranking inert on
		// the marketplace, which sorts only when no order is given.
		{name: "plain", secret: secretChat, body: chatBody("openai/gpt-4o", ""), status: 200,
			served: "openai/gpt-4o", provider: "openai", degraded: []string{"ranking"}, simCalls: 1},
		{name: "mixed-case slug folds", secret: secretChat, body: chatBody("OpenAI/GPT-4o", ""), status: 200,
			served: "openai/gpt-4o", provider: "openai", degraded: []string{"ranking"}, simCalls: 1},
		{name: "degraded chain on a direct upstream", secret: secretBatch, body: chatBody("openai/gpt-4o-mini", ""), status: 200,
			served: "openai/gpt-4o-mini", provider: "openai", degraded: []string{"chain"}, simCalls: 1},
		{name: "anthropic direct translation", secret: secretBatch, body: chatBody("openai/gpt-4o", `,"routing":{"fallbacks":[]}`), status: 200,
			served: "openai/gpt-4o", provider: "openai", degraded: []string{}, simCalls: 1},
		{name: "restriction the upstream cannot express is refused", secret: secretFinance, body: chatBody("anthropic/claude-sonnet-4.5", ""),
			status: 422, code: "provider_restriction_inexpressible", simCalls: 0},
		{name: "guardrail forbids the model", secret: secretChat, body: chatBody("x-ai/grok-4", ""),
			status: 403, code: "model_forbidden", simCalls: 0},
		{name: "a wildcard in a request is a literal", secret: secretChat, body: chatBody("openai/*", ""),
			status: 404, code: "model_not_in_catalog", simCalls: 0},
		{name: "raw upstream routing field", secret: secretChat, body: chatBody("openai/gpt-4o", `,"provider":{"only":["together"]}`),
			status: 400, code: "raw_routing_field", simCalls: 0},
		{name: "invalid routing object", secret: secretChat, body: chatBody("openai/gpt-4o", `,"routing":{"providers":{"rank_by":"vibes"}}`),
			status: 400, code: "invalid_routing", simCalls: 0},
		{name: "invalid JSON", secret: secretChat, body: `{"model":`, status: 400, code: "invalid_json", simCalls: 0},
		{name: "chain fires", secret: secretChat, body: chatBody("openai/gpt-4o", `,"user":"chain"`), headers: []string{"X-Sim-Fault", "status=503;model=openai/gpt-4o"},
			status: 200, served: "anthropic/claude-sonnet-4.5", provider: "anthropic", degraded: []string{"ranking"}, switched: "chain", simCalls: -1},
		{name: "content filter run by the upstream", secret: secretResearch, body: chatBody("openai/gpt-4o", ""), status: 200,
			served: "openai/gpt-4o", degraded: []string{}, simCalls: 1},
		{name: "upstream error forwarded unchanged", secret: secretBatch, body: chatBody("openai/gpt-4o", ""),
			headers: []string{"X-Sim-Fault", "error=openai/rate_limit_exceeded"}, status: 429, simCalls: 1},
		{name: "first-byte timeout", secret: secretBatch, body: chatBody("openai/gpt-4o", ""),
			headers: []string{"X-Sim-Fault", "headers_then_nothing"}, status: 504, code: "upstream_timeout", simCalls: -1},
		{name: "garbage answer", secret: secretBatch, body: chatBody("openai/gpt-4o", ""),
			headers: []string{"X-Sim-Fault", "garbage"}, status: 502, code: "upstream_bad_response", simCalls: 1},
		{name: "a direct upstream refuses a model it does not serve", secret: secretBatch, body: chatBody("anthropic/claude-haiku-4.5", `,"n":2`),
			status: 404, code: "unknown_model", simCalls: 0},
		// Last: the simulator records this call only once it has finished
		// writing 10 MB the gateway stopped reading, which may be after the
		// next case has reset the counts.
		{name: "huge error body is not relayed", secret: secretBatch, body: chatBody("openai/gpt-4o", ""),
			headers: []string{"X-Sim-Fault", "huge_error;status=500"}, status: 502, code: "upstream_bad_response", simCalls: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.sim.Reset()
			resp, body := h.post(tc.secret, tc.body, tc.headers...)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			rid := resp.Header.Get(gateway.HeaderRequestID)
			row := h.row(rid)
			require.Equal(t, tc.status, row.Status)
			require.Equal(t, h.srv.Snapshot().Revision, row.ConfigRevision, "the row names the configuration that served it")
			if tc.code != "" {
				var e errBody
				require.NoError(t, json.Unmarshal(body, &e), string(body))
				require.Equal(t, tc.code, e.Error.Code)
				require.NotEmpty(t, e.Error.Message)
				require.NotEmpty(t, e.Error.Type)
			}
			if tc.status == 403 || tc.status == 422 || (tc.status == 400 && tc.code != "") || tc.status == 404 {
				require.Equal(t, tc.code, row.RefusedCode)
			}
			if tc.served != "" {
				require.Equal(t, tc.served, resp.Header.Get(gateway.HeaderServedModel))
				require.Equal(t, tc.served, row.ServedModel)
				var ans struct {
					Model   string `json:"model"`
					Choices []struct {
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
				}
				require.NoError(t, json.Unmarshal(body, &ans))
				require.NotEmpty(t, ans.Choices)
				require.NotContains(t, string(body), "openrouter_metadata", "upstream shapes never reach the caller")
			}
			if tc.provider != "" {
				require.Equal(t, tc.provider, row.ServedProvider)
			}
			if tc.degraded != nil {
				require.Equal(t, tc.degraded, row.RoutingDegraded)
				require.Equal(t, strings.Join(tc.degraded, ","), resp.Header.Get(gateway.HeaderDegraded))
			}
			require.Equal(t, tc.switched, row.RoutingSwitchReason)
			require.Equal(t, tc.switched != "", row.RepresentationBreak)
			// Only a routing object the gateway understood is a request rung.
			require.Equal(t, strings.Contains(tc.body, `"routing"`) && tc.code != "invalid_routing", row.RequestRouting, "request_routing")
			if tc.simCalls >= 0 {
				require.Equal(t, tc.simCalls, len(h.sim.Calls()), "upstream attempts")
			}
		})
	}
}

func TestUpstreamErrorBodyIsRelayedByteForByte(t *testing.T) {
	h := newHarness(t)
	rec := h.sim.ErrorBodies()["openai/content_policy_violation"]
	resp, body := h.post(secretBatch, chatBody("openai/gpt-4o", ""), "X-Sim-Fault", "error=openai/content_policy_violation")
	require.Equal(t, rec.Status, resp.StatusCode)
	require.JSONEq(t, string(rec.Body), string(body))
}

func TestUnauthenticated(t *testing.T) {
	h := newHarness(t)
	for _, secret := range []string{"", "sk-sluice-wrong", "Bearer"} {
		resp, body := h.post(secret, chatBody("openai/gpt-4o", ""))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		var e errBody
		require.NoError(t, json.Unmarshal(body, &e))
		require.Equal(t, "invalid_api_key", e.Error.Code)
	}
	require.Empty(t, h.sim.Calls())
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t)
	big := chatBody("openai/gpt-4o", `,"pad":"`+strings.Repeat("x", 70000)+`"`)
	resp, body := h.post(secretChat, big)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(body))
	require.Equal(t, "body_too_large", h.row(resp.Header.Get(gateway.HeaderRequestID)).RefusedCode)
	require.Empty(t, h.sim.Calls())
}

func TestUnknownFieldsPassThrough(t *testing.T) {
	h := newHarness(t)
	resp, body := h.post(secretChat, chatBody("openai/gpt-4o", `,"x_vendor":{"keep":[1,2]},"temperature":0.2`))
	require.Equal(t, 200, resp.StatusCode, string(body))
	calls := h.sim.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, simulator.KindOpenRouter, calls[0].Kind)
}

func TestSessionIDValidated(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		id     string
		status int
	}{
		{strings.Repeat("s", 200), http.StatusBadRequest},
		{"tab	here", http.StatusBadRequest},
		{"caf\u00e9", http.StatusBadRequest},
		{strings.Repeat("s", 128), http.StatusOK},
		{"user 42", http.StatusOK}, // printable ASCII includes the space
		{"~!@#$%^&*()_+", http.StatusOK},
	} {
		for _, name := range []string{"X-Session-Id", "x-claude-code-session-id", "session-id"} {
			resp, b := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"`+tc.id[:3]+`"`), name, tc.id)
			require.Equal(t, tc.status, resp.StatusCode, "%s: %q", name, tc.id)
			if tc.status == http.StatusBadRequest {
				require.Contains(t, string(b), name+" must be 1 to 128 printable ASCII characters", "the error names the header")
			}
		}
	}
}

// TestSessionHeadersOrder: the first of [sessions] headers a request
// carries names its session, as configured; a header not in the list names
// none.
func TestSessionHeadersOrder(t *testing.T) {
	for _, c := range []struct {
		name    string
		config  string // the [sessions] headers line; "" keeps the default
		headers []string
		key, id string
	}{
		{"default: X-Session-Id first", "", []string{"session-id", "codex-1", "X-Session-Id", "own-1"}, "X-Session-Id", "own-1"},
		{"default: claude code before codex", "", []string{"session-id", "codex-2", "X-Claude-Code-Session-Id", "cc-2"}, "x-claude-code-session-id", "cc-2"},
		{"default: an empty header is absent", "", []string{"X-Session-Id", "", "session-id", "codex-3"}, "session-id", "codex-3"},
		{"configured order", `headers = ["session-id", "X-Session-Id"]`, []string{"X-Session-Id", "own-4", "session-id", "codex-4"}, "session-id", "codex-4"},
		{"not in the list", `headers = ["X-Session-Id"]`, []string{"x-claude-code-session-id", "cc-5"}, "", ""},
		{"none read", `headers = []`, []string{"X-Session-Id", "own-6"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var edits [][2]string
			if c.config != "" {
				edits = append(edits, [2]string{"[store]\n", "[sessions]\n" + c.config + "\n\n[store]\n"})
			}
			h := newHarness(t, edits...)
			resp, b := h.post(secretChat, chatBody("openai/gpt-4o", ""), c.headers...)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			r := h.row(resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, c.id, r.SessionID)
			require.Equal(t, c.key, r.SessionKey)
		})
	}
}
