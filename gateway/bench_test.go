package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/telemetry"
)

// cannedTransport answers every upstream request with a fixed completion,
// without a network: the benchmark measures the gateway alone.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), Request: r}, nil
}

// cannedAPIs answers each upstream path with its own canned body: a
// recorded Messages answer for /messages, a recorded Responses answer for
// /responses, the chat answer otherwise (stream bodies when stream is set).
type cannedAPIs struct {
	chat, messages, responses []byte
	stream                    bool
}

func (c cannedAPIs) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	body := c.chat
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		body = c.messages
	case strings.HasSuffix(r.URL.Path, "/responses"):
		body = c.responses
	}
	ct := "application/json"
	if c.stream {
		ct = "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// recordedAPIs is the canned transport of the recorded answers in each API's
// shape (stream: their streams).
func recordedAPIs(b testing.TB, chat []byte, stream bool) cannedAPIs {
	read := func(name string) []byte {
		raw, err := os.ReadFile("../testdata/recorded/" + name)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	if stream {
		return cannedAPIs{chat: chat, messages: read("anthropic/stream-plain-claude-sonnet-4.sse"),
			responses: read("responses/openai-stream-plain-gpt-4o.sse"), stream: true}
	}
	return cannedAPIs{chat: chat, messages: read("anthropic/nonstream-plain-claude-sonnet-4.json"),
		responses: read("responses/openai-nonstream-plain-gpt-4o.json")}
}

// benchAPI serves one request of an API per iteration through the whole
// handler, against a canned answer in the shape the upstream is asked in.
func benchAPI(b *testing.B, path, secret, body string) {
	benchAPIWith(b, recordedAPIs(b, cannedChat, false), path, secret, body)
}

// benchAPIWith is benchAPI against the given canned upstream.
func benchAPIWith(b *testing.B, up http.RoundTripper, path, secret, body string) {
	h := benchServer(b, nil, up, claudeKeyEdit())
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkRequestPathPerAPI is BenchmarkRequestPath on each API: chat
// completions and the Messages and Responses APIs passed natively to the
// marketplace, and each translated (Messages onto OpenAI, Responses onto
// Anthropic). A native pass-through is held to cost no more than chat.
func BenchmarkRequestPathPerAPI(b *testing.B) {
	b.Run("chat/marketplace", func(b *testing.B) { benchAPI(b, "/v1/chat/completions", secretChat, benchBody+"}") })
	b.Run("chat/marketplace-as-large-as-responses", func(b *testing.B) {
		// The chat answer padded to the recorded Responses answer's size,
		// so that the two native paths compare on equal bodies.
		up := recordedAPIs(b, nil, false)
		pad := len(up.responses) - len(cannedChat)
		up.chat = bytes.Replace(cannedChat, []byte("Three bullet points."), []byte("Three bullet points."+strings.Repeat(" ", max(pad, 0))), 1)
		benchAPIWith(b, up, "/v1/chat/completions", secretChat, benchBody+"}")
	})
	b.Run("messages/marketplace-native", func(b *testing.B) { benchAPI(b, "/v1/messages", secretChat, messagesBody+"}") })
	b.Run("responses/marketplace-native", func(b *testing.B) { benchAPI(b, "/v1/responses", secretChat, responsesBody+"}") })
	b.Run("messages/openai-translated", func(b *testing.B) { benchAPI(b, "/v1/messages", secretBatch, messagesBody+"}") })
	b.Run("responses/anthropic-translated", func(b *testing.B) {
		benchAPI(b, "/v1/responses", secretClaude, `{"model":"anthropic/claude-sonnet-4.5","instructions":"You are terse.","input":"Summarise the incident report."}`)
	})
}

// cannedChat is the canned chat-completions answer.
var cannedChat = []byte(`{"id":"gen-1","object":"chat.completion","created":1,"model":"openai/gpt-4o","provider":"openai",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Three bullet points."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":42,"completion_tokens":12,"total_tokens":54}}`)

// BenchmarkRequestPath serves one non-streaming chat completion through the
// whole request path — auth, parse, decide, check, translate, send (canned),
// read back, respond, record (SQLite, batched) — in-process.
func BenchmarkRequestPath(b *testing.B) { benchRequestPath(b, nil) }

// BenchmarkRequestPathTraced is BenchmarkRequestPath with tracing on,
// exporting over OTLP/HTTP to a loopback receiver that discards: the price
// of a server span and a client span per request (compare it with
// BenchmarkRequestPath, where tracing is off and no span is made).
func BenchmarkRequestPathTraced(b *testing.B) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tracing, err := telemetry.FromEnv(context.Background(), "bench")
	if err != nil || !tracing.Enabled() {
		b.Fatal("tracing did not turn on:", err)
	}
	defer func() { _ = tracing.Shutdown(context.Background()) }()
	benchRequestPath(b, tracing)
}

// benchServer starts the demo configuration's gateway in-process, its
// upstreams answered by t (nil: a canned non-streaming answer), its
// response cache off; tracing nil is off.
func benchServer(b testing.TB, tracing *telemetry.Tracing, t http.RoundTripper, edits ...[2]string) http.Handler {
	dir := b.TempDir()
	if err := os.CopyFS(dir, sluice.DemoConfig()); err != nil {
		b.Fatal(err)
	}
	p := dir + "/sluice.toml"
	cfg, _ := os.ReadFile(p)
	cfg = []byte(strings.Replace(string(cfg), "[cache]\nenabled = true", "[cache]\nenabled = false", 1))
	if os.Getenv("SLUICE_BENCH_STORE_OFF") != "" {
		cfg = []byte(strings.Replace(string(cfg), "kind = \"sqlite\"", "kind = \"off\"", 1))
	}
	for _, e := range edits {
		cfg = []byte(strings.Replace(string(cfg), e[0], e[1], 1))
	}
	_ = os.WriteFile(p, cfg, 0o644)
	if t == nil {
		t = cannedTransport{cannedChat}
	}
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Transport: t,
		UpstreamURLs: map[string]string{"market": "http://upstream.invalid/api/v1"}, Tracing: tracing})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv.Handler()
}

// benchBody is the benchmarks' request.
const benchBody = `{"model":"openai/gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident report."}],"temperature":0.2`

// messagesBody is benchBody's request on the Messages API, open like it.
const messagesBody = `{"model":"openai/gpt-4o","max_tokens":256,"system":"You are terse.","messages":[{"role":"user","content":"Summarise the incident report."}]`

// claudeResponses is a Responses request for the claude key (Anthropic's
// upstream, translated), open like the others.
const claudeResponses = `{"model":"anthropic/claude-sonnet-4.5","max_output_tokens":256,"instructions":"You are terse.","input":"Summarise the incident report."`

// responsesBody is benchBody's request on the Responses API, open like it.
const responsesBody = `{"model":"openai/gpt-4o","max_output_tokens":256,"instructions":"You are terse.","input":[{"role":"user","content":[{"type":"input_text","text":"Summarise the incident report."}]}]`

// serveOne serves one request through h and fails unless it answered 200.
func serveOne(b *testing.B, h http.Handler, body string) {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-sluice-demo-chat")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatal(rec.Code, rec.Body.String())
	}
}

// benchRequestPath serves one chat completion per iteration through the
// whole handler, against a canned upstream answer; tracing nil is off.
func benchRequestPath(b *testing.B, tracing *telemetry.Tracing) {
	h := benchServer(b, tracing, nil)
	b.ReportAllocs()
	for b.Loop() {
		serveOne(b, h, benchBody+"}")
	}
}

// BenchmarkRequestStack reports, as stack-B/req, the goroutine stack a
// request leaves behind: net/http serves a connection's requests on one
// goroutine, whose stack grows (in powers of two) to the deepest point of
// any request it served, so an open stream holds that much for its whole
// life. Each iteration serves one request over its own loopback
// connection, read by hand on the client side (no client goroutines), and
// leaves the connection open; the growth of the runtime's stack memory per
// request is the server goroutine's stack (the collector is off meanwhile,
// since a collection shrinks idle stacks). The stream variant relays a
// recorded marketplace stream.
func BenchmarkRequestStack(b *testing.B) {
	stream, err := os.ReadFile("../testdata/recorded/openrouter/stream-plain-openai-gpt-5.4-nano.sse")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		t    http.RoundTripper
		body string
	}{
		{"nonstream", nil, benchBody + "}"},
		{"stream", cannedStream{stream}, benchBody + `,"stream":true}`},
	} {
		b.Run(mode.name, func(b *testing.B) {
			srv := httptest.NewServer(benchServer(b, nil, mode.t))
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "http://")
			raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer sk-sluice-demo-chat\r\n" +
				"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(mode.body)) + "\r\n\r\n" + mode.body
			serve := func() net.Conn {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.WriteString(c, raw); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
				return c
			}
			_ = serve().Close() // the first request compiles and decides
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			conns := make([]net.Conn, 0, b.N)
			for i := 0; i < b.N; i++ {
				conns = append(conns, serve())
			}
			time.Sleep(50 * time.Millisecond) // the server's goroutines settle back to waiting
			runtime.ReadMemStats(&after)
			for _, c := range conns {
				_ = c.Close()
			}
			b.ReportMetric(float64(after.StackInuse-before.StackInuse)/float64(b.N), "stack-B/req")
		})
	}
}

// cannedStream answers every upstream request with a fixed event stream.
type cannedStream struct{ body []byte }

func (c cannedStream) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), Request: r}, nil
}
