package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
)

// Response headers sluice adds. Streams carry only the request id (their
// headers leave before the upstream has said who serves): correlate a stream
// with its request-log row by X-Request-Id.
const (
	HeaderRequestID      = "X-Request-Id"
	HeaderServedModel    = "X-Sluice-Served-Model"
	HeaderServedProvider = "X-Sluice-Served-Provider"
	HeaderUpstream       = "X-Sluice-Upstream"
	HeaderDegraded       = "X-Sluice-Degraded"
	HeaderCache          = "X-Sluice-Cache"
	HeaderSessionID      = "X-Session-Id"
	// HeaderCountEstimated is "true" on a token count sluice estimated
	// rather than the upstream counted (absent otherwise).
	HeaderCountEstimated = "X-Sluice-Count-Estimated"
	// HeaderMessagesRequestID carries the request id again on the Messages
	// API's answers, under the name Anthropic's clients read it by.
	HeaderMessagesRequestID = "Request-Id"
	// HeaderFallback is "true" on a non-streaming success that came from an
	// attempt after the first (absent otherwise). Streams do not carry it:
	// correlate them with their row by X-Request-Id.
	HeaderFallback = "X-Sluice-Fallback"
)

// This file holds every write of the request path to the caller.

// answer writes what the request ended on: the answer of the attempt that
// answered, or the failure of the last attempt (the upstream's own error
// answer, status and body unchanged when the upstream speaks the caller's
// API, else its status, message, type and code retold in the caller's API's
// shape; or the gateway's error). A stream has
// already been relayed by its exchange; there is nothing left to write.
func (s *Server) answer(w http.ResponseWriter, t *turn) {
	a := t.final
	switch {
	case a.out.streamed:
		t.status = a.out.status
	case a.out.gone:
		// Nobody to answer; recorded as 499.
	case a.out.cut:
		s.answerError(w, t, a.out.apiErr) // 503 server_shutdown
	case a.out.answered:
		t.status = http.StatusOK
		h := w.Header()
		h.Set("Content-Type", "application/json")
		if a.fallback(t) {
			h.Set(HeaderFallback, "true")
		}
		h.Set(HeaderUpstream, a.target.Upstream)
		setServed(h, t.served.model, t.served.provider)
		setDegraded(h, a.compiled.Degraded())
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(a.out.body)
	case a.out.relay != nil:
		rel := a.out.relay
		t.status = rel.status
		h := w.Header()
		body := rel.body
		c := connectors.Dialect(a.compiled.Upstream.Connector, a.compiled.Outcome.NativeModel)
		if t.api == connectors.APIMessages && !connectors.ErrorsNative(c, t.api) {
			// A Messages client reads errors in the Messages shape: the
			// upstream's status and message, retold.
			body = connectors.MessagesError(rel.status, rel.body)
			h.Set("Content-Type", "application/json")
		} else if t.api == connectors.APIResponses && !connectors.ErrorsNative(c, t.api) {
			body = connectors.ResponsesError(rel.status, rel.body)
			h.Set("Content-Type", "application/json")
		} else if t.api == connectors.APIChat && !connectors.ErrorsNative(c, t.api) {
			// A chat client reads errors in the chat shape: the upstream's
			// status, message, type and code, retold (an upstream that
			// speaks chat but answers errors in a shape of its own, as
			// Bedrock's Converse does, too).
			body = connectors.ChatError(rel.status, rel.body)
			h.Set("Content-Type", "application/json")
		} else {
			body = jsonError(rel.status, rel.header.Get("Content-Type"), body)
			h.Set("Content-Type", "application/json")
		}
		if ra := rel.header.Get("Retry-After"); ra != "" {
			h.Set("Retry-After", ra)
		}
		w.WriteHeader(rel.status)
		_, _ = w.Write(body)
	default:
		s.answerError(w, t, a.out.apiErr)
	}
}

// maxRetoldError bounds how much of an upstream's non-JSON error body is
// retold in the message of the JSON error that replaces it.
const maxRetoldError = 512

// jsonError returns an upstream's error body as the caller gets it: JSON
// as the upstream sent it, anything else (an HTML page from a proxy in
// front of the upstream, say) retold as an upstream_error in the API's
// error shape, its text cut to maxRetoldError bytes. The caller's answer
// is always application/json with nosniff, never a page that a browser
// would render on the gateway's origin.
func jsonError(status int, contentType string, body []byte) []byte {
	if json.Valid(body) {
		return body
	}
	text := strings.ToValidUTF8(string(body[:min(len(body), maxRetoldError)]), "")
	e := apierr.New(apierr.CodeUpstreamError, fmt.Sprintf("the upstream answered %d with a %q body: %s", status, contentType, text))
	return e.Body()
}

// fallback reports whether the answer came from an attempt after the first
// dial: a failover, the safety net, or a pool's tail reached by planning.
func (a *attempt) fallback(t *turn) bool { return t.sent > 1 || a.reason != "" }

// answerError answers with a gateway error. A refusal (the gateway declining
// to serve, rather than an upstream failing) is recorded and counted.
func (s *Server) answerError(w http.ResponseWriter, t *turn, e *apierr.Error) {
	if e == errClientGone {
		return // nobody to answer; recorded as 499
	}
	t.status = e.Status()
	if e.Refusal() {
		t.refusal = e
		s.metrics.Refused.WithLabelValues(e.Code).Inc()
	}
	writeAPIError(w, t.api, e)
}

// answerCached replays a cached answer.
func (s *Server) answerCached(w http.ResponseWriter, t *turn) {
	hit := t.cached
	t.status = http.StatusOK
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderCache, "hit")
	setServed(h, hit.servedModel, hit.servedProvider)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(hit.body)
}

func setServed(h http.Header, model, provider string) {
	if model != "" {
		h.Set(HeaderServedModel, model)
	}
	if provider != "" {
		h.Set(HeaderServedProvider, provider)
	}
}

func setDegraded(h http.Header, degraded []string) {
	if len(degraded) > 0 {
		h.Set(HeaderDegraded, strings.Join(degraded, ","))
	}
}

// Stream relay ------------------------------------------------------------

var (
	sseData = []byte("data: ")
	sseEnd  = []byte("\n\n")
	// streamCut ends a stream the upstream cut; shutdownCut one the server
	// cut at shutdown.
	streamCut = newInBandError("upstream_stream_cut",
		"the upstream stream ended before it completed; the answer is incomplete")
	shutdownCutEvent = newInBandError(apierr.CodeServerShutdown,
		"the gateway is shutting down and ended the stream before it completed; the answer is incomplete")
)

// inBandError is an error told inside a stream, in each API's shape: a
// chat completions data chunk, a Messages API error event, a Responses API
// error event.
type inBandError struct{ chat, messages, responses []byte }

// newInBandError renders an in-band error of a code (message: plain text,
// no characters JSON escapes).
func newInBandError(code, message string) inBandError {
	return inBandError{
		chat: []byte(`{"error":{"message":"` + message + `","type":"api_error","code":"` + code + `"}}`),
		messages: connectors.AppendEvent(nil, "error",
			[]byte(`{"type":"error","error":{"type":"api_error","message":"`+message+`","code":"`+code+`"}}`)),
		responses: connectors.AppendEvent(nil, "error",
			[]byte(`{"type":"error","code":"`+code+`","message":"`+message+`","param":null}`)),
	}
}

// streamAnswer writes a relayed stream to the caller: its headers once the
// upstream's first event is known good, each chunk as one SSE data event,
// flushed when the relay is about to wait on the upstream.
type streamAnswer struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	start time.Time
	frame []byte
	// ttft is the time to the first chunk written (0 before it).
	ttft time.Duration
	// pending reports chunks written since the last flush.
	pending bool
	// flushed reports the first flush done (the header written).
	flushed bool
	// err is the write error that ends the relay: the caller went away.
	err error
	// events: each chunk is a whole server-sent event, its event line
	// included (the Messages and Responses APIs'); otherwise a chunk is an
	// event's data.
	events bool
	// api is the API the stream answers.
	api connectors.API
	// writeTimeout is [server] write_timeout; deadline the write deadline
	// set last (renewWriteDeadline).
	writeTimeout time.Duration
	deadline     time.Time
}

// beginStream commits the stream's headers: from here on the request cannot
// switch targets.
func (s *Server) beginStream(w http.ResponseWriter, t *turn, a *attempt) *streamAnswer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(HeaderUpstream, a.target.Upstream)
	setDegraded(h, a.compiled.Degraded())
	// The Date header net/http would format inside its deepest frame, the
	// one that writes the headers at the first flush; formatted here, that
	// frame stays within the 8 KiB stack an open stream then keeps.
	h["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	w.WriteHeader(http.StatusOK)
	return &streamAnswer{w: w, rc: http.NewResponseController(w), start: t.start, events: t.api == connectors.APIMessages || t.api == connectors.APIResponses, api: t.api,
		writeTimeout: t.snap.Config.Server.WriteTimeout.Duration}
}

// emit writes one chunk: "data: " + chunk + blank line (an event of its
// own, with events set: chunk + blank line), in one write.
func (sa *streamAnswer) emit(p []byte) error {
	if sa.ttft == 0 {
		sa.ttft = max(time.Since(sa.start), time.Nanosecond)
	}
	if sa.events {
		sa.frame = append(append(sa.frame[:0], p...), sseEnd...)
	} else {
		sa.frame = append(append(append(sa.frame[:0], sseData...), p...), sseEnd...)
	}
	sa.renewWriteDeadline()
	if _, err := sa.w.Write(sa.frame); err != nil {
		sa.err = err
		return err
	}
	sa.pending = true
	return nil
}

// flush sends the chunks written since the last flush, if any; it returns
// the write error that ends the relay.
func (sa *streamAnswer) flush() error {
	if !sa.pending {
		return sa.err
	}
	sa.pending = false
	sa.renewWriteDeadline()
	var err error
	if !sa.flushed {
		// The first flush writes the header, in net/http's
		// chunkWriter.writeHeader, whose frame is 2.8 KiB: on a goroutine
		// of its own rather than at the bottom of the relay on the
		// connection's, whose stack the stream keeps (stack_test.go).
		sa.flushed = true
		connectors.OwnStack(func() { err = sa.rc.Flush() })
	} else {
		err = sa.rc.Flush()
	}
	if err != nil && sa.err == nil {
		sa.err = err
	}
	return sa.err
}

// cut tells the caller in-band that the stream ended before it completed;
// the stream then ends without [DONE] (a Messages stream with an error
// event and no message_stop).
func (sa *streamAnswer) cut() { sa.tell(&streamCut) }

// tell ends the stream with an in-band error in the shape of its API.
func (sa *streamAnswer) tell(e *inBandError) {
	ev := e.chat
	switch sa.api {
	case connectors.APIMessages:
		ev = e.messages
	case connectors.APIResponses:
		ev = e.responses
	}
	if sa.emit(ev) == nil {
		_ = sa.flush()
	}
}

func writeError(w http.ResponseWriter, e *apierr.Error) {
	apierr.Write(w, e)
	flushIfCut(w, e)
}

// flushIfCut sends a shutdown answer (server_shutdown) at once: net/http
// sends what a handler wrote only after it returns, and shutdown closes the
// connections as soon as every cut request's handler has left, which would
// drop a 503 still in the response's buffer.
func flushIfCut(w http.ResponseWriter, e *apierr.Error) {
	if e.Code == apierr.CodeServerShutdown {
		_ = http.NewResponseController(w).Flush()
	}
}

// messagesShape reports whether an API answers in the Messages API's shape.
func messagesShape(api connectors.API) bool {
	return api == connectors.APIMessages || api == connectors.APICountTokens
}

// writeAPIError writes an error in the shape of the request's API.
func writeAPIError(w http.ResponseWriter, api connectors.API, e *apierr.Error) {
	if messagesShape(api) {
		apierr.WriteMessages(w, e)
	} else {
		apierr.Write(w, e)
	}
	flushIfCut(w, e)
}

func notFound(r *http.Request) *apierr.Error {
	return apierr.New(apierr.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
}

func internalError() *apierr.Error {
	return apierr.New(apierr.CodeInternal, "internal error; the gateway log has the details under the request id")
}
