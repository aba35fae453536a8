package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// logLines returns the JSON log lines with the message msg.
func (h *harness) logLines(msg string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(h.t, json.Unmarshal([]byte(l), &m), l)
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// logLine returns the one line with msg whose request_id is id.
func (h *harness) logLine(msg, id string) map[string]any {
	h.t.Helper()
	var found []map[string]any
	for _, m := range h.logLines(msg) {
		if m["request_id"] == id {
			found = append(found, m)
		}
	}
	require.Len(h.t, found, 1, "one %q line for request %s in:\n%s", msg, id, h.logs.String())
	return found[0]
}

// TestLogLines: the operator's log says what happened. A primary that fails
// with an HTTP status before a fallback answers has its own line (which
// upstream and model, the status and class, the target tried next); the
// per-request line carries the API, the path, the route, the stream flag,
// the attempts and fallback_reason; under log_requests = "all" a 401 has a
// line too; a reload's line names the files that changed.
func TestLogLines(t *testing.T) {
	h := routeHarness(t) // log_requests = "all" (testEdits)

	// An HTTP-status failover: burst's first target answers 429, the second
	// answers.
	resp, body := h.post(secretChat, chatBody("burst", noChain), "X-Sim-Fault", "status=429;model=openai/gpt-4o")
	require.Equal(t, 200, resp.StatusCode, string(body))
	id := resp.Header.Get(gateway.HeaderRequestID)
	failed := h.logLine("upstream attempt failed; trying the next target", id)
	require.Equal(t, "WARN", failed["level"])
	require.Equal(t, "market", failed["upstream"])
	require.Equal(t, "openai/gpt-4o", failed["model"])
	require.EqualValues(t, 429, failed["status"])
	require.Equal(t, "throttled", failed["class"])
	require.Equal(t, "openai/gpt-4o-mini", failed["next_model"])
	require.Equal(t, "failover", failed["via"])

	line := h.logLine("request", id)
	require.Equal(t, "chat", line["api"])
	require.Equal(t, "/v1/chat/completions", line["path"])
	require.Equal(t, "burst", line["route"])
	require.Equal(t, false, line["stream"])
	require.EqualValues(t, 2, line["attempts"])
	require.Equal(t, "throttled", line["fallback_reason"])
	require.EqualValues(t, 200, line["status"])

	// A stream's line says so; a first dial that answers has no failover line.
	resp, _ = h.post(secretChat, chatBody("burst", `,"stream":true`+noChain))
	require.Equal(t, 200, resp.StatusCode)
	id = resp.Header.Get(gateway.HeaderRequestID)
	line = h.logLine("request", id)
	require.Equal(t, true, line["stream"])
	require.EqualValues(t, 1, line["attempts"])
	require.Equal(t, "", line["fallback_reason"])
	for _, m := range h.logLines("upstream attempt failed; trying the next target") {
		require.NotEqual(t, id, m["request_id"])
	}

	// A 401 of the Messages API.
	resp, _ = h.do("POST", "/v1/messages", "sk-not-a-key", `{}`)
	require.Equal(t, 401, resp.StatusCode)
	line = h.logLine("request", resp.Header.Get(gateway.HeaderRequestID))
	require.EqualValues(t, 401, line["status"])
	require.Equal(t, "messages", line["api"])
	require.Equal(t, "/v1/messages", line["path"])
	require.Equal(t, "invalid_api_key", line["refused_code"])

	// A reload names what changed: one profile file edited.
	var profile string
	require.NoError(t, filepath.WalkDir(filepath.Join(h.dir, "profiles"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && profile == "" && strings.HasSuffix(p, ".toml") {
			profile = p
		}
		return err
	}))
	b, err := os.ReadFile(profile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(profile, append(b, "\n# edited\n"...), 0o644))
	require.Empty(t, h.srv.Reload())
	reloads := h.logLines("config reloaded")
	require.NotEmpty(t, reloads)
	rel, _ := filepath.Rel(h.dir, profile)
	require.Equal(t, []any{filepath.ToSlash(rel)}, reloads[len(reloads)-1]["changed"])
	require.Empty(t, h.srv.Reload())
	reloads = h.logLines("config reloaded")
	require.Equal(t, []any{}, reloads[len(reloads)-1]["changed"], "nothing changed since")
}
