package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// recordedSent returns the frames the client sent in a recorded session
// (testdata/recorded/realtime), in order.
func recordedSent(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "recorded", "realtime", name+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Direction string          `json:"direction"`
			Data      json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		if l.Direction == "sent" {
			out = append(out, l.Data)
		}
	}
	return out
}

// dialRealtime opens a session through the gateway; the answer's status
// when the upgrade is refused.
func (h *harness) dialRealtime(ctx context.Context, query string, hdr http.Header, protos ...string) (*websocket.Conn, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(h.ts.URL, "http") + "/v1/realtime?" + query
	return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: protos})
}

// until reads events until one of type typ; it returns the events read.
func until(ctx context.Context, t *testing.T, c *websocket.Conn, typ string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for {
		_, b, err := c.Read(ctx)
		require.NoError(t, err)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(b, &ev))
		evs = append(evs, ev)
		if ev["type"] == typ {
			return evs
		}
	}
}

func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }

// TestRealtimeSession: a recorded session replayed through sluice comes
// back frame for frame; the browser's key subprotocol is never echoed; the
// row is one per session, metered from response.done and priced per
// modality at the catalog's prices.
func TestRealtimeSession(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", http.Header{"Openai-Beta": {"realtime=v1"}},
		"realtime", "openai-insecure-api-key."+secretBatch)
	require.NoError(t, err)
	require.Equal(t, "realtime", resp.Header.Get("Sec-WebSocket-Protocol"), "the key's subprotocol is never echoed")
	id := resp.Header.Get(gateway.HeaderRequestID)
	created := until(ctx, t, c, "session.created")
	require.Equal(t, "gpt-realtime", created[0]["session"].(map[string]any)["model"])
	for _, f := range recordedSent(t, "openai-history-text-out") {
		require.NoError(t, c.Write(ctx, websocket.MessageText, f))
	}
	evs := until(ctx, t, c, "response.done")
	var text string
	for _, ev := range evs {
		if ev["type"] == "response.output_text.done" {
			text = ev["text"].(string)
		}
	}
	require.Equal(t, "Your name is Alice, and your favorite color is teal!", text)
	require.NoError(t, c.Close(websocket.StatusNormalClosure, "bye"))

	r := h.row(id)
	require.Equal(t, "realtime", r.API)
	require.Equal(t, http.StatusSwitchingProtocols, r.Status)
	require.Equal(t, "openai", r.Upstream)
	require.Equal(t, "openai/gpt-realtime", r.ServedModel)
	require.Equal(t, 1, r.Responses)
	require.Equal(t, int64(149), r.PromptTokens)
	require.Equal(t, int64(14), r.CompletionTokens)
	require.InDelta(t, (149*4.0+14*16.0)/1e6, r.CostUSD, 1e-12) // text in at $4/M, text out at $16/M
	require.Equal(t, "catalog", r.CostSource)
	require.Equal(t, int(websocket.StatusNormalClosure), r.CloseCode)
	require.Equal(t, gateway.ClosedByCaller, r.ClosedBy)
	require.Equal(t, 1, h.sim.CallCount(simulator.CallFilter{API: simulator.APIRealtime}))
}

// TestRealtimeAudioPriced: audio tokens are priced at the audio prices.
func TestRealtimeAudioPriced(t *testing.T) {
	h := newHarness(t, [2]string{"forward_headers = [\"X-Sim-Fault\"]", "forward_headers = [\"X-Sim-Fault\", \"X-Sim-Realtime\"]"})
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	hdr := bearer(secretBatch)
	hdr.Set(simulator.RealtimeHeader, "openai-text-in-audio-out")
	c, resp, err := h.dialRealtime(ctx, "model=openai/gpt-realtime", hdr)
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	for _, f := range recordedSent(t, "openai-text-in-audio-out") {
		require.NoError(t, c.Write(ctx, websocket.MessageText, f))
	}
	until(ctx, t, c, "response.done")
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	r := h.row(resp.Header.Get(gateway.HeaderRequestID))
	// The recording's usage: 16 text in at $4/M, 9 text out at $16/M, 15
	// audio out at $64/M.
	require.InDelta(t, (16*4.0+9*16.0+15*64.0)/1e6, r.CostUSD, 1e-12)
	require.Equal(t, int64(24), r.CompletionTokens)
}

// TestRealtimeRefusals: a session policy refuses is a plain HTTP answer in
// the OpenAI error shape with sluice's code, and no upstream is contacted.
func TestRealtimeRefusals(t *testing.T) {
	h := newHarness(t, batchKey("rate_limit = { max_parallel = 1 }\n"))
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	tests := []struct {
		name   string
		query  string
		hdr    http.Header
		status int
		code   string
	}{
		{"no key", "model=gpt-realtime", nil, 401, "invalid_api_key"},
		{"unknown key in the subprotocol", "model=gpt-realtime", http.Header{"Sec-Websocket-Protocol": {"realtime, openai-insecure-api-key.sk-nope"}}, 401, "invalid_api_key"},
		{"a marketplace upstream does not speak realtime", "model=gpt-realtime", bearer(secretChat), 422, "api_unsupported"},
		{"a guardrail forbids the model", "model=x-ai/grok-4", bearer(secretChat), 403, "model_forbidden"},
		{"a chat model is not a realtime model", "model=openai/gpt-4o", bearer(secretBatch), 400, "model_kind_mismatch"},
		{"no model", "", bearer(secretBatch), 400, "invalid_request"},
		{"an open session holds max_parallel", "model=gpt-realtime", bearer(secretBatch), 429, "rate_limited"},
	}
	var open *websocket.Conn
	var calls int
	for _, tc := range tests {
		if tc.status == http.StatusTooManyRequests { // with a session open
			var err error
			open, _, err = h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
			require.NoError(t, err)
			until(ctx, t, open, "session.created")
			calls = h.sim.CallCount(simulator.CallFilter{})
			h.sent.take()
		}
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := h.dialRealtime(ctx, tc.query, tc.hdr)
			require.Error(t, err)
			require.NotNil(t, resp)
			require.Equal(t, tc.status, resp.StatusCode)
			var body struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			require.Equal(t, tc.code, body.Error.Code)
			if tc.status != http.StatusUnauthorized { // a refused session has its row (a missing key has none)
				r := h.row(resp.Header.Get(gateway.HeaderRequestID))
				require.Equal(t, "realtime", r.API)
				require.Equal(t, tc.status, r.Status)
				require.Equal(t, tc.code, r.RefusedCode)
			}
		})
	}
	require.Equal(t, calls, h.sim.CallCount(simulator.CallFilter{}), "no upstream was contacted")
	require.Empty(t, h.sent.take())
	require.Equal(t, 1, calls, "only the open session reached the upstream")
	require.NoError(t, open.Close(websocket.StatusNormalClosure, ""))
}

// TestRealtimeFailoverAtConnect: a handshake that fails on connection moves
// to the next ordinary target; a takes_over target covering the failure is
// never used by a session, and a marketplace target is skipped.
func TestRealtimeFailoverAtConnect(t *testing.T) {
	route := "\n[[upstreams]]\nname = \"openai-b\"\nconnector = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"\n" +
		"\n[[upstreams]]\nname = \"openai-c\"\nconnector = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"\n" +
		"\n[[routes]]\nmodel = \"voice\"\nstrategy = \"priority\"\n" +
		"[[routes.targets]]\nupstream = \"openai\"\nmodel = \"openai/gpt-realtime\"\n" +
		"[[routes.targets]]\nupstream = \"openai-c\"\nmodel = \"openai/gpt-realtime\"\ntakes_over = [\"connection\"]\n" +
		"[[routes.targets]]\nupstream = \"market\"\nmodel = \"openai/gpt-realtime\"\n" +
		"[[routes.targets]]\nupstream = \"openai-b\"\nmodel = \"openai/gpt-realtime\"\n"
	h := newHarnessOpts(t, func(dir string) {
		p := filepath.Join(dir, "sluice.toml")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, append(b, route...), 0o644))
	}, nil, func(o *gateway.Options) {
		o.UpstreamURLs["openai-b"] = o.UpstreamURLs["openai"]
		o.UpstreamURLs["openai-c"] = o.UpstreamURLs["openai"] + "/restricted"
		o.UpstreamURLs["openai"] = "http://127.0.0.1:1" // nothing listens: a connection failure
	})
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, resp, err := h.dialRealtime(ctx, "model=voice", bearer(secretBatch))
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	r := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "openai-b", r.Upstream)
	require.Equal(t, "voice", r.Route)
	require.Equal(t, 2, r.Attempts)
	require.Equal(t, "connection", r.FallbackReason)
	for _, s := range h.sent.take() {
		require.NotContains(t, s.URL, "/restricted", "a takes_over target is never used by a session")
	}
	logs := h.logs.String()
	require.Contains(t, logs, `"upstream":"openai-c","model":"openai/gpt-realtime","reason":"takes_over"`)
	require.Contains(t, logs, `"upstream":"market","model":"openai/gpt-realtime","reason":"api_unsupported"`)
}

// TestRealtimeBudget: a response.create the budget cannot cover gets an
// error event with sluice's code and is not sent upstream.
func TestRealtimeBudget(t *testing.T) {
	h := newHarness(t, batchKey("monthly_budget_usd = 0.01\n"))
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	// 4096 tokens (the default cap) at $64/M audio out is $0.26: more than
	// the $0.01 budget.
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","event_id":"ev_1"}`)))
	evs := until(ctx, t, c, "error")
	e := evs[len(evs)-1]["error"].(map[string]any)
	require.Equal(t, "budget_exhausted", e["code"])
	require.Equal(t, "ev_1", e["event_id"])
	// A cap the budget covers passes: 100 tokens at $64/M is $0.0064.
	for _, f := range recordedSent(t, "openai-history-text-out") {
		if strings.Contains(string(f), `"response.create"`) {
			f = []byte(`{"type":"response.create","response":{"max_output_tokens":100}}`)
		}
		require.NoError(t, c.Write(ctx, websocket.MessageText, f))
	}
	until(ctx, t, c, "response.done")
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	r := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 1, r.Responses)
	require.Greater(t, r.CostUSD, 0.0)
}

// TestRealtimeSessionEnds: how a session ends reaches the caller as a close
// code and the row as close_code and closed_by — a budget exhausted by a
// response (response.cancel upstream, 1008), the server's shutdown (1012,
// the row written), the upstream going away (its close or 1014).
func TestRealtimeSessionEnds(t *testing.T) {
	t.Run("budget exhausted", func(t *testing.T) {
		// 10 tokens at $64/M ($0.00064) fit the $0.0007 budget; the
		// recorded response costs $0.00082, which exhausts it.
		h := newHarness(t, batchKey("monthly_budget_usd = 0.0007\n"))
		ctx, cancel := contextWithTimeout(20 * time.Second)
		defer cancel()
		c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		for _, f := range recordedSent(t, "openai-history-text-out") {
			if strings.Contains(string(f), `"response.create"`) {
				f = []byte(`{"type":"response.create","response":{"max_output_tokens":10}}`)
			}
			require.NoError(t, c.Write(ctx, websocket.MessageText, f))
		}
		code := readToClose(ctx, t, c)
		require.Equal(t, gateway.CloseBudget, code)
		r := h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, int(gateway.CloseBudget), r.CloseCode)
		require.Equal(t, gateway.ClosedBySluice, r.ClosedBy)
		require.Equal(t, 1, r.Responses)
	})
	t.Run("shutdown", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := contextWithTimeout(20 * time.Second)
		defer cancel()
		c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		done := make(chan int, 1)
		go func() { done <- h.srv.Cut(ctx) }()
		require.Equal(t, gateway.CloseShutdown, readToClose(ctx, t, c))
		require.Equal(t, 0, <-done, "the session's handler returned")
		r := h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, int(gateway.CloseShutdown), r.CloseCode)
		require.Equal(t, gateway.ClosedBySluice, r.ClosedBy)
	})
	t.Run("idle and oversized frames", func(t *testing.T) {
		h := newHarness(t, [2]string{"[retry]\n", "[realtime]\nidle_timeout = \"300ms\"\nmax_frame_bytes = 2048\n\n[retry]\n"})
		ctx, cancel := contextWithTimeout(20 * time.Second)
		defer cancel()
		c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		require.Equal(t, websocket.StatusNormalClosure, readToClose(ctx, t, c))
		r := h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, gateway.ClosedBySluice, r.ClosedBy, "the idle timeout closed it")

		c, resp, err = h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		big := `{"type":"input_audio_buffer.append","audio":"` + strings.Repeat("A", 4096) + `"}`
		require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(big)))
		require.Equal(t, websocket.StatusMessageTooBig, readToClose(ctx, t, c))
		r = h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, int(websocket.StatusMessageTooBig), r.CloseCode)
		require.Equal(t, gateway.ClosedBySluice, r.ClosedBy)
	})
	t.Run("upstream gone", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := contextWithTimeout(20 * time.Second)
		defer cancel()
		c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		go h.sim.Close()
		code := readToClose(ctx, t, c)
		r := h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, gateway.ClosedByUpstream, r.ClosedBy)
		if r.CloseCode == int(websocket.StatusAbnormalClosure) {
			require.Equal(t, gateway.CloseUpstreamGone, code)
		} else {
			require.Equal(t, r.CloseCode, int(code))
		}
	})
}

// readToClose reads until the session closes and returns its close code.
func readToClose(ctx context.Context, t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			code := websocket.CloseStatus(err)
			require.NotEqual(t, websocket.StatusCode(-1), code, "closed without a close frame: %v", err)
			return code
		}
	}
}

// TestRealtimeServerResponseSettled: a response the upstream starts by
// itself (server voice activity detection, no response.create) is priced at
// the audio prices and charged when its response.done arrives; the charge
// that exhausts the budget ends the session with 1008.
func TestRealtimeServerResponseSettled(t *testing.T) {
	// The recording's response: 14 text and 27 audio tokens in, 28 text
	// and 136 audio tokens out: $0.010072 at the catalog's prices.
	const cost = (14*4.0 + 27*32.0 + 28*16.0 + 136*64.0) / 1e6
	h := newHarness(t, batchKey("monthly_budget_usd = 0.01\n"),
		[2]string{"forward_headers = [\"X-Sim-Fault\"]", "forward_headers = [\"X-Sim-Fault\", \"X-Sim-Realtime\"]"})
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	hdr := bearer(secretBatch)
	hdr.Set(simulator.RealtimeHeader, "openai-audio-in-server-vad")
	c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", hdr)
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	frames := recordedSent(t, "openai-audio-in-server-vad")
	go func() {
		for _, f := range frames {
			if c.Write(ctx, websocket.MessageText, f) != nil {
				return
			}
		}
	}()
	require.Equal(t, gateway.CloseBudget, readToClose(ctx, t, c))
	r := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 1, r.Responses)
	require.InDelta(t, cost, r.CostUSD, 1e-12)
	require.Equal(t, int64(41), r.PromptTokens)
	require.Equal(t, int64(164), r.CompletionTokens)
	require.Equal(t, gateway.ClosedBySluice, r.ClosedBy)
}

// TestRealtimeDrain: a graceful stop waits for open sessions (http.Server's
// Shutdown does not see them): Drain runs until the last one ends, or its
// deadline passes with one still open.
func TestRealtimeDrain(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, _, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	require.ErrorIs(t, h.srv.Drain(short), context.Canceled, "an open session is in flight")
	drained := make(chan error, 1)
	go func() { drained <- h.srv.Drain(ctx) }()
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	require.NoError(t, <-drained)
}
