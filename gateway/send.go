package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/snapshot"
)

// Bounds on what sluice reads from an upstream.
const (
	// maxErrorBody is the largest upstream error body relayed to the caller;
	// a larger one is replaced by a sluice error (its size alone is a fault).
	maxErrorBody = 1 << 20
	// maxAnswerBody is the largest non-streaming answer accepted.
	maxAnswerBody = 64 << 20
)

// upstreamCall is one HTTP exchange with an upstream.
type upstreamCall struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// readErr explains a failed body read: a deadline if one fired.
func (c *upstreamCall) readErr(err error) error {
	if cause := context.Cause(c.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// firstByteBody stops the first-byte deadline when the first body byte
// arrives: headers alone do not count, so an upstream that sends headers and
// then nothing times out like one that sends nothing.
type firstByteBody struct {
	io.ReadCloser
	timer *time.Timer
	seen  bool
}

func (b *firstByteBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.seen {
		b.seen = true
		b.timer.Stop()
	}
	return n, err
}

// send posts a compiled request to its upstream with the upstream's
// deadlines: first_byte_timeout for the response headers, timeout for the
// whole exchange (a stream's body included). The caller must call
// call.cancel(nil) when done with the body.
func (s *Server) send(ctx context.Context, c *snapshot.Compiled, stream bool, in http.Header) (*upstreamCall, error) {
	up := c.Upstream
	ctx, cancel := context.WithCancelCause(ctx)
	total := time.AfterFunc(up.Config.Timeout.Duration, func() { cancel(errTotal) })
	base := up.Config.BaseURL
	if o, ok := s.opts.UpstreamURLs[up.Config.Name]; ok {
		base = o
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+c.Native.Path, bytes.NewReader(c.Native.Body))
	if err != nil {
		total.Stop()
		cancel(nil)
		return nil, err
	}
	h := req.Header
	for k, v := range c.Native.Header {
		h[k] = v
	}
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	h.Set("User-Agent", "sluice")
	for _, name := range s.snap.Load().Config.Server.ForwardHeaders {
		if v := in.Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = v
		}
	}
	up.Connector.Authorize(h, up.APIKey)
	firstByte := time.AfterFunc(up.Config.FirstByteTimeout.Duration, func() { cancel(errFirstByte) })
	resp, err := s.client.Do(req)
	if err != nil {
		firstByte.Stop()
		total.Stop()
		cause := context.Cause(ctx)
		cancel(nil)
		if cause != nil && !errors.Is(cause, context.Canceled) {
			return nil, cause
		}
		return nil, err
	}
	resp.Body = &firstByteBody{ReadCloser: resp.Body, timer: firstByte}
	return &upstreamCall{resp: resp, ctx: ctx, cancel: func(err error) { firstByte.Stop(); total.Stop(); cancel(err) }}, nil
}

// transportError maps a failed exchange to the caller's error.
func transportError(err error) *apierr.Error {
	switch {
	case errors.Is(err, errFirstByte), errors.Is(err, errTotal), errors.Is(err, context.DeadlineExceeded):
		return apierr.New(apierr.CodeUpstreamTimeout, "the upstream did not answer in time: "+err.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apierr.New(apierr.CodeUpstreamUnavailable, "the upstream closed the connection before its answer was complete")
	default:
		return apierr.New(apierr.CodeUpstreamUnavailable, "the upstream could not be reached")
	}
}

// dispatch sends the compiled request and answers the caller.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, t *turn, c *snapshot.Compiled, cacheKey string) {
	t.row.Attempts = 1
	call, err := s.send(r.Context(), c, t.req.Stream, r.Header)
	if err != nil {
		if clientGone(r.Context()) {
			t.row.Status = 499
			return
		}
		s.metrics.UpstreamErrors.WithLabelValues(c.Upstream.Config.Name, "connection").Inc()
		s.log.Warn("upstream exchange failed", "request_id", t.row.RequestID, "upstream", c.Upstream.Config.Name, "err", err.Error())
		s.failUpstream(w, t, transportError(err))
		return
	}
	defer call.cancel(nil)
	resp := call.resp
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		s.metrics.UpstreamErrors.WithLabelValues(c.Upstream.Config.Name, statusLabel(resp.StatusCode)).Inc()
		s.relayError(w, t, call)
		return
	}
	if t.req.Stream {
		s.relayStream(w, r, t, c, call)
		return
	}
	s.relayAnswer(w, t, c, call, cacheKey)
}

// failUpstream answers with a gateway-made upstream error (not a refusal).
func (s *Server) failUpstream(w http.ResponseWriter, t *turn, e *apierr.Error) {
	t.row.Status = e.Status()
	writeError(w, e)
}

// relayError forwards an upstream's error answer unchanged, body included.
func (s *Server) relayError(w http.ResponseWriter, t *turn, call *upstreamCall) {
	resp := call.resp
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	if err != nil {
		s.failUpstream(w, t, transportError(call.readErr(err)))
		return
	}
	if len(body) > maxErrorBody {
		s.failUpstream(w, t, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's error answer exceeded 1 MiB and was not relayed"))
		return
	}
	t.row.Status = resp.StatusCode
	h := w.Header()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		h.Set("Retry-After", ra)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// relayAnswer reads a non-streaming answer, reads back who served and
// answers the caller.
func (s *Server) relayAnswer(w http.ResponseWriter, t *turn, c *snapshot.Compiled, call *upstreamCall, cacheKey string) {
	raw, err := io.ReadAll(io.LimitReader(call.resp.Body, maxAnswerBody+1))
	if err != nil {
		s.failUpstream(w, t, transportError(call.readErr(err)))
		return
	}
	if len(raw) > maxAnswerBody {
		s.failUpstream(w, t, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's answer exceeded 64 MiB"))
		return
	}
	body, res, err := c.Upstream.Connector.Response(c.Call, raw)
	if err != nil {
		s.log.Warn("upstream answer unreadable", "request_id", t.row.RequestID, "upstream", c.Upstream.Config.Name, "err", err.Error())
		s.failUpstream(w, t, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's answer was not a valid completion"))
		return
	}
	s.served(t, c.Outcome.Chain, res)
	t.row.Status = http.StatusOK
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderUpstream, c.Upstream.Config.Name)
	setServed(h, t.row.ServedModel, t.row.ServedProvider)
	if len(t.row.RoutingDegraded) > 0 {
		h.Set(HeaderDegraded, joinComma(t.row.RoutingDegraded))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	if cacheKey != "" {
		s.cache.Put(cacheKey, &cachedAnswer{body: body, servedModel: t.row.ServedModel, servedProvider: t.row.ServedProvider,
			upstream: c.Upstream.Config.Name, usage: res.Usage})
	}
}

func joinComma(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// Stream relay ------------------------------------------------------------

var (
	sseData   = []byte("data: ")
	sseEnd    = []byte("\n\n")
	streamCut = []byte(`{"error":{"message":"the upstream stream ended before it completed; the answer is incomplete","type":"api_error","code":"upstream_stream_cut"}}`)
)

// relayStream relays a streaming answer chunk by chunk, flushing each as it
// arrives. Once the first chunk has left, nothing can switch to another
// target: a failure is sent in-band as an error event and the stream ends
// without [DONE], so the caller never mistakes a cut stream for a whole one.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, t *turn, c *snapshot.Compiled, call *upstreamCall) {
	st := c.Upstream.Connector.NewStream(c.Call)
	rd := connectors.NewSSEReader(call.resp.Body)
	// Nothing is committed to the caller until the upstream's first event has
	// arrived: a failure before it is answered like a non-streaming failure.
	ev, data, err := rd.Next()
	if err != nil {
		if clientGone(r.Context()) {
			t.row.Status = 499
			return
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.failUpstream(w, t, transportError(call.readErr(err)))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(HeaderUpstream, c.Upstream.Config.Name)
	if len(t.row.RoutingDegraded) > 0 {
		h.Set(HeaderDegraded, joinComma(t.row.RoutingDegraded))
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	first := true
	var writeErr error
	emit := func(p []byte) error {
		if first {
			first = false
			ttft := time.Since(t.start)
			t.row.TTFTMS = float64(ttft.Microseconds()) / 1000
			s.metrics.TTFT.WithLabelValues(c.Upstream.Config.Name).Observe(ttft.Seconds())
		}
		if _, err := w.Write(sseData); err != nil {
			writeErr = err
			return err
		}
		_, _ = w.Write(p)
		if _, err := w.Write(sseEnd); err != nil {
			writeErr = err
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	done, toldInBand := false, false
	var streamErr error
	for {
		done, err = st.Event(ev, data, emit)
		if err != nil {
			// The translator relayed the upstream's error event itself.
			streamErr, toldInBand = err, writeErr == nil
			break
		}
		if done || writeErr != nil {
			break
		}
		if ev, data, err = rd.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				streamErr = call.readErr(err)
			}
			break
		}
	}
	res := st.Result()
	toldInBand = toldInBand || res.StreamError != ""
	s.served(t, c.Outcome.Chain, res)
	switch {
	case writeErr != nil || clientGone(r.Context()):
		t.row.Status = 499 // the caller went away; the upstream request was cancelled with it
	case done && res.StreamError == "":
		t.row.Status = http.StatusOK
	default:
		// Cut, failed or errored mid-stream: say so in-band, then end.
		if streamErr != nil {
			s.log.Warn("stream failed after it started", "request_id", t.row.RequestID, "upstream", c.Upstream.Config.Name, "err", streamErr.Error())
		}
		if !toldInBand {
			_ = emit(streamCut)
		}
		t.row.Status = http.StatusBadGateway
	}
}
