package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/sluicegw/sluice/gateway/apierr"
)

// ErrShutdown is the cause a request's context carries when the server cut
// it at shutdown ([Server.Cut]): the drain ran out of time and the request
// was still in flight. A cut request ends with an error in its API's shape
// (in-band for a stream) and records status 503 with refused_code
// server_shutdown, never 499: the caller did not leave.
var ErrShutdown = errors.New("gateway: the server ended the request at shutdown")

// errServerShutdown is the caller's error of a request the server cut.
var errServerShutdown = apierr.New(apierr.CodeServerShutdown,
	"the gateway is shutting down and ended the request before it completed; the answer is incomplete, retry it")

// shutdownCut reports whether the server cut the request at shutdown.
func shutdownCut(r *http.Request) bool { return cutAtShutdown(r.Context()) }

// cutAtShutdown reports whether the server cut the context at shutdown.
func cutAtShutdown(ctx context.Context) bool { return context.Cause(ctx) == ErrShutdown }

// endAtShutdown makes x the outcome of an exchange the server cut at
// shutdown. (Its own function: a whole exchange built in send's frame
// would stay on the stack under every open stream.)
//
//go:noinline
func (x *exchange) endAtShutdown() { *x = exchange{cut: true, apiErr: errServerShutdown} }

// inflight is every request the server's handler is running: each one's
// context can be cut, and shutdown can wait for their handlers to return
// (and so to have recorded their rows).
type inflight struct {
	mu   sync.Mutex
	reqs map[*inflightReq]struct{}
	// cut is set by [Server.Cut]: a request entering later is cut at once.
	cut bool
	// idle is closed when the last request leaves after cut was set.
	idle chan struct{}
	// empty is closed when the last request leaves while [Server.Drain]
	// waits.
	empty chan struct{}
}

// inflightReq is one request in flight: how to cut it.
type inflightReq struct{ cancel context.CancelCauseFunc }

// enter registers a request and returns its context, which [Server.Cut]
// can cancel.
//
//go:noinline
func (f *inflight) enter(parent context.Context) (context.Context, *inflightReq) {
	ctx, cancel := context.WithCancelCause(parent)
	e := &inflightReq{cancel: cancel}
	f.mu.Lock()
	if f.reqs == nil {
		f.reqs = make(map[*inflightReq]struct{})
	}
	f.reqs[e] = struct{}{}
	if f.cut {
		cancel(ErrShutdown)
	}
	f.mu.Unlock()
	return ctx, e
}

// leave unregisters a request whose handler returned.
func (f *inflight) leave(e *inflightReq) {
	e.cancel(nil)
	f.mu.Lock()
	delete(f.reqs, e)
	if f.cut && len(f.reqs) == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	if len(f.reqs) == 0 && f.empty != nil {
		close(f.empty)
		f.empty = nil
	}
	f.mu.Unlock()
}

// track registers the requests of a handler for [Server.Cut]: their
// context can be cut, and Cut waits for their handler to return. The APIs'
// requests are registered by authentication instead (authRequest), which
// puts no frame of its own under an open stream.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, e := s.inflight.enter(r.Context())
		defer s.inflight.leave(e)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Drain waits until the server's handler runs no request, or ctx ends (it
// then returns ctx's error). http.Server's Shutdown does not wait for a
// connection its handler took over — a WebSocket session's — so a graceful
// stop calls Drain after it, with the same deadline, and [Server.Cut] when
// either runs out: a session then gets its close frame after the drain
// period, and its row.
func (s *Server) Drain(ctx context.Context) error {
	f := &s.inflight
	f.mu.Lock()
	if len(f.reqs) == 0 {
		f.mu.Unlock()
		return nil
	}
	if f.empty == nil {
		f.empty = make(chan struct{})
	}
	empty := f.empty
	f.mu.Unlock()
	select {
	case <-empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight returns how many requests the server's handler is running.
func (s *Server) InFlight() int {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	return len(s.inflight.reqs)
}

// Cut ends every request still in flight, for a shutdown whose drain ran
// out of time: each one's context is cancelled with [ErrShutdown] (a
// request arriving later is cut at once), which stops its upstream
// exchange; a stream tells its caller so in-band and a request waiting for
// an answer answers 503 server_shutdown, and each records its row. Cut then
// waits, until ctx ends, for their handlers to return, and reports how many
// are still running then (0 when all have recorded). Call it before closing
// the connections, so that the cut requests can still tell their callers,
// and before [Server.Close], so that their rows reach the request log.
//
// A route change through the admin API is not undone by the cut: once its
// transaction began it runs to its end (bounded by the state store's
// timeout) and Cut waits for it like for any other request.
func (s *Server) Cut(ctx context.Context) int {
	f := &s.inflight
	f.mu.Lock()
	f.cut = true
	for e := range f.reqs {
		e.cancel(ErrShutdown)
	}
	if len(f.reqs) == 0 {
		f.mu.Unlock()
		return 0
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
		return s.InFlight()
	}
}
