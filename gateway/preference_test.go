package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog"
)

// TestPreferenceVerdict: the row records the provider preference a request
// was sent with and whether the provider that served honoured it. The ml
// team prefers openai then azure on the marketplace; the simulator serves
// the first eligible endpoint of the order that is up.
func TestPreferenceVerdict(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, secret, body string
		headers            []string
		status             int
		provider           string
		preferred          []string
		verdict            string
		attempts           string // a substring of upstream_attempts; "" wants none
		refused            string // a substring of refused_message; "" wants none
		routing            string // routing_object
	}{
		{name: "the first preferred provider serves", secret: secretChat, body: chatBody("openai/gpt-4o", ""), status: 200,
			provider: "openai", preferred: []string{"openai", "azure"}, verdict: requestlog.VerdictFirstPreferred},
		{name: "the first is down, the second preferred serves", secret: secretChat, body: chatBody("openai/gpt-4o", `,"user":"second"`),
			headers: []string{"X-Sim-Fault", "status=503;provider=openai"}, status: 200,
			provider: "azure", preferred: []string{"openai", "azure"}, verdict: requestlog.VerdictOtherPreferred, attempts: "@OpenAI 503"},
		{name: "the only preferred provider is down, another serves", secret: secretChat,
			body:    chatBody("openai/gpt-4o", `,"routing":{"providers":{"preferred":["azure"]}}`),
			headers: []string{"X-Sim-Fault", "status=503;provider=azure"}, status: 200,
			provider: "openai", preferred: []string{"azure"}, verdict: requestlog.VerdictOutsidePreference, attempts: "@Azure 503",
			routing: `{"providers":{"preferred":["azure"]}}`},
		{name: "a chain switch keeps what the upstream said", secret: secretChat, body: chatBody("openai/gpt-4o", `,"user":"chain"`),
			headers: []string{"X-Sim-Fault", "status=503;model=openai/gpt-4o"}, status: 200,
			provider: "anthropic", preferred: []string{"openai", "azure"}, verdict: requestlog.VerdictOutsidePreference, attempts: "openai/gpt-4o@OpenAI 503"},
		{name: "a direct upstream has nothing to choose", secret: secretBatch, body: chatBody("openai/gpt-4o", ""), status: 200,
			provider: "openai", preferred: []string{"openai", "azure"}, verdict: requestlog.VerdictNotApplicable},
		{name: "a refusal keeps its message", secret: secretFinance, body: chatBody("anthropic/claude-sonnet-4.5", ""), status: 422,
			preferred: []string{}, verdict: requestlog.VerdictNotApplicable, refused: "cannot exclude providers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.post(tc.secret, tc.body, tc.headers...)
			require.Equal(t, tc.status, resp.StatusCode, string(b))
			row := h.row(resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, tc.provider, row.ServedProvider)
			require.Equal(t, tc.preferred, row.PreferencePreferred)
			require.Equal(t, tc.verdict, row.PreferenceVerdict)
			if tc.attempts == "" {
				require.Empty(t, row.UpstreamAttempts)
			} else {
				require.Contains(t, row.UpstreamAttempts, tc.attempts)
			}
			if tc.refused == "" {
				require.Empty(t, row.RefusedMessage)
			} else {
				require.Contains(t, row.RefusedMessage, tc.refused)
			}
			require.Equal(t, tc.routing, row.RoutingObject)
		})
	}
}
