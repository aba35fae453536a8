package gateway

import (
	"errors"
	"io"
	"net/http"

	"github.com/sluicegw/sluice/connectors"
)

// relay relays the rest of the stream dispatch opened, if it opened one,
// and ends the attempt: its outcome, its span, its upstream call.
func (s *Server) relay(r *http.Request, t *turn) {
	a := t.final
	if a == nil || a.open == nil {
		return
	}
	rs := a.open
	a.open = nil
	defer rs.call.finish()
	defer rs.rd.Release()
	_ = rs.fr.flushPending() // the first chunk leaves at once, whatever else the upstream has sent
	for !rs.done && rs.sa.err == nil {
		ev, data, err := rs.rd.Next()
		if err != nil {
			if rs.sa.err != nil {
				break // the caller went away while the relay flushed
			}
			if !errors.Is(err, io.EOF) {
				rs.streamErr = rs.call.readErr(err)
			}
			break
		}
		rs.done, err = rs.st.Event(ev, data, rs.sa.emit)
		if err != nil {
			// The translator relayed the upstream's error event itself.
			rs.streamErr, rs.toldInBand = err, rs.sa.err == nil
			break
		}
	}
	s.endRelay(r, t, a, rs.call, rs)
	s.endAttemptSpan(a)
}

// relay is one stream's relay: the upstream's events, their translator and
// the caller's side.
type relay struct {
	call *upstreamCall
	fr   flushBeforeRead
	rd   connectors.EventReader
	st   connectors.Stream
	sa   *streamAnswer
	// done: the upstream's end of stream was relayed.
	done bool
	// streamErr is why the relay stopped early; toldInBand, that the caller
	// was told so in the stream.
	streamErr  error
	toldInBand bool
}

// endRelay flushes what is left, ends a stream that did not complete with
// an in-band error, and records the attempt's outcome.
//
//go:noinline
func (s *Server) endRelay(r *http.Request, t *turn, a *attempt, call *upstreamCall, rs *relay) {
	_ = rs.fr.flushPending()
	res := rs.st.Result()
	toldInBand := rs.toldInBand || res.StreamError != ""
	a.out.answered, a.out.streamed, a.out.result, a.out.ttft = true, true, res, rs.sa.ttft
	switch {
	case rs.sa.err != nil:
		a.out.status = 499 // the caller went away; the upstream request was cancelled with it
	case rs.done && res.StreamError == "":
		// The whole stream reached the caller: a caller that leaves
		// at once after its last event (Codex closes its socket on
		// response.completed) was answered, and the row says 200.
		a.out.status = http.StatusOK
		call.complete = true
	case clientGone(r):
		a.out.status = 499
	case shutdownCut(r):
		s.shutdownStream(t, a, rs)
	default:
		// Cut, failed or errored mid-stream: say so in-band, then end.
		if rs.streamErr != nil {
			s.log.Warn("stream failed after it started", "request_id", t.id, "upstream", a.target.Upstream, "err", rs.streamErr.Error())
		}
		if !toldInBand {
			rs.sa.cut()
		}
		a.out.status = http.StatusBadGateway
	}
}

// shutdownStream ends a stream the server cut at shutdown: the caller is
// told so in-band (unless the upstream's own error was relayed already),
// and the row records 503 server_shutdown.
//
//go:noinline
func (s *Server) shutdownStream(t *turn, a *attempt, rs *relay) {
	if !rs.toldInBand && rs.st.Result().StreamError == "" {
		rs.sa.tell(&shutdownCutEvent)
	}
	a.out.status = errServerShutdown.Status()
	t.refusal = errServerShutdown
	s.metrics.Refused.WithLabelValues(errServerShutdown.Code).Inc()
}

// flushBeforeRead flushes what the relay wrote to the caller before each read
// of the upstream's body, that is, before the relay may wait for the network.
type flushBeforeRead struct {
	r io.Reader
	// flush writes the caller's buffered chunks out if any were written since
	// the last flush; it returns the write error that ends the relay (the
	// caller went away). Set once the caller's headers are committed.
	flush func() error
}

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	if err := f.flushPending(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// flushPending flushes chunks written since the last flush.
func (f *flushBeforeRead) flushPending() error {
	if f.flush == nil {
		return nil
	}
	return f.flush()
}
