package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/snapshot"
)

// The Responses API over a WebSocket: GET /v1/responses with an upgrade,
// as Codex asks for it when its provider sets supports_websockets (with
// OpenAI-Beta: responses_websockets=…). Each text frame the caller sends is
// a response.create event — a POST /v1/responses body with "type" beside
// it — and the response's stream events come back as text frames, one
// event a frame. The connection serves one response at a time, in order.
//
// Each frame is served by the very request path of POST /v1/responses
// (serve): the frame becomes the request's body and the events the stream
// writes become frames (socketWriter), so that placement of stored
// responses, routing, budgets, rate limits and the row are the HTTP path's.
// The row's api is rowAPIResponsesWS. The upstreams are asked over HTTP: no
// upstream sluice speaks to has a WebSocket mode of its own.
//
// What only the socket does:
//   - generate: false (a warm-up) is answered here, with response.created
//     and response.completed of an empty response, and contacts no upstream
//     and writes no row; the next frame may continue it.
//   - A continuation of the connection's last response that no upstream
//     stores (store false, a marketplace, a warm-up) is sent whole: the last
//     response's input and output, then the frame's input, without
//     previous_response_id. This is the WebSocket mode's connection-local
//     state; a stored response is continued by previous_response_id, placed
//     where it is stored as over HTTP.
//   - A refusal is an "error" event (type, status, and the error in the
//     Responses API's shape); the connection stays open for the next frame.
//
// wire format sources: testdata/recorded/responses-ws/SOURCES.md.

// rowAPIResponsesWS is the row's api of a response created over a
// Responses WebSocket.
const rowAPIResponsesWS = "responses_ws"

// socketQueue is how many frames the reader holds while a response is
// being served (the protocol serves one at a time): a caller that sends
// more waits on its own socket.
const socketQueue = 1

// responsesSocket serves GET /v1/responses. Authentication already ran (a
// missing or unknown key got 401). The upgrade is refused with 426
// websocket_unavailable while the key's upstream does not speak the
// Responses API (socketServable), so that the caller falls back to HTTP.
func (s *Server) responsesSocket(w http.ResponseWriter, r *http.Request) {
	a := authFrom(r.Context())
	if !isUpgrade(r) {
		writeError(w, notFound(r))
		return
	}
	if shutdownCut(r) {
		apierr.Write(w, errServerShutdown)
		return
	}
	if !socketServable(a.snap, a.key) {
		w.Header().Set("Upgrade", "websocket")
		apierr.Write(w, apierr.New(apierr.CodeWebSocketUnavailable,
			"this key's upstream does not speak the Responses API, so it is not served over a WebSocket; use POST /v1/responses"))
		return
	}
	// The server's read and write deadlines of the request must not bound
	// the socket, which lives past them.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := acceptSession(w, r, nil, a.snap.Config.Server.MaxBodyBytes)
	if err != nil {
		return // Accept answered the caller
	}
	defer conn.CloseNow()
	ss := &socketSession{s: s, conn: conn, r: r, secret: access.BearerToken(r), header: socketHeader(r.Header)}
	ss.run()
}

// socketServable reports whether the key's upstream, where its requests
// for a plain model go, speaks the Responses API itself. A key whose
// upstream does not (Anthropic's, which sluice reaches by translation) is
// refused the upgrade and falls back to HTTP, where every route is served.
func socketServable(snap *snapshot.Snapshot, k *profiles.Key) bool {
	u := snap.Upstreams[snap.Config.UpstreamFor(k)]
	return u != nil && connectors.SpeaksNatively(u.Connector, connectors.APIResponses)
}

// socketHeader is the handshake's headers each frame's request carries (a
// session header, a blind caller key), without the upgrade's own.
func socketHeader(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		if strings.HasPrefix(k, "Sec-Websocket-") {
			delete(out, k)
		}
	}
	for _, k := range []string{"Upgrade", "Connection", "Content-Length", "Transfer-Encoding"} {
		delete(out, k)
	}
	out.Set("Content-Type", "application/json")
	return out
}

// socketSession is one Responses WebSocket.
type socketSession struct {
	s      *Server
	conn   *websocket.Conn
	r      *http.Request // the handshake
	secret string
	header http.Header
	// ctx is the frames' requests' context: the handshake's (which the
	// server cuts at shutdown), ended when the caller leaves, so that a
	// response the caller left stops asking its upstream.
	ctx   context.Context
	leave context.CancelFunc
	// last is the connection's last response, for a continuation that no
	// upstream stores.
	last lastResponse
}

// lastResponse is what the connection keeps of its last response: its id,
// the whole input it was created from and its output items.
type lastResponse struct {
	id     string
	input  []json.RawMessage
	output []json.RawMessage
}

// socketFrame is one message the caller sent.
type socketFrame struct {
	text bool
	data []byte
}

// run reads the caller's frames and serves them in order until the caller
// closes, the connection idles past [server] idle_timeout, or the server
// shuts down (a close frame with 1001).
func (ss *socketSession) run() {
	frames := make(chan socketFrame, socketQueue)
	// The reader answers pings as it reads; its context is not the
	// request's, which the server cuts at shutdown: the close frame is then
	// sent and read on a live connection.
	readCtx, stopRead := context.WithCancel(context.Background())
	defer stopRead()
	ss.ctx, ss.leave = context.WithCancel(ss.r.Context())
	defer ss.leave()
	go func() {
		defer close(frames)
		for {
			typ, b, err := ss.conn.Read(readCtx)
			if err != nil {
				ss.leave()
				return
			}
			select {
			case frames <- socketFrame{text: typ == websocket.MessageText, data: b}:
			case <-readCtx.Done():
				return
			}
		}
	}()
	idle := ss.s.snap.Load().Config.Server.IdleTimeout.Duration
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return // the caller closed, or the connection failed
			}
			ss.serveFrame(f)
			if shutdownCut(ss.r) {
				ss.closeAtShutdown()
				return
			}
			timer.Reset(idle)
		case <-timer.C:
			_ = ss.conn.Close(websocket.StatusNormalClosure, "idle past the gateway's idle_timeout")
			return
		case <-ss.r.Context().Done():
			if shutdownCut(ss.r) {
				ss.closeAtShutdown()
			}
			return
		}
	}
}

// closeAtShutdown sends the close frame of a server shutting down.
func (ss *socketSession) closeAtShutdown() {
	_ = ss.conn.Close(websocket.StatusGoingAway, "the gateway is shutting down")
}

// serveFrame serves one frame: a response.create through the Responses
// request path, anything else answered with an error event.
func (ss *socketSession) serveFrame(f socketFrame) {
	if !f.text {
		ss.sendError(apierr.New(apierr.CodeInvalidRequest, "binary frames are not part of the Responses WebSocket protocol; send response.create as a text frame"))
		return
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(f.data, &ev); err != nil || ev == nil {
		ss.sendError(apierr.New(apierr.CodeInvalidJSON, "a frame must be a JSON object (a response.create event)"))
		return
	}
	var typ string
	_ = json.Unmarshal(ev["type"], &typ)
	if typ != "response.create" {
		ss.sendError(&apierr.Error{Code: apierr.CodeInvalidRequest, Param: "type",
			Message: "unsupported event type " + quoteShort(typ) + "; the Responses WebSocket takes response.create"})
		return
	}
	if b, ok := ev["background"]; ok && string(b) == "true" {
		ss.sendError(&apierr.Error{Code: apierr.CodeInvalidRequest, Param: "background",
			Message: "background responses are not served over a WebSocket"})
		return
	}
	delete(ev, "type")
	warmup := string(ev["generate"]) == "false"
	delete(ev, "generate")
	delete(ev, "stream_options")
	ev["stream"] = json.RawMessage("true")
	input := ss.continueLocally(ev)
	if warmup {
		ss.warmup(ev, input)
		return
	}
	body, err := json.Marshal(ev)
	if err != nil {
		ss.sendError(internalError())
		return
	}
	snap := ss.s.snap.Load()
	k := access.Key(snap.Config, ss.secret)
	if k == nil { // a reload removed the key
		ss.sendError(apierr.New(apierr.CodeUnauthorized, "the connection's API key is no longer known to the gateway"))
		_ = ss.conn.Close(websocket.StatusPolicyViolation, "API key no longer valid")
		return
	}
	now := time.Now()
	ctx := context.WithValue(ss.ctx, authCtx, authenticated{key: k, snap: snap, id: newRequestID(now), start: now, socket: true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/responses", bytes.NewReader(body))
	if err != nil {
		ss.sendError(internalError())
		return
	}
	req.Header, req.RemoteAddr, req.Host = ss.header.Clone(), ss.r.RemoteAddr, ss.r.Host
	sw := &socketWriter{conn: ss.conn, h: http.Header{}, timeout: snap.Config.Server.WriteTimeout.Duration}
	ss.s.serve(sw, req, connectors.APIResponses)
	sw.finish()
	if sw.id != "" {
		ss.last = lastResponse{id: sw.id, input: input, output: sw.output}
	}
}

// continueLocally sends a continuation of the connection's last response
// whole when no upstream stores that response: the last response's input
// and output, then the frame's own input, in place of previous_response_id.
// It returns the request's whole input (nil when it is not a list the
// connection can extend).
func (ss *socketSession) continueLocally(ev map[string]json.RawMessage) []json.RawMessage {
	input := inputItems(ev["input"])
	var prev string
	_ = json.Unmarshal(ev["previous_response_id"], &prev)
	if prev == "" || prev != ss.last.id {
		return input
	}
	if _, stored := ss.s.holderOf(ss.r.Context(), prev); stored {
		return input // placed where it is stored (holders.go)
	}
	whole := make([]json.RawMessage, 0, len(ss.last.input)+len(ss.last.output)+len(input))
	whole = append(append(append(whole, ss.last.input...), ss.last.output...), input...)
	ev["input"], _ = json.Marshal(whole)
	delete(ev, "previous_response_id")
	return whole
}

// inputItems reads a Responses input as a list of items: a string is one
// user message.
func inputItems(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) == nil {
		return items
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		m, _ := json.Marshal(map[string]string{"type": "message", "role": "user", "content": text})
		return []json.RawMessage{m}
	}
	return nil
}

// warmup answers generate: false: an empty response, created and
// completed, that the next frame may continue. No upstream is asked.
func (ss *socketSession) warmup(ev map[string]json.RawMessage, input []json.RawMessage) {
	id := "resp_" + newRequestID(time.Now())
	model := ev["model"]
	if len(model) == 0 {
		model = json.RawMessage("null")
	}
	obj := func(status string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": model, "output": []any{}, "usage": nil})
		return b
	}
	timeout := ss.s.snap.Load().Config.Server.WriteTimeout.Duration
	for i, e := range []struct {
		typ, status string
	}{{"response.created", "in_progress"}, {"response.completed", "completed"}} {
		b, _ := json.Marshal(map[string]any{"type": e.typ, "sequence_number": i, "response": obj(e.status)})
		if writeFrame(ss.conn, timeout, b) != nil {
			return
		}
	}
	ss.last = lastResponse{id: id, input: input}
}

// sendError sends a refusal as an error event.
func (ss *socketSession) sendError(e *apierr.Error) {
	_ = writeFrame(ss.conn, ss.s.snap.Load().Config.Server.WriteTimeout.Duration, errorEvent(e.Status(), e.Body()))
}

// errorEvent is the error event of a refusal: its type, the HTTP status
// the refusal would have had, and the error object of the Responses API's
// error body (message, type, param and sluice's code).
func errorEvent(status int, body []byte) []byte {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Error) == 0 {
		b.Error, _ = json.Marshal(map[string]any{"message": "the upstream's error answer was not JSON", "type": "api_error",
			"code": apierr.CodeUpstreamError, "param": nil})
	}
	out, _ := json.Marshal(map[string]any{"type": "error", "status": status, "error": b.Error})
	return out
}

// quoteShort quotes s for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// socketWriter is the http.ResponseWriter a frame's request is served
// with: each event of the Responses stream it is written becomes one text
// frame (the event's data), and an answer that is no stream (a refusal
// before any event) becomes an error event at finish. It keeps what the
// connection needs of the response: its id and output items.
type socketWriter struct {
	conn    *websocket.Conn
	h       http.Header
	status  int
	stream  bool
	timeout time.Duration
	pending []byte // the stream's bytes after its last whole event
	body    []byte // an answer that is no stream, up to maxSocketBody
	err     error
	id      string
	output  []json.RawMessage
}

// maxSocketBody bounds the error answer a socketWriter keeps.
const maxSocketBody = 1 << 20

// Header implements [http.ResponseWriter.Header].
func (sw *socketWriter) Header() http.Header { return sw.h }

// WriteHeader implements [http.ResponseWriter.WriteHeader].
func (sw *socketWriter) WriteHeader(code int) {
	if sw.status != 0 {
		return
	}
	sw.status = code
	sw.stream = code == http.StatusOK && strings.HasPrefix(sw.h.Get("Content-Type"), "text/event-stream")
}

// Write implements [http.ResponseWriter.Write].
func (sw *socketWriter) Write(p []byte) (int, error) {
	if sw.status == 0 {
		sw.WriteHeader(http.StatusOK)
	}
	if !sw.stream {
		if room := maxSocketBody - len(sw.body); room > 0 {
			sw.body = append(sw.body, p[:min(len(p), room)]...)
		}
		return len(p), nil
	}
	if sw.err != nil {
		return 0, sw.err
	}
	sw.pending = append(sw.pending, p...)
	for {
		end := bytes.Index(sw.pending, []byte("\n\n"))
		if end < 0 {
			break
		}
		ev := sw.pending[:end]
		if data := eventData(ev); len(data) > 0 {
			sw.note(data)
			if err := writeFrame(sw.conn, sw.timeout, data); err != nil {
				sw.err = err
				return 0, err
			}
		}
		sw.pending = sw.pending[end+2:]
	}
	if len(sw.pending) == 0 {
		sw.pending = sw.pending[:0:0] // drop the buffer between events
	}
	return len(p), nil
}

// FlushError implements the flush [http.ResponseController] calls: each
// whole event was sent as it was written.
func (sw *socketWriter) FlushError() error { return sw.err }

// SetWriteDeadline implements the deadline [http.ResponseController] sets:
// each frame's write has its own (writeFrame).
func (sw *socketWriter) SetWriteDeadline(time.Time) error { return nil }

// eventData is the data of a server-sent event (its data lines joined),
// nil for none or for [DONE].
func eventData(ev []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		d, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		d = bytes.TrimPrefix(d, []byte(" "))
		if data != nil {
			data = append(data, '\n')
		}
		data = append(data, d...)
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		return nil
	}
	return data
}

// note keeps the response's id and, when it ends, its output items. (Only
// the events that carry the response object are decoded: a delta is not.)
func (sw *socketWriter) note(data []byte) {
	if !bytes.Contains(data, []byte(`"response.created"`)) && !bytes.Contains(data, []byte(`"response.completed"`)) &&
		!bytes.Contains(data, []byte(`"response.incomplete"`)) {
		return
	}
	var ev struct {
		Type     string `json:"type"`
		Response *struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Response == nil {
		return
	}
	switch ev.Type {
	case "response.created":
		sw.id = ev.Response.ID
	case "response.completed", "response.incomplete":
		sw.id, sw.output = ev.Response.ID, ev.Response.Output
	}
}

// finish sends the error event of an answer that was no stream.
func (sw *socketWriter) finish() {
	if sw.stream || sw.status == 0 {
		return
	}
	status := sw.status
	if status < 400 {
		status = http.StatusBadGateway
		sw.body = apierr.New(apierr.CodeUpstreamBadResponse, "the answer was not a stream of events").Body()
	}
	_ = writeFrame(sw.conn, sw.timeout, errorEvent(status, sw.body))
}

var _ http.ResponseWriter = (*socketWriter)(nil)
