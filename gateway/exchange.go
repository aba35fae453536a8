package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/snapshot"
)

// Fixed header values shared by every upstream request. net/http only reads
// a request's header values, and the connectors' own headers are shared the
// same way, so no request allocates them.
var (
	headerJSON        = []string{"application/json"}
	headerEventStream = []string{"text/event-stream"}
	headerUserAgent   = []string{"sluice"}
)

// Bounds on what sluice reads from an upstream.
const (
	// maxErrorBody is the largest upstream error body relayed to the caller;
	// a larger one is replaced by a sluice error (its size alone is a fault).
	maxErrorBody = 1 << 20
	// maxAnswerBody is the largest non-streaming answer accepted.
	maxAnswerBody = 64 << 20
)

// relayedError is an upstream error answer kept for forwarding.
type relayedError struct {
	status int
	header http.Header
	body   []byte
}

// exchange sends one attempt's compiled request and reads what comes back
// into a.out: a non-streaming answer translated (not yet written), a stream
// opened (its first event relayed, the rest left to the relay step), or a
// classified failure with the answer to forward should the request end on
// it. It writes no row and charges no budget.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request, t *turn, a *attempt) {
	call, err := s.call(r.Context(), a.compiled, t.req.Stream, r.Header, t.snap.Config.Server.ForwardHeaders, a.apiKey, a.spanCtx)
	if err != nil {
		s.callFailed(r, t, a, err)
		return
	}
	resp := call.resp
	if t.req.Stream && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		s.openStream(w, r, t, a, call) // the relay step owns the call from here
		return
	}
	defer call.finish()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		readFailure(call, &a.out)
		return
	}
	s.readAnswer(t, a, call)
}

// callFailed records an exchange that got no answer at all. (Its own
// function, like every rarely taken path here: the frames of the exchange
// stay on the stack for a whole stream, and a smaller stack is less memory
// per open stream.)
//
//go:noinline
func (s *Server) callFailed(r *http.Request, t *turn, a *attempt, err error) {
	if clientGone(r) {
		a.out.gone = true // nobody to answer; recorded as 499
		return
	}
	if shutdownCut(r) {
		return // send records the cut
	}
	a.out.failure, a.out.apiErr = failover.ClassifyTransport(err), transportError(err)
	s.log.Warn("upstream exchange failed", "request_id", t.id, "upstream", a.target.Upstream, "class", a.out.failure.Class, "err", err.Error())
}

// readFailure reads an upstream's error answer into out and classifies it.
//
//go:noinline
func readFailure(call *upstreamCall, out *exchange) {
	resp := call.resp
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	switch {
	case err != nil:
		err = call.readErr(err)
		out.failure, out.apiErr = failover.ClassifyTransport(err), transportError(err)
	case len(body) > maxErrorBody:
		out.failure = failover.Classify(resp.StatusCode, resp.Header, nil)
		out.apiErr = apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's error answer exceeded 1 MiB and was not relayed")
	default:
		out.failure = failover.Classify(resp.StatusCode, resp.Header, body)
		out.relay = &relayedError{status: resp.StatusCode, header: resp.Header, body: body}
	}
}

// badAnswer is the failure of an answer that came with a success status but
// cannot be relayed.
var badAnswer = failover.Failure{Class: failover.ClassServerError, Status: http.StatusBadGateway}

// readAnswer reads a non-streaming answer, converts it to the shape of the
// request's API and reads back who served.
func (s *Server) readAnswer(t *turn, a *attempt, call *upstreamCall) {
	raw, err := readBody(io.LimitReader(call.resp.Body, maxAnswerBody+1), call.resp.ContentLength, maxAnswerBody)
	if err != nil {
		err = call.readErr(err)
		a.out.failure, a.out.apiErr = failover.ClassifyTransport(err), transportError(err)
		return
	}
	if len(raw) > maxAnswerBody {
		a.out.failure, a.out.apiErr = badAnswer, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's answer exceeded 64 MiB")
		return
	}
	c := a.compiled
	body, res, err := connectors.Respond(c.Upstream.Connector, c.Call, raw)
	if err != nil {
		s.log.Warn("upstream answer unreadable", "request_id", t.id, "upstream", a.target.Upstream, "err", err.Error())
		a.out.failure, a.out.apiErr = badAnswer, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's answer was not a valid completion")
		return
	}
	a.out.answered, a.out.body, a.out.result = true, body, res
}

// A streaming answer is relayed in two steps. openStream, an attempt of
// dispatch, reads and translates the upstream's first event: nothing is
// committed to the caller before it, so a failure up to there fails over
// like a non-streaming one. Once it has translated, the attempt is the
// answer and dispatch ends; the relay step (relay, in the request path
// after dispatch) writes it out and relays the rest. From then on nothing
// can switch to another target: a failure is told in-band and the stream
// ends without [DONE], so the caller never mistakes a cut stream for a whole
// one. (Relaying from the request path rather than from inside dispatch
// keeps the stack an open stream holds at 8 KiB: the first flush, which
// writes the headers, runs net/http's deepest frame.)

// openStream opens a stream's relay on its first event; on a failure before
// it, a.out says what failed and the call is finished.
//
//go:noinline
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, t *turn, a *attempt, call *upstreamCall) {
	c := a.compiled
	// Chunks are flushed to the caller when the relay would otherwise wait
	// for the upstream (just before a read of its body), not once per
	// event: an upstream that sends many events at once costs one write to
	// the caller, and one that trickles them out has each flushed on arrival.
	rs := &relay{st: connectors.OpenStream(c.Upstream.Connector, c.Call), fr: flushBeforeRead{r: call.resp.Body}, call: call}
	rs.rd = connectors.NewEventReader(c.Upstream.Connector, &rs.fr)
	if !s.startRelay(w, r, t, a, call, rs) {
		rs.rd.Release()
		call.finish()
		return
	}
	a.open = rs
	a.out.answered, a.out.streamed = true, true
}

// startRelay reads and translates the upstream's first event and commits
// the stream to the caller with it. It reports false, with a.out set, when
// the attempt failed before anything reached the caller.
//
//go:noinline
func (s *Server) startRelay(w http.ResponseWriter, r *http.Request, t *turn, a *attempt, call *upstreamCall, rs *relay) bool {
	ev, data, err := rs.rd.Next()
	if err != nil {
		if clientGone(r) {
			a.out.gone = true
			return false
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		err = call.readErr(err)
		a.out.failure, a.out.apiErr = failover.ClassifyTransport(err), transportError(err)
		return false
	}
	if f, e, ok := firstEventError(data); ok {
		// The upstream failed before its first token, in-band: nothing has
		// reached the caller yet, so this is an ordinary failure.
		a.out.failure, a.out.apiErr = f, e
		return false
	}
	// The translator takes the first event before anything is committed: an
	// event it cannot read fails over like any failure before the first chunk.
	var pending [][]byte
	rs.done, err = rs.st.Event(ev, data, func(p []byte) error {
		pending = append(pending, append([]byte(nil), p...))
		return nil
	})
	if err != nil {
		a.out.failure, a.out.apiErr = badAnswer, apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's stream did not start with a valid event")
		return false
	}
	rs.sa = s.beginStream(w, t, a)
	rs.fr.flush = rs.sa.flush
	for _, p := range pending {
		if rs.sa.emit(p) != nil {
			break
		}
	}
	return true
}

// firstEventError recognises a stream whose first event is an error object
// (an upstream's in-band failure before any token).
func firstEventError(data []byte) (failover.Failure, *apierr.Error, bool) {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return failover.Failure{}, nil, false
	}
	var probe struct {
		Error *struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Error == nil {
		return failover.Failure{}, nil, false
	}
	code := strings.Trim(string(probe.Error.Code), `"`)
	f := failover.ClassifyStreamError(probe.Error.Type, code)
	return f, apierr.New(apierr.CodeUpstreamUnavailable, "the upstream failed before its first token: "+probe.Error.Message), true
}

// upstreamCall is one HTTP exchange with an upstream.
type upstreamCall struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
	// detach stops the caller's request from cancelling the exchange.
	detach func() bool
	// complete reports that the answer ended as its protocol says (a
	// stream's final event): what is left of the body is only framing, so
	// the connection is worth keeping for the next request.
	complete bool
}

// Bounds of draining a completed stream's body so that its connection goes
// back to the pool instead of being closed (a new connection per stream cost
// a connect, an accept and a close on both sides).
const (
	drainBytes = 64 << 10
	drainWait  = 200 * time.Millisecond
)

// errDrain ends a drain that took longer than drainWait.
var errDrain = errors.New("gateway: draining a finished upstream body took too long")

// finish releases the exchange. A completed stream's body is drained in the
// background, bounded by drainBytes and drainWait, so the request never
// waits on it; anything else is cancelled at once, which closes the
// connection unless its body was read to the end.
func (c *upstreamCall) finish() {
	if !c.complete {
		c.cancel(nil)
		return
	}
	c.detach()
	go func() {
		t := time.AfterFunc(drainWait, func() { c.cancel(errDrain) })
		_, _ = io.CopyN(io.Discard, c.resp.Body, drainBytes)
		_ = c.resp.Body.Close()
		t.Stop()
		c.cancel(nil)
	}()
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

// call posts a compiled request to its upstream with the upstream's
// deadlines: first_byte_timeout for the first byte of the answer, timeout for
// the whole exchange (a stream's body included), carrying the attempt's
// trace context when spanCtx is not nil. The caller must call finish when
// done with the body.
func (s *Server) call(ctx context.Context, c *snapshot.Compiled, stream bool, in http.Header, forward []string, apiKey string, spanCtx context.Context) (*upstreamCall, error) {
	up := c.Upstream
	// The exchange ends with the caller's request, but through AfterFunc
	// rather than as its child: a completed stream's connection is drained
	// after the handler returned (see finish), when the caller's context is
	// already done.
	parent := ctx
	ctx, cancelCtx := context.WithCancelCause(context.WithoutCancel(parent))
	detach := context.AfterFunc(parent, func() { cancelCtx(context.Cause(parent)) })
	cancel := func(err error) { detach(); cancelCtx(err) }
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
	// Sized once (the connector's headers, the fixed ones, authorization
	// and what is forwarded) rather than grown as headers are set.
	h := make(http.Header, len(c.Native.Header)+len(forward)+4)
	req.Header = h
	for k, v := range c.Native.Header {
		h[k] = v
	}
	h["Content-Type"] = headerJSON
	if stream {
		h["Accept"] = headerEventStream
	} else {
		h["Accept"] = headerJSON
	}
	h["User-Agent"] = headerUserAgent
	for _, name := range forward {
		if v := in.Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = v
		}
	}
	if spanCtx != nil {
		s.tracing.Inject(spanCtx, h) // the attempt's trace context, over a forwarded one
	}
	up.Connector.Authorize(h, apiKey)
	if sg, ok := up.Connector.(connectors.Signer); ok {
		if err := sg.Sign(req, c.Native.Body); err != nil {
			total.Stop()
			cancel(nil)
			return nil, err
		}
	}
	firstByte := time.AfterFunc(up.Config.FirstByteTimeout.Duration, func() { cancel(errFirstByte) })
	resp, err := s.clientFor(up).Do(req)
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
	return &upstreamCall{resp: resp, ctx: ctx, detach: detach,
		cancel: func(err error) { firstByte.Stop(); total.Stop(); cancel(err) }}, nil
}

// The gateway's upstream deadlines.
var (
	errFirstByte error = deadlineError("the upstream sent nothing within first_byte_timeout")
	errTotal     error = deadlineError("the upstream did not finish within timeout")
)

// deadlineError is one of the gateway's upstream deadlines firing; it reports
// itself as a timeout so that the failure classifier sees one.
type deadlineError string

func (e deadlineError) Error() string { return string(e) }

// Timeout reports true: the error is a deadline.
func (deadlineError) Timeout() bool { return true }

// transportError maps a failed exchange to the caller's error.
func transportError(err error) *apierr.Error {
	var ce *connectors.CredentialError
	switch {
	case errors.As(err, &ce):
		return apierr.New(apierr.CodeUpstreamCredentials, ce.Error())
	case errors.Is(err, errFirstByte), errors.Is(err, errTotal), errors.Is(err, context.DeadlineExceeded), isNetTimeout(err):
		return apierr.New(apierr.CodeUpstreamTimeout, "the upstream did not answer in time: "+err.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apierr.New(apierr.CodeUpstreamUnavailable, "the upstream closed the connection before its answer was complete")
	default:
		return apierr.New(apierr.CodeUpstreamUnavailable, "the upstream could not be reached")
	}
}

// isNetTimeout reports a network timeout that is not a context deadline
// (a dialer's or a TLS handshake's): it answers 504 like every other
// deadline.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// clientGone reports whether the caller has gone away. A request the
// server cut at shutdown is not gone: its caller is told so.
func clientGone(r *http.Request) bool { return r.Context().Err() != nil && !shutdownCut(r) }

// readBodyFirst is the most readBody allocates before a body's bytes
// arrive, whatever length it declares.
const readBodyFirst = 64 << 10

// readBody reads r to its end, like io.ReadAll, into a buffer sized from the
// declared length when there is one (0 < size <= limit): one allocation for
// a body of known size up to readBodyFirst instead of io.ReadAll's doubling
// from 512 bytes, and doubling from there as the bytes arrive. A body
// longer than declared still reads whole (up to what r allows).
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	if size <= 0 || size > limit {
		return io.ReadAll(r)
	}
	// One byte more than declared, so the read that meets io.EOF needs no
	// second buffer; but never more than readBodyFirst before the bytes
	// arrive: a declared length costs nothing until it is sent.
	b := make([]byte, 0, min(size+1, readBodyFirst))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			// Double toward the declared length (and one byte past it).
			next := max(min(2*int64(cap(b)), size+1), int64(cap(b))+1)
			b = append(make([]byte, 0, next), b...)
		}
	}
}
