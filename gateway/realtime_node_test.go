//go:build unix

package gateway_test

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// TestRealtimeNodeClients: the official `openai` npm client's realtime
// WebSocket client and the Agents SDK's realtime session (text only) hold a
// session through sluice to the simulator, which replays a recorded
// session; each gets the recorded answer, and the session's row is one
// realtime row, metered.
func TestRealtimeNodeClients(t *testing.T) {
	sdk := nodeSDK(t)
	for _, pkg := range []string{"@openai/agents-realtime", "ws"} {
		_, err := os.Stat(filepath.Join(sdk, "node_modules", pkg, "package.json"))
		require.NoError(t, err, "%s under %s", pkg, sdk)
	}
	const question = "My name is Alice and my favorite color is teal."
	const answer = "Your name is Alice, and your favorite color is teal!"
	tests := []struct {
		client string
		model  string
	}{
		{"openai", "gpt-realtime"},        // OpenAI's own id
		{"agents", "openai/gpt-realtime"}, // the catalog slug
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			h := newHarness(t)
			// The openai client always dials wss: the gateway over TLS,
			// its certificate trusted through NODE_EXTRA_CA_CERTS.
			tls := httptest.NewUnstartedServer(h.srv.Handler())
			tls.StartTLS()
			t.Cleanup(tls.Close)
			ca := filepath.Join(t.TempDir(), "ca.pem")
			require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw}), 0o600))
			spec := map[string]any{"client": tc.client, "apiKey": secretBatch, "model": tc.model, "question": question,
				"baseURL": tls.URL + "/v1", "url": "ws" + strings.TrimPrefix(h.ts.URL, "http") + "/v1/realtime?model=" + tc.model}
			arg, err := json.Marshal(spec)
			require.NoError(t, err)
			cmd := exec.Command("node", filepath.Join(sdkDir, "realtime.cjs"), string(arg))
			cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(sdk, "node_modules"), "NODE_EXTRA_CA_CERTS="+ca)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			require.NoError(t, err, "node: %s", stderr.String())
			var got struct {
				Text   string   `json:"text"`
				Events []string `json:"events"`
				Error  any      `json:"error"`
			}
			require.NoError(t, json.Unmarshal(b, &got), "driver output: %s\n%s", b, stderr.String())
			require.Nil(t, got.Error, "%s", b)
			require.Equal(t, answer, got.Text)
			require.Contains(t, got.Events, "session.created")
			rows := h.rows(1)
			r := rows[0]
			require.Equal(t, "realtime", r.API)
			require.Equal(t, 101, r.Status)
			require.Equal(t, "openai/gpt-realtime", r.ServedModel)
			require.Equal(t, 1, r.Responses)
			require.Equal(t, int64(149), r.PromptTokens)
			require.Equal(t, gateway.ClosedByCaller, r.ClosedBy)
			require.Greater(t, r.CostUSD, 0.0)
		})
	}
}
