// Package simulator is a loopback HTTP server that behaves like four LLM
// upstreams at once — an OpenRouter-like and a Vercel-AI-Gateway-like
// marketplace, OpenAI's and Anthropic's first-party APIs — with faults that
// tests inject per request (header X-Sim-Fault) or per server
// ([Server.SetFaults]). It is the only simulated piece of sluice's
// integration tests and of `sluice demo`, so it honours the upstreams' native
// routing knobs and answers in their wire shapes: the shapes of the answers
// recorded from the live APIs (testdata/recorded), which
// TestShapesMatchRecordings holds it to, field by field and stream by
// stream.
//
// # Endpoints
//
// Under [Server.URL] of each upstream kind:
//
//   - OpenRouter: POST chat/completions, messages (Anthropic's Messages
//     API), responses (the Responses API, stateless: store true and
//     previous_response_id are refused with 400), embeddings; GET models
//     and models/{author}/{slug}/endpoints.
//   - Vercel: POST chat/completions, messages, responses (stateless too),
//     embeddings; GET models.
//   - OpenAI: POST chat/completions, responses, embeddings; GET and DELETE
//     responses/{id}. A response is kept unless the request sets store
//     false, and previous_response_id continues a kept one (an unknown id
//     is refused with 400, previous_response_not_found).
//   - Anthropic: POST messages, messages/count_tokens.
//   - Azure OpenAI (azure.go): POST openai/v1/chat/completions,
//     openai/v1/responses, openai/v1/embeddings, GET openai/v1/realtime
//     (a WebSocket) under <base>/azure, behind
//     an api-key or a token from the simulated Microsoft Entra ID
//     ([StartEntra]).
//   - Amazon Bedrock: POST model/{modelId}/invoke and
//     model/{modelId}/invoke-with-response-stream (Anthropic's models, the
//     stream in the binary event-stream framing), each request's SigV4
//     signature recomputed with the AWS SDK's signer (bedrock.go).
//
// A marketplace's Messages and Responses endpoints take the routing
// members its reference gives them (testdata/recorded/ENDPOINTS.md) and
// walk providers and fallback models as its chat endpoint does, faults
// included; every attempt is a [Call] naming its API and path.
//
// # Scripted tool calls
//
// Agent tests script tool calls with a directive in a user turn's text:
//
//	[[sim:call NAME {"json": "arguments"}]]
//
// When the request offers a function tool NAME (OpenAI's and the
// marketplaces' tools[].function.name, Anthropic's tools[].name, the
// Responses API's tools[].name) and the conversation's last user turn that
// has text carries the directive, the answer is one call to NAME with those
// arguments ("{}" when none are given): tool_calls and finish_reason
// "tool_calls" on chat completions, a tool_use block (after a sentence of
// text, as every recorded call has one) and stop_reason "tool_use" on the
// Messages API, a function_call output item on the
// Responses API, streamed or not. Once a tool result follows that turn (a
// "tool" message, a tool_result block, a function_call_output item), the
// answer is text quoting the result verbatim ("tool NAME returned: …"), so
// a test can see the agent relay it. Several directives in one turn are
// called one after the other, each once the previous has its result; the
// text then quotes every result, one line each. A directive naming a tool
// the request does not offer, or malformed, is plain text. Without a
// directive every upstream answers as it always does.
//
// It is the upstreams' test double, not part of the gateway: it imports
// no stage of the pipeline but the model catalog's (guardrails) names and
// models, so that it serves exactly the catalog a gateway routes against
// ([FromCatalog]), and never the compiler, connectors, snapshot or gateway
// whose wire formats it checks.
package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicegw/sluice/simulator/errorbodies"
)

// The upstream kinds, as used by [Server.URL] and [Call.Kind].
const (
	KindOpenRouter = "openrouter"
	KindVercel     = "vercel"
	KindOpenAI     = "openai"
	KindAnthropic  = "anthropic"
)

// The APIs a call can come in on, as used by [Call.API]: what the path
// ends with, whatever the upstream's prefix.
const (
	APIChat        = "chat"         // …/chat/completions
	APIMessages    = "messages"     // …/messages (Anthropic's, OpenRouter's, Vercel's)
	APIResponses   = "responses"    // …/responses and …/responses/{id}
	APIEmbeddings  = "embeddings"   // …/embeddings
	APICountTokens = "count_tokens" // …/messages/count_tokens
)

// apiOf names the API a request path belongs to, or "" for none of them.
func apiOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return APIChat
	case strings.HasSuffix(path, "/messages/count_tokens"):
		return APICountTokens
	case strings.HasSuffix(path, "/messages"), strings.HasSuffix(path, "/invoke"), strings.HasSuffix(path, "/invoke-with-response-stream"):
		return APIMessages
	case strings.HasSuffix(path, "/embeddings"):
		return APIEmbeddings
	case strings.HasSuffix(path, "/responses") || strings.Contains(path, "/responses/"):
		return APIResponses
	case strings.HasSuffix(path, "/realtime"):
		return APIRealtime
	}
	return ""
}

// FaultHeader is the request header carrying per-request faults.
const FaultHeader = "X-Sim-Fault"

// Call is one upstream attempt the simulator saw.
type Call struct {
	// Kind is the upstream that was called: KindOpenRouter, KindVercel, KindOpenAI or KindAnthropic.
	Kind string
	// API is the API the request came in on: APIChat, APIMessages,
	// APIResponses, APIEmbeddings or APICountTokens.
	API string
	// Path is the request's path, e.g. "/openrouter/api/v1/messages".
	Path string
	// Method is the request's method: POST, or GET and DELETE for a
	// stored response.
	Method string
	// Model is the catalog slug attempted.
	Model string
	// Provider is the endpoint slug attempted.
	Provider string
	// Status is the HTTP status of the attempt (0 when it never answered: hang).
	Status int
	// Fault is the fault applied to the attempt, in the header grammar, or "".
	Fault string
	// Stream tells whether the request asked for a stream.
	Stream bool
	// Time is when the attempt was made.
	Time time.Time
}

// CallFilter selects calls for [Server.CallCount]; zero fields match anything.
// Model and Provider match like a fault's (name part / base slug allowed).
type CallFilter struct {
	Kind     string
	API      string
	Model    string
	Provider string
	Status   int
}

type installedFault struct {
	Fault
	used int
}

// Server is the simulator. Create it with [New], then [Server.Start].
// It is safe for concurrent use.
type Server struct {
	cfg    Config
	errs   map[string]errorbodies.Recording
	srv    *http.Server
	ln     net.Listener
	base   string
	done   chan struct{}
	closed sync.Once
	// started is when the server was made; the Vercel-like gateway's
	// report times attempts from it.
	started time.Time
	wg      sync.WaitGroup
	seq     atomic.Int64

	mu        sync.Mutex
	calls     []Call
	faults    []*installedFault
	hdrFaults map[string]int // uses per header fault (canonical string)
	// stored are the responses OpenAI-like Responses calls kept, by id.
	stored map[string]*storedResponse
	// azurePrompts are the prompt sizes Azure chat requests had, by first
	// message: what its prompt cache holds.
	azurePrompts map[string]int
	// bedrockCached holds the system prompts Bedrock requests wrote to the
	// prompt cache (see bedrockCache).
	bedrockCached sync.Map
}

// New returns a server for cfg. It panics if the embedded error recordings
// cannot be loaded (a build mistake, not a runtime condition).
func New(cfg Config) *Server {
	errs, err := errorbodies.Load()
	if err != nil {
		panic(fmt.Sprintf("simulator: %v", err))
	}
	if cfg.SlowStreamInterval <= 0 {
		cfg.SlowStreamInterval = 50 * time.Millisecond
	}
	s := &Server{cfg: cfg, errs: errs, done: make(chan struct{}), hdrFaults: map[string]int{}, started: time.Now(),
		stored: map[string]*storedResponse{}, azurePrompts: map[string]int{}}
	return s
}

// ErrorBodies returns the recorded error answers the error= fault replays,
// keyed "<upstream>/<name>".
func (s *Server) ErrorBodies() map[string]errorbodies.Recording { return s.errs }

// Start listens on 127.0.0.1:0 and serves in the background; it returns the
// base URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Start() (string, error) { return s.StartOn("127.0.0.1:0") }

// StartOn is [Server.Start] on the given address (sluice simulate's
// --listen).
func (s *Server) StartOn(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("simulator: listen: %w", err)
	}
	s.ln = ln
	s.base = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s.base, nil
}

// BaseURL returns the URL Start returned ("" before Start).
func (s *Server) BaseURL() string { return s.base }

// URL returns the base URL a connector uses for an upstream kind:
// openrouter → <base>/openrouter/api/v1, vercel → <base>/vercel/v1,
// openai → <base>/openai/v1, anthropic → <base>/anthropic/v1, azure →
// <base>/azure/openai/v1, bedrock → <base>/bedrock. Unknown kinds
// return "".
func (s *Server) URL(kind string) string {
	switch kind {
	case KindOpenRouter:
		return s.base + "/openrouter/api/v1"
	case KindVercel:
		return s.base + "/vercel/v1"
	case KindOpenAI:
		return s.base + "/openai/v1"
	case KindAnthropic:
		return s.base + "/anthropic/v1"
	case KindAzure:
		// The resource's endpoint is <base>/azure; the connector appends
		// the v1 surface's path.
		return s.base + "/azure/openai/v1"
	case KindBedrock:
		return s.base + "/bedrock"
	}
	return ""
}

// Close stops the server, ends hanging and streaming handlers and waits for
// them to return. It is safe to call more than once.
func (s *Server) Close() {
	s.closed.Do(func() {
		close(s.done)
		if s.srv != nil {
			_ = s.srv.Close()
		}

	})
	s.wg.Wait()
}

// SetFaults replaces the programmatic faults (applied after any X-Sim-Fault
// faults of a request) and resets their Times counters.
func (s *Server) SetFaults(faults ...Fault) error {
	inst := make([]*installedFault, 0, len(faults))
	for _, f := range faults {
		if err := f.Validate(); err != nil {
			return err
		}
		if err := s.checkErrorName(f); err != nil {
			return err
		}
		inst = append(inst, &installedFault{Fault: f})
	}
	s.mu.Lock()
	s.faults = inst
	s.mu.Unlock()
	return nil
}

// ClearFaults removes the programmatic faults.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Calls returns a copy of every attempt seen so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount returns how many attempts match f.
func (s *Server) CallCount(f CallFilter) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if f.Kind != "" && f.Kind != c.Kind ||
			f.API != "" && f.API != c.API ||
			f.Model != "" && !modelMatches(f.Model, c.Model) ||
			f.Provider != "" && !providerMatches(f.Provider, c.Provider) ||
			f.Status != 0 && f.Status != c.Status {
			continue
		}
		n++
	}
	return n
}

// Reset forgets the recorded calls, the programmatic faults, every
// fault's Times counter and the stored responses.
func (s *Server) Reset() {
	s.mu.Lock()
	s.calls = nil
	s.faults = nil
	s.hdrFaults = map[string]int{}
	s.stored = map[string]*storedResponse{}
	s.mu.Unlock()
}

// record keeps an attempt made on request r.
func (s *Server) record(r *http.Request, c Call) {
	c.Time = time.Now()
	c.Path, c.Method, c.API = r.URL.Path, r.Method, apiOf(r.URL.Path)
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *Server) checkErrorName(f Fault) error {
	if f.Action == FaultError {
		if _, ok := s.errs[f.ErrorName]; !ok {
			return fmt.Errorf("%w: unknown recorded error %q (see testdata/errors)", ErrFaultSyntax, f.ErrorName)
		}
	}
	return nil
}

// plan picks the faults for one attempt: the delays of every matching fault
// add up and the first matching fault with an action decides the outcome.
// Each matching fault uses up one of its Times.
func (s *Server) plan(hdr []Fault, model, endpoint string) (time.Duration, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delay time.Duration
	var act *Fault
	use := func(f Fault, used *int) {
		if !f.matches(model, endpoint) || f.Times > 0 && *used >= f.Times {
			return
		}
		*used++
		delay += f.Delay
		if act == nil && f.Action != FaultNone {
			ff := f
			act = &ff
		}
	}
	for _, f := range hdr {
		key := f.String()
		n := s.hdrFaults[key]
		use(f, &n)
		s.hdrFaults[key] = n
	}
	for _, inst := range s.faults {
		use(inst.Fault, &inst.used)
	}
	return delay, act
}

// headerFaults parses the request's X-Sim-Fault values.
func (s *Server) headerFaults(r *http.Request) ([]Fault, error) {
	var out []Fault
	for _, v := range r.Header.Values(FaultHeader) {
		fs, err := ParseFaults(v)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			if err := s.checkErrorName(f); err != nil {
				return nil, err
			}
		}
		out = append(out, fs...)
	}
	return out, nil
}

// sleep waits d unless the client goes away or the server closes first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// block waits until the client goes away or the server closes.
func (s *Server) block(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
	}
}

func (s *Server) track(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.wg.Add(1)
		defer s.wg.Done()
		select {
		case <-s.done:
			http.Error(w, "simulator closed", http.StatusServiceUnavailable)
			return
		default:
		}
		h(w, r)
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /openrouter/api/v1/chat/completions", s.track(s.handleOpenRouter))
	mux.HandleFunc("GET /openrouter/api/v1/models", s.track(s.handleORModels))
	mux.HandleFunc("GET /openrouter/api/v1/models/{author}/{slug}/endpoints", s.track(s.handleOREndpoints))
	mux.HandleFunc("GET /openrouter/api/v1/endpoints/zdr", s.track(s.handleORZDR))
	mux.HandleFunc("POST /vercel/v1/chat/completions", s.track(s.handleVercel))
	mux.HandleFunc("GET /vercel/v1/models", s.track(s.handleVercelModels))
	mux.HandleFunc("POST /openai/v1/chat/completions", s.track(s.handleOpenAI))
	mux.HandleFunc("POST /anthropic/v1/messages", s.track(s.handleAnthropic))
	mux.HandleFunc("POST /openai/v1/responses", s.track(s.handleOpenAIResponses))
	mux.HandleFunc("GET /openai/v1/realtime", s.track(s.handleOpenAIRealtime))
	mux.HandleFunc("GET /openai/v1/responses/{id}", s.track(s.handleOpenAIResponseGet))
	mux.HandleFunc("DELETE /openai/v1/responses/{id}", s.track(s.handleOpenAIResponseDelete))
	mux.HandleFunc("POST /openrouter/api/v1/responses", s.track(s.handleORResponses))
	mux.HandleFunc("POST /openrouter/api/v1/messages", s.track(s.handleORMessages))
	mux.HandleFunc("POST /vercel/v1/messages", s.track(s.handleVercelMessages))
	mux.HandleFunc("POST /vercel/v1/responses", s.track(s.handleVercelResponses))
	s.inboundRoutes(mux)
	s.azureRoutes(mux)
	s.bedrockRoutes(mux)
	return mux
}

// ---- shared wire helpers ----

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"simulator: encode failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// simError answers a problem with the simulator request itself (bad fault
// header, unreadable body) in OpenAI's error shape with type simulator_error.
func simError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": "simulator_error", "param": nil, "code": nil,
	}})
}

// chatMessage is an OpenAI or Anthropic message; content is a string or an
// array of parts/blocks with a text field.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func contentChars(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len([]rune(s))
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		n := 0
		for _, p := range parts {
			n += len([]rune(p.Text))
		}
		return n
	}
	return 0
}

// estimateTokens is ceil(chars/4), the simulator's deterministic tokenizer.
func estimateTokens(chars int) int { return int(math.Ceil(float64(chars) / 4)) }

func promptTokens(system json.RawMessage, msgs []chatMessage) int {
	n := contentChars(system)
	for _, m := range msgs {
		n += contentChars(m.Content)
	}
	return estimateTokens(n)
}

// answerText is the deterministic completion: who served it.
func answerText(model, provider string) string {
	return "served by " + model + " via " + provider
}

// pieces splits the answer into stream chunks, one word each.
func pieces(text string) []string {
	words := strings.Split(text, " ")
	for i := range words[:len(words)-1] {
		words[i] += " "
	}
	return words
}

func cost(ep Endpoint, in, out int) float64 {
	return (float64(in)*ep.PriceIn + float64(out)*ep.PriceOut) / 1e6
}

// readRequest reads a request's fault headers and its JSON body into q. On
// a bad one it answers 400 — a bad fault header as the simulator's own
// error, a bad body in the upstream's shape (bad) — and ok is false.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, q any, bad func(error) any) (hdr []Fault, ok bool) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return nil, false
	}
	if err := decodeBody(r, q); err != nil {
		writeJSON(w, http.StatusBadRequest, bad(err))
		return nil, false
	}
	return hdr, true
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %w", err)
	}
	return nil
}

// ---- streaming ----

type sseWriter struct {
	s           *Server
	w           http.ResponseWriter
	ctx         context.Context
	fl          http.Flusher
	contentType string
	chunks      int
	started     bool
}

// newSSE starts nothing yet: the headers leave with the first write.
func (s *Server) newSSE(w http.ResponseWriter, r *http.Request, contentType string) *sseWriter {
	fl, _ := w.(http.Flusher)
	return &sseWriter{s: s, w: w, ctx: r.Context(), fl: fl, contentType: contentType}
}

func (e *sseWriter) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", e.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	e.w.WriteHeader(http.StatusOK)
	e.flush()
}

func (e *sseWriter) flush() {
	if e.fl != nil {
		e.fl.Flush()
	}
}

// send writes one event (event name optional) and flushes; it returns false
// once the client is gone or the server closes.
func (e *sseWriter) send(event string, data []byte) bool {
	e.start()
	if e.chunks > 0 && !e.s.sleep(e.ctx, e.s.cfg.ChunkDelay) {
		return false
	}
	var b strings.Builder
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := io.WriteString(e.w, b.String()); err != nil {
		return false
	}
	e.flush()
	e.chunks++
	return e.ctx.Err() == nil
}

// comment writes an SSE comment line (a keep-alive) and flushes; it is not
// a chunk, so no chunk delay precedes it.
func (e *sseWriter) comment(text string) bool {
	e.start()
	if _, err := io.WriteString(e.w, ": "+text+"\n\n"); err != nil {
		return false
	}
	e.flush()
	return e.ctx.Err() == nil
}

// cut drops the connection without finishing the response.
func cut() { panic(http.ErrAbortHandler) }

// ---- fault behaviours shared by every upstream ----

// serveBehaviour runs the faults that take over a served attempt (everything
// but the error answers). It returns true when it answered. body is the
// full non-stream answer (cut_after sends half of it).
func (s *Server) serveBehaviour(w http.ResponseWriter, r *http.Request, f *Fault, stream bool, body []byte) bool {
	if f == nil {
		return false
	}
	ctx := r.Context()
	switch f.Action {
	case FaultHang:
		s.block(ctx)
		cut() // never answer, not even an empty 200 when the server closes
		return true
	case FaultHeadersThenNothing:
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		s.block(ctx)
		cut()
		return true
	case FaultGarbage:
		if stream {
			e := s.newSSE(w, r, "text/event-stream")
			e.send("", []byte(`{"id":"gen-garbage","choices":[{"delta":{"content":"par`))
			e.send("", []byte("\x00not json at all}}"))
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-garbage","choices":[{"message":{"content":"unterminated`)
		return true
	case FaultFiltered:
		// A chat completion the provider's content filter stopped: a 200
		// whose finish_reason is content_filter, a value the chat
		// completions API documents. Other shapes answer as usual.
		filtered := bytes.Replace(body, []byte(`"finish_reason":"stop"`), []byte(`"finish_reason":"content_filter"`), 1)
		if stream || bytes.Equal(filtered, body) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(filtered)
		return true
	case FaultSlowStream:
		if stream {
			e := s.newSSE(w, r, "text/event-stream")
			for i := 0; ; i++ {
				if !e.send("", []byte(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"."},"finish_reason":null}]}`)) {
					cut()
				}
				if !s.sleep(ctx, s.cfg.SlowStreamInterval) {
					cut()
				}
			}
		}
		// Non-stream: headers, then JSON-legal leading whitespace forever.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		for {
			if _, err := io.WriteString(w, " "); err != nil {
				cut()
			}
			if fl != nil {
				fl.Flush()
			}
			if !s.sleep(ctx, s.cfg.SlowStreamInterval) {
				cut()
			}
		}
	case FaultCutAfter:
		if !stream {
			// Promise the whole body, deliver half, drop the connection.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:len(body)/2])
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			cut()
		}
	}
	return false
}

// hugeMessage is ~10 MB of text for the huge_error fault, made once and
// only read after.
var hugeMessage = sync.OnceValue(func() []byte { return bytes.Repeat([]byte("x"), 10<<20) })

// writeRecorded replays a recorded error answer byte for byte.
func writeRecorded(w http.ResponseWriter, rec errorbodies.Recording) {
	for k, v := range rec.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(rec.Body)))
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// failure is a failed attempt's answer, in the upstream's own shape.
type failure struct {
	status int
	rec    *errorbodies.Recording
	body   []byte
	// huge, when set, is written into body at hugeAt: the huge_error
	// fault's message, sent without building a 10 MB body per attempt, so
	// that its headers leave at once.
	huge   []byte
	hugeAt int
}

// message is the failure's error message: error.message of its body (or
// message, Vercel's and Anthropic's inner shape), else the status text.
func (f failure) message() string {
	body := f.body
	if f.rec != nil {
		body = f.rec.Body
	}
	var probe struct {
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if f.huge == nil && json.Unmarshal(body, &probe) == nil {
		if probe.Error != nil && probe.Error.Message != "" {
			return probe.Error.Message
		}
		if probe.Message != "" {
			return probe.Message
		}
	}
	return http.StatusText(f.status)
}

func (f failure) write(w http.ResponseWriter) {
	if f.rec != nil {
		writeRecorded(w, *f.rec)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(f.body)+len(f.huge)))
	w.WriteHeader(f.status)
	if f.huge == nil {
		_, _ = w.Write(f.body)
		return
	}
	_, _ = w.Write(f.body[:f.hugeAt])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	_, _ = w.Write(f.huge)
	_, _ = w.Write(f.body[f.hugeAt:])
}

// failWith builds the answer of an attempt failed by fault f, using shape to
// render status faults in the upstream's error format.
func (s *Server) failWith(f *Fault, shape func(status int, msg string) any, provider string) failure {
	switch f.Action {
	case FaultError:
		rec := s.errs[f.ErrorName]
		return failure{status: rec.Status, rec: &rec}
	case FaultHugeError:
		st := f.Status
		if st == 0 {
			st = http.StatusInternalServerError
		}
		// Marshal a placeholder and write the ~10 MB message where it
		// stands: encoding it through encoding/json, or copying it into
		// each body, is needlessly slow.
		const mark = "@@huge@@"
		b, _ := json.Marshal(shape(st, mark))
		at := bytes.Index(b, []byte(mark))
		return failure{status: st, body: slices.Concat(b[:at], b[at+len(mark):]), huge: hugeMessage(), hugeAt: at}
	default:
		msg := fmt.Sprintf("simulated fault: %s %d from %s", http.StatusText(f.Status), f.Status, provider)
		b, _ := json.Marshal(shape(f.Status, msg))
		return failure{status: f.Status, body: b}
	}
}

func (s *Server) nextID(prefix string) string {
	return fmt.Sprintf("%s%06d", prefix, s.seq.Add(1))
}
