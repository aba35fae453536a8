//go:build unix

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/simulator"
)

// dialResponses opens a Responses WebSocket on the harness with a key, as
// Codex does (its beta header); resp is the handshake's answer.
func dialResponses(t *testing.T, h *harness, secret string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := http.Header{"Openai-Beta": {"responses_websockets=2026-02-06"}}
	if secret != "" {
		hdr.Set("Authorization", "Bearer "+secret)
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.ts.URL, "http")+"/v1/responses", &websocket.DialOptions{HTTPHeader: hdr})
	if c != nil {
		c.SetReadLimit(16 << 20)
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

// wsEvent is a server event's members the tests read.
type wsEvent struct {
	Type     string `json:"type"`
	Status   int    `json:"status"`
	Response struct {
		ID     string            `json:"id"`
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
	} `json:"response"`
	Error struct {
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Delta string `json:"delta"`
	// Code is a stream's own error event's (once the stream began).
	Code string `json:"code"`
}

// turnOver sends one frame and reads events until the response ends
// (response.completed, .incomplete or .failed) or an error event comes;
// it returns them all.
func turnOver(t *testing.T, c *websocket.Conn, frame string) []wsEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(frame)))
	var out []wsEvent
	for {
		typ, b, err := c.Read(ctx)
		require.NoError(t, err, "after %d events", len(out))
		require.Equal(t, websocket.MessageText, typ)
		var ev wsEvent
		require.NoError(t, json.Unmarshal(b, &ev), "%s", b)
		out = append(out, ev)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return out
		}
	}
}

func lastOf(evs []wsEvent) wsEvent { return evs[len(evs)-1] }

// TestResponsesWebSocket: a Responses WebSocket through the gateway on
// loopback, as Codex uses it — refused with 426 where the key's upstream
// does not speak the API (the client then falls back to HTTP) and 401
// without a key; a warm-up answered without an upstream; two turns, the
// second continuing the first by previous_response_id; a stored response
// continued where it is stored; refusals as error events on a connection
// that stays usable; one row per response, its api responses_ws; and a
// close frame when the server shuts down.
func TestResponsesWebSocket(t *testing.T) {
	h := inboundHarness(t)

	// Refused before the upgrade.
	_, resp, err := dialResponses(t, h, secretClaude)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUpgradeRequired, resp.StatusCode, "the claude key's upstream (Anthropic) does not speak the Responses API")
	_, resp, err = dialResponses(t, h, "")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	plain, body := h.get("/v1/responses", secretBatch)
	assert.Equal(t, http.StatusNotFound, plain.StatusCode, "a GET without an upgrade: %s", body)
	upgrade, body := h.do(http.MethodGet, "/v1/responses", secretClaude, "", "Upgrade", "websocket", "Connection", "Upgrade")
	assert.Equal(t, http.StatusUpgradeRequired, upgrade.StatusCode)
	assert.Contains(t, string(body), `"code":"websocket_unavailable"`)

	before := rowIDs(t, h)
	c, resp, err := dialResponses(t, h, secretBatch)
	require.NoError(t, err)
	assert.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	h.sent.take()

	// A warm-up: created and completed, nothing sent upstream.
	warm := turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","store":false,"generate":false,"input":[{"type":"message","role":"developer","content":"Remember the number 7."}]}`)
	require.Len(t, warm, 2)
	assert.Equal(t, "response.created", warm[0].Type)
	assert.Equal(t, "response.completed", warm[1].Type)
	assert.NotEmpty(t, warm[1].Response.ID)
	assert.Empty(t, h.sent.take(), "a warm-up asks no upstream")

	// The first turn continues the warm-up: sent whole (store false: no
	// upstream holds it), the warm-up's input first.
	first := turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","store":false,"stream":true,"previous_response_id":"`+warm[1].Response.ID+`","input":[{"type":"message","role":"user","content":"Say hi."}]}`)
	require.Equal(t, "response.created", first[0].Type, "%+v", first)
	end := lastOf(first)
	require.Equal(t, "response.completed", end.Type, "%+v", end)
	require.NotEmpty(t, end.Response.Output)
	sent := h.sent.take()
	require.Len(t, sent, 1)
	assert.Contains(t, sent[0].URL, "/openai/v1/responses")
	assert.Contains(t, string(sent[0].Body), "Remember the number 7.")
	assert.Contains(t, string(sent[0].Body), "Say hi.")
	assert.NotContains(t, string(sent[0].Body), "previous_response_id")
	assert.NotContains(t, string(sent[0].Body), `"generate"`)
	assert.NotContains(t, string(sent[0].Body), `"type":"response.create"`)

	// The second turn continues the first: its input and output, then the
	// new input, in one HTTP request.
	second := turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","store":false,"previous_response_id":"`+end.Response.ID+`","input":"Which number?"}`)
	require.Equal(t, "response.completed", lastOf(second).Type, "%+v", lastOf(second))
	sent = h.sent.take()
	require.Len(t, sent, 1)
	var upstream struct {
		Input  []json.RawMessage `json:"input"`
		Stream bool              `json:"stream"`
	}
	require.NoError(t, json.Unmarshal(sent[0].Body, &upstream), "%s", sent[0].Body)
	assert.True(t, upstream.Stream)
	require.Len(t, upstream.Input, 2+len(end.Response.Output)+1, "%s", sent[0].Body)
	assert.JSONEq(t, string(end.Response.Output[0]), string(upstream.Input[2]), "the first response's output follows its input")
	assert.Contains(t, string(upstream.Input[len(upstream.Input)-1]), "Which number?")

	// A stored response (OpenAI stores by default) is continued by its id,
	// where it is stored.
	stored := lastOf(turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","input":"Remember 9."}`))
	require.Equal(t, "response.completed", stored.Type, "%+v", stored)
	h.sent.take()
	cont := lastOf(turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","previous_response_id":"`+stored.Response.ID+`","input":"Which?"}`))
	require.Equal(t, "response.completed", cont.Type, "%+v", cont)
	sent = h.sent.take()
	require.Len(t, sent, 1)
	assert.Contains(t, string(sent[0].Body), `"previous_response_id":"`+stored.Response.ID+`"`)
	assert.NotContains(t, string(sent[0].Body), "Remember 9.")

	// Refusals are error events in the Responses API's shape; the
	// connection serves the next frame.
	for _, c2 := range []struct{ frame, code string }{
		{`not json`, "invalid_json"},
		{`{"type":"response.cancel"}`, "invalid_request"},
		{`{"type":"response.create","model":"openai/gpt-4o","input":"x","background":true}`, "invalid_request"},
		{`{"type":"response.create","model":"nobody/no-such-model","input":"x"}`, "model_not_in_catalog"},
		{`{"type":"response.create","model":"openai/gpt-4o","input":"x","previous_response_id":"resp_unknown"}`, "not_found"},
	} {
		ev := lastOf(turnOver(t, c, c2.frame))
		assert.Equal(t, "error", ev.Type, c2.frame)
		assert.Equal(t, c2.code, ev.Error.Code, "%s: %+v", c2.frame, ev)
		assert.NotZero(t, ev.Status, c2.frame)
		assert.NotEmpty(t, ev.Error.Message, c2.frame)
	}
	assert.Empty(t, h.sent.take(), "nothing refused was sent upstream")
	again := lastOf(turnOver(t, c, `{"type":"response.create","model":"openai/gpt-4o","input":"Still there?","store":false}`))
	assert.Equal(t, "response.completed", again.Type, "%+v", again)

	// One row a response that went down the path: five answered, two
	// refused by the path (the frames refused before it, and the warm-up,
	// have none).
	rows := newRows(t, h, before, 7)
	answered := 0
	for _, r := range rows {
		assert.Equal(t, "responses_ws", r.API, "%s", r.RequestID)
		if r.Status == http.StatusOK {
			answered++
			assert.Equal(t, "openai", r.Upstream)
			assert.Equal(t, "openai/gpt-4o", r.ServedModel)
			assert.True(t, r.Stream)
		} else {
			assert.NotEmpty(t, r.RefusedCode)
		}
	}
	assert.Equal(t, 5, answered)

	// At shutdown the server closes the socket with 1001 going away.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.Equal(t, 0, h.srv.Cut(ctx), "the socket's handler returned")
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, websocket.StatusGoingAway, ce.Code)
}

// TestResponsesWebSocketLimits: what bounds a Responses WebSocket. A frame
// over [server] max_body_bytes closes the connection with 1009 (the gateway
// never holds more of it); pings are answered while a response streams; a
// connection with no frame for [server] idle_timeout is closed with 1000;
// a caller that leaves mid-response ends it (499); and a response still streaming when the server cuts its requests at
// shutdown ends with the server_shutdown error event, its row written
// (503), before the close frame (1001).
func TestResponsesWebSocketLimits(t *testing.T) {
	h := newHarnessSim(t, nil, func(c *simulator.Config) { c.ChunkDelay = time.Hour },
		[2]string{"[server]\n", "[server]\nidle_timeout = \"2s\"\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	big, _, err := dialResponses(t, h, secretBatch)
	require.NoError(t, err)
	require.NoError(t, big.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"openai/gpt-4o","input":"`+strings.Repeat("x", 70000)+`"}`)))
	_, _, err = big.Read(ctx)
	var ce websocket.CloseError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, websocket.StatusMessageTooBig, ce.Code)

	idle, _, err := dialResponses(t, h, secretBatch)
	require.NoError(t, err)
	_, _, err = idle.Read(ctx) // nothing is sent: the server closes it
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, websocket.StatusNormalClosure, ce.Code)

	// A caller that leaves mid-response ends it: its row says 499 at
	// once, though the upstream would stream for an hour.
	before := rowIDs(t, h)
	gone, _, err := dialResponses(t, h, secretBatch)
	require.NoError(t, err)
	require.NoError(t, gone.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"openai/gpt-4o","input":"hi","store":false}`)))
	_, b, err := gone.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(b), `"response.created"`)
	require.NoError(t, gone.CloseNow())
	left := newRows(t, h, before, 1)
	require.Len(t, left, 1)
	assert.Equal(t, 499, left[0].Status)
	assert.Equal(t, "responses_ws", left[0].API)

	before = rowIDs(t, h)
	c, _, err := dialResponses(t, h, secretBatch)
	require.NoError(t, err)
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"openai/gpt-4o","input":"hi","store":false}`)))
	// Pings need a reader on the client's side too.
	events := make(chan wsEvent, 64)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				readErr <- err
				close(events)
				return
			}
			var ev wsEvent
			_ = json.Unmarshal(b, &ev)
			events <- ev
		}
	}()
	first := <-events
	require.Equal(t, "response.created", first.Type, "%+v", first)
	require.NoError(t, c.Ping(ctx), "a ping is answered while the response streams")

	assert.Zero(t, h.srv.Cut(ctx), "the socket's handler returned")
	var last wsEvent
	for ev := range events {
		last = ev
	}
	assert.Equal(t, "error", last.Type)
	assert.Equal(t, "server_shutdown", last.Code, "the stream's own error event: %+v", last)
	err = <-readErr
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, websocket.StatusGoingAway, ce.Code)
	rows := newRows(t, h, before, 1)
	require.Len(t, rows, 1)
	assert.Equal(t, "responses_ws", rows[0].API)
	assert.Equal(t, http.StatusServiceUnavailable, rows[0].Status)
	assert.Equal(t, "server_shutdown", rows[0].RefusedCode)
}
