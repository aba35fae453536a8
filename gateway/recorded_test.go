package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog"
)

// recordedDir holds the answers the live upstreams sent (see its README.md),
// each upstream's cases.json saying what the request log must make of them,
// and config/, the configuration the replay runs on.
const recordedDir = "../testdata/recorded"

// recordedCase is one entry of testdata/recorded/<upstream>/cases.json.
type recordedCase struct {
	File string `json:"file"`
	// API is the API the case's request comes in on: "embeddings" for the
	// embeddings answers; a chat answer's case ("") is replayed on chat
	// completions and on the Messages API alike.
	API              string   `json:"api"`
	Upstream         string   `json:"upstream"`
	Model            string   `json:"model"`
	Stream           bool     `json:"stream"`
	Fallbacks        []string `json:"fallbacks"`
	ServedModel      string   `json:"served_model"`
	ServedProvider   string   `json:"served_provider"`
	SwitchReason     string   `json:"switch_reason"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	CostUSD          float64  `json:"cost_usd"`
	CostSource       string   `json:"cost_source"`
	// CacheDiscountApplied: the row priced reported cached tokens at the
	// cache price (the catalog's, or the upstream's own bill). No replayed
	// request names a session: the cost must not depend on one.
	CacheDiscountApplied bool `json:"cache_discount_applied"`
	Status               int  `json:"status"`
}

// headerReplay names the recorded answer the replay upstream serves; the
// gateway forwards it (forward_headers in testdata/recorded/config).
const headerReplay = "X-Replay"

// replayUpstream serves, for each request, the recorded answer its
// X-Replay header names (<upstream>/<file>), with the recorded status and
// content type, byte for byte.
func replayUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		name := r.Header.Get(headerReplay)
		body, err := os.ReadFile(filepath.Join(recordedDir, name))
		if err != nil || strings.Contains(name, "..") {
			http.Error(w, "no recording "+name, http.StatusTeapot)
			return
		}
		var meta struct {
			Response struct {
				Status int `json:"status"`
			} `json:"response"`
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".sse")
		if raw, err := os.ReadFile(filepath.Join(recordedDir, stem+".meta.json")); err == nil {
			_ = json.Unmarshal(raw, &meta)
		}
		if meta.Response.Status == 0 {
			meta.Response.Status = http.StatusOK
		}
		if strings.HasSuffix(name, ".sse") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(meta.Response.Status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// replayGateway is a gateway on testdata/recorded/config whose four
// upstreams are one replay upstream, which serves the recorded answer each
// request names in X-Replay (forwarded to it).
func replayGateway(t *testing.T) (*gateway.Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(recordedDir, "config"))))
	toml, err := os.ReadFile(filepath.Join(dir, "sluice.toml"))
	require.NoError(t, err)
	toml = append([]byte("[server]\nforward_headers = [\""+headerReplay+"\"]\n\n[store]\nflush_interval = \"20ms\"\n\n"), toml...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), toml, 0o644))
	t.Setenv("SLUICE_REPLAY_KEY", "sk-platform-replay")

	up := replayUpstream(t)
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		UpstreamURLs: map[string]string{"market": up.URL, "edge": up.URL, "openai": up.URL, "anthropic": up.URL}})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv, ts
}

// TestRecordedAnswers replays every answer the four upstreams were recorded
// sending through the gateway and checks the request-log row a reviewer
// reads — the catalog's model and provider with no switch reason, the
// recorded usage, the cost from the right source — and that the caller sees
// no upstream routing report. Every chat answer is replayed twice: to a
// chat-completions request, and to a Messages API request, which the
// Anthropic upstream's answers reach unchanged and the others' translated;
// the embeddings answers to embeddings requests.
func TestRecordedAnswers(t *testing.T) {
	srv, ts := replayGateway(t)
	ran := 0
	for _, kind := range []string{"openrouter", "vercel", "openai", "anthropic", "embeddings"} {
		raw, err := os.ReadFile(filepath.Join(recordedDir, kind, "cases.json"))
		require.NoError(t, err)
		var cases []recordedCase
		require.NoError(t, json.Unmarshal(raw, &cases))
		for _, c := range cases {
			// Each recorded answer is replayed on every API the upstream
			// answers in that shape: a marketplace's chat answer on chat
			// completions only (a Messages or Responses request goes to
			// its own endpoint there), OpenAI's chat answer also under a
			// translated Messages request, Anthropic's under all three.
			apis := []string{"chat"}
			switch kind {
			case "openai":
				apis = []string{"chat", "messages"}
			case "anthropic":
				apis = []string{"chat", "messages", "responses"}
			}
			if c.API != "" {
				apis = []string{c.API}
			}
			for _, api := range apis {
				ran++
				t.Run(kind+"/"+c.File+"/"+api, func(t *testing.T) {
					recordedReplay(t, srv, ts.URL, kind, api, c)
				})
			}
		}
	}
	require.Greater(t, ran, 100)
}

// recordedReplay sends one case's request on an API and checks the row.
func recordedReplay(t *testing.T, srv *gateway.Server, base, kind, api string, c recordedCase) {
	req := map[string]any{"model": c.Model, "messages": []any{map[string]string{"role": "user", "content": "Hello"}}}
	path := "/v1/chat/completions"
	switch api {
	case "messages":
		req["max_tokens"] = 1024
		path = "/v1/messages"
	case "embeddings":
		req = map[string]any{"model": c.Model, "input": "Hello"}
		path = "/v1/embeddings"
	case "responses":
		req = map[string]any{"model": c.Model, "input": "Hello", "max_output_tokens": 1024}
		path = "/v1/responses"
	}
	if c.Stream {
		req["stream"] = true
	}
	if c.Fallbacks != nil {
		req["routing"] = map[string]any{"fallbacks": c.Fallbacks}
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if api == "messages" {
		hr.Header.Set("x-api-key", "sk-replay-"+c.Upstream) // as Anthropic clients send it
	} else {
		hr.Header.Set("Authorization", "Bearer sk-replay-"+c.Upstream)
	}
	hr.Header.Set(headerReplay, kind+"/"+c.File)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	switch api {
	case "messages":
		messagesAnswer(t, kind, c, answer)
	case "responses":
		responsesAnswer(t, c, answer)
	default:
		noRoutingReport(t, answer, c.Stream)
	}

	row := waitRow(t, srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, api, row.API)
	require.Equal(t, c.Status, row.Status)
	require.Equal(t, c.ServedModel, row.ServedModel)
	require.Equal(t, c.ServedProvider, row.ServedProvider)
	require.Equal(t, c.SwitchReason, row.RoutingSwitchReason)
	require.Equal(t, c.PromptTokens, row.PromptTokens)
	require.Equal(t, c.CompletionTokens, row.CompletionTokens)
	require.Equal(t, c.CostSource, row.CostSource)
	require.InDelta(t, c.CostUSD, row.CostUSD, 1e-12)
	require.Equal(t, c.CacheDiscountApplied, row.CacheDiscountApplied, "cache_discount_applied")
	require.Empty(t, row.SessionID)
	require.Equal(t, []string{}, row.RoutingDegraded)
}

// responsesAnswer checks what a Responses client received from a
// translated upstream: a response object, or an event stream from
// response.created to response.completed (or an error event) whose
// sequence numbers count from 0.
func responsesAnswer(t *testing.T, c recordedCase, answer []byte) {
	t.Helper()
	if !c.Stream {
		var r struct {
			Object, Status string
			Output         []json.RawMessage
		}
		require.NoError(t, json.Unmarshal(answer, &r), "%s", answer)
		require.Equal(t, "response", r.Object)
		require.NotEmpty(t, r.Output)
		return
	}
	events := sseEvents(t, answer)
	require.NotEmpty(t, events)
	require.Equal(t, "response.created", events[0][0])
	last := events[len(events)-1][0]
	require.Contains(t, []string{"response.completed", "response.incomplete", "error"}, last)
	for i, e := range events {
		var ev struct {
			SequenceNumber int `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal([]byte(e[1]), &ev))
		require.Equal(t, i, ev.SequenceNumber, "event %d (%s)", i, e[0])
	}
}

// messagesAnswer checks what a Messages client received: from the Anthropic
// upstream, the recorded answer unchanged (a stream's events one by one);
// from any other, a Messages answer or an event stream in the API's
// grammar, with no routing report.
func messagesAnswer(t *testing.T, kind string, c recordedCase, answer []byte) {
	t.Helper()
	recorded, err := os.ReadFile(filepath.Join(recordedDir, kind, c.File))
	require.NoError(t, err)
	if kind == "anthropic" {
		if !c.Stream {
			require.Equal(t, string(recorded), string(answer), "passed through as the upstream sent it")
			return
		}
		require.Equal(t, sseEvents(t, recorded), sseEvents(t, answer), "relayed event by event")
		return
	}
	require.NotContains(t, string(answer), "provider_metadata")
	require.NotContains(t, string(answer), "openrouter_metadata")
	if !c.Stream {
		var m struct {
			Type, Role, StopReason string
			Content                []json.RawMessage
		}
		require.NoError(t, json.Unmarshal(answer, &m), "%s", answer)
		require.Equal(t, "message", m.Type)
		require.Equal(t, "assistant", m.Role)
		return
	}
	events := sseEvents(t, answer)
	require.NotEmpty(t, events)
	require.Equal(t, "message_start", events[0][0])
	last := events[len(events)-1][0]
	require.Contains(t, []string{"message_stop", "error"}, last)
}

// sseEvents reads an event stream into (event, data) pairs, the event
// named by its event line or, without one, by its data's type.
func sseEvents(t *testing.T, b []byte) [][2]string {
	t.Helper()
	var out [][2]string
	var name string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			if name == "" {
				var ty struct{ Type string }
				_ = json.Unmarshal([]byte(data), &ty)
				name = ty.Type
			}
			out = append(out, [2]string{name, data})
			name = ""
		}
	}
	return out
}

// noRoutingReport checks that what the caller received holds no marketplace
// routing report: OpenRouter's top-level provider and metadata, the Vercel AI
// Gateway's provider_metadata inside the choices.
func noRoutingReport(t *testing.T, answer []byte, stream bool) {
	t.Helper()
	objects := [][]byte{answer}
	if stream {
		objects = objects[:0]
		sc := bufio.NewScanner(bytes.NewReader(answer))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && !bytes.Equal(data, []byte("[DONE]")) {
				objects = append(objects, bytes.Clone(data))
			}
		}
		require.NotEmpty(t, objects, "the stream relayed no chunk")
	}
	for _, o := range objects {
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(o, &top), "%s", o)
		require.NotContains(t, top, "provider", "the marketplace's provider reached the caller: %s", o)
		require.NotContains(t, top, "openrouter_metadata")
		require.NotContains(t, top, "providerMetadata")
		require.NotContains(t, string(o), `"provider_metadata"`, "the routing report reached the caller: %s", o)
	}
}

// waitRow returns the request-log row of a request once the writer has
// stored it.
func waitRow(t *testing.T, srv *gateway.Server, id string) requestlog.Row {
	t.Helper()
	require.NotEmpty(t, id)
	deadline := time.Now().Add(5 * time.Second)
	for {
		page, err := srv.Store().Query(context.Background(), requestlog.Filter{Limit: requestlog.MaxLimit})
		require.NoError(t, err)
		for _, r := range page.Rows {
			if r.RequestID == id {
				return r
			}
		}
		require.False(t, time.Now().After(deadline), "no request-log row for %s after 5s", id)
		time.Sleep(10 * time.Millisecond)
	}
}
