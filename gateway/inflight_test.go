package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// TestCutInFlight: Server.Cut ends the requests in flight and returns once
// their handlers recorded. A Messages stream ends with an error event
// (server_shutdown, no message_stop) and records 503 server_shutdown, not
// 499; a request arriving after the cut answers 503 server_shutdown; a
// route change through the admin API arriving after it still runs to its
// end (stored with its audit entry) rather than being undone by its cut
// context; reads (the audit list, say) are cut like any request.
func TestCutInFlight(t *testing.T) {
	h := newHarnessSim(t, nil, func(c *simulator.Config) { c.ChunkDelay = time.Hour })
	req, err := http.NewRequest("POST", h.ts.URL+"/v1/messages",
		strings.NewReader(`{"model":"openai/gpt-4o","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", secretChat)
	resp, err := h.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, 1, h.srv.InFlight())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Zero(t, h.srv.Cut(ctx), "every cut handler returned")
	require.Zero(t, h.srv.InFlight())
	rest, _ := io.ReadAll(rd)
	body := first + string(rest)
	require.Contains(t, body, "event: error\n")
	require.Contains(t, body, `"code":"server_shutdown"`)
	require.NotContains(t, body, "message_stop")
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 503, row.Status)
	require.Equal(t, "server_shutdown", row.RefusedCode)
	require.True(t, row.Stream)
	require.Equal(t, "messages", row.API)

	// After the cut: a request answers 503 at once, in its API's shape.
	late, b := h.post(secretChat, chatBody("openai/gpt-4o-mini", ""))
	require.Equal(t, 503, late.StatusCode, string(b))
	require.Contains(t, string(b), `"code":"server_shutdown"`)
	// A route change runs to its end and is audited.
	status, b := h.admin("PUT", "/api/v1/routes/summaries", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`)
	require.Equal(t, 201, status, "%s\n%s", b, h.logs.String())
	require.NotNil(t, h.srv.Snapshot().Config.Route("summaries"), "the change was stored (with its audit entry, in one transaction) and swapped in")
}
