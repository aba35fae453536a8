package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicegw/sluice/gateway/admin"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/schemas"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/state"
)

// stateListenTimeout bounds how long a starting replica waits for a shared
// state store to listen for route changes.
const stateListenTimeout = 30 * time.Second

// listenState listens to a shared state store's route changes and returns
// once it listens, so that the routes loaded after it miss no change; what
// it hears waits (coalesced) until follow starts swapping the routes in.
// A store of the replica's own is not listened to (follow does nothing).
// It sets s.stopWatch, which ends the listening.
func (s *Server) listenState() (follow func(), err error) {
	n, ok := s.state.(state.Notifier)
	if !ok {
		s.stopWatch = func() {}
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch = cancel
	listening := make(chan struct{})
	changes := make(chan struct{}, 1)
	go n.Watch(ctx, func() { close(listening) }, func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	})
	select {
	case <-listening:
	case <-time.After(stateListenTimeout):
		cancel()
		return nil, fmt.Errorf("state: %s did not listen for route changes within %v", s.state.Where(), stateListenTimeout)
	}
	return func() {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-changes:
					s.refreshRoutes(ctx)
				}
			}
		}()
	}, nil
}

// withStoredRoutes overlays the state store's routes on a snapshot loaded
// from the files. A store never seeded is seeded with the file's routes
// first. Problems (a stored route naming an upstream the files no longer
// define, say) are located in the state store.
func (s *Server) withStoredRoutes(ctx context.Context, snap *snapshot.Snapshot) (*snapshot.Snapshot, profiles.Diagnostics) {
	seeded, err := s.state.Seeded(ctx)
	if err != nil {
		return nil, profiles.Diagnostics{{File: state.File, Code: profiles.CodeReadError, Message: err.Error()}}
	}
	if !seeded {
		after, _ := json.Marshal(snap.Config.Routes)
		if err := s.state.Replace(ctx, snap.Config.Routes, state.AuditEntry{Actor: "import", Action: "import", After: after}); err != nil {
			return nil, profiles.Diagnostics{{File: state.File, Code: profiles.CodeReadError, Message: err.Error()}}
		}
		return snap, nil
	}
	routes, err := s.state.Routes(ctx)
	if err != nil {
		return nil, profiles.Diagnostics{{File: state.File, Code: profiles.CodeReadError, Message: err.Error()}}
	}
	out, probs := snap.WithRoutes(routes)
	if len(probs) > 0 {
		diags := make(profiles.Diagnostics, len(probs))
		for i, p := range probs {
			diags[i] = profiles.Diagnostic{File: state.File, Pointer: schemas.Pointer(p.Tokens...), Code: p.Code,
				Message: p.Message + " (routes are edited through the admin API once the state store is seeded; sluice import replaces them with the file's)"}
		}
		return nil, diags
	}
	return out, nil
}

// adminBackend gives the admin API what it needs of the server.
type adminBackend struct{ s *Server }

var _ admin.Backend = adminBackend{}

// Routes implements [admin.Backend.Routes].
func (b adminBackend) Routes() []profiles.Route { return cloneRoutes(b.s.snap.Load().Config.Routes) }

// cloneRoutes deep-copies routes, so a change never writes into the routes a
// request may be reading.
func cloneRoutes(rs []profiles.Route) []profiles.Route {
	out := []profiles.Route{}
	b, _ := json.Marshal(rs)
	_ = json.Unmarshal(b, &out)
	return out
}

func routeJSON(rs []profiles.Route, id string) json.RawMessage {
	for _, r := range rs {
		if strings.EqualFold(r.Model, id) {
			b, _ := json.Marshal(r)
			return b
		}
	}
	return json.RawMessage("null")
}

// Change implements [admin.Backend.Change]: serialised with reloads, and in
// the state store with every other change (of any replica sharing it), the
// stored route list is changed, validated as a whole, stored with its audit
// entry in one transaction, and then swapped in for the next request. With
// a shared store the other replicas swap it in when it tells them. A store
// that does not answer refuses the change with 503; serving goes on with
// the routes loaded last. Once asked, a change runs to its end (within
// routeChangeTimeout) even if its caller leaves or the server cuts requests
// at shutdown ([Server.Cut] waits for it): it is stored with its audit
// entry or not at all, never undone half-way by a cancelled context.
func (b adminBackend) Change(ctx context.Context, entry state.AuditEntry, mutate func([]profiles.Route) ([]profiles.Route, error)) ([]profiles.Route, error) {
	s := b.s
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), routeChangeTimeout)
	defer cancel()
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.snap.Load()
	var snap *snapshot.Snapshot
	err := s.state.Update(ctx, func(stored []profiles.Route) ([]profiles.Route, state.AuditEntry, error) {
		next, err := mutate(cloneRoutes(stored))
		if err != nil {
			return nil, entry, err
		}
		var probs []profiles.RouteProblem
		if snap, probs = cur.WithRoutes(next); len(probs) > 0 {
			return nil, entry, &admin.ProblemsError{Problems: probs}
		}
		entry.Before = routeJSON(stored, entry.RouteID)
		entry.After = routeJSON(snap.Config.Routes, entry.RouteID)
		return snap.Config.Routes, entry, nil
	})
	var ae *apierr.Error
	var pe *admin.ProblemsError
	switch {
	case errors.As(err, &ae), errors.As(err, &pe):
		return nil, err
	case err != nil:
		s.log.Error("state store: a route change was refused: the store does not answer; serving goes on with the routes loaded last",
			"store", s.state.Where(), "err", err.Error())
		return nil, apierr.New(apierr.CodeServiceUnavailable, "the state store does not answer: route changes are refused until it does (serving goes on with the routes loaded last)")
	}
	s.snap.Store(snap)
	return cloneRoutes(snap.Config.Routes), nil
}

// routeChangeTimeout bounds one route change through the admin API.
const routeChangeTimeout = 10 * time.Second

// refreshRoutes loads the routes from the state store and swaps them in
// when they changed: another replica changed them (the store told).
func (s *Server) refreshRoutes(ctx context.Context) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	routes, err := s.state.Routes(ctx)
	if err != nil {
		s.log.Warn("state store: routes could not be read after a change; serving goes on with the routes loaded last", "err", err.Error())
		return
	}
	cur := s.snap.Load()
	a, _ := json.Marshal(cur.Config.Routes)
	next, probs := cur.WithRoutes(routes)
	if len(probs) > 0 {
		s.log.Error("state store: the stored routes do not load; serving goes on with the routes loaded last", "problem", probs[0].Message)
		return
	}
	if b, _ := json.Marshal(next.Config.Routes); string(a) == string(b) {
		return
	}
	s.snap.Store(next)
	s.log.Info("routes changed in the state store; swapped in", "revision", next.Revision)
}

func (b adminBackend) key(keyID string) (*snapshot.Snapshot, *profiles.Key, error) {
	snap := b.s.snap.Load()
	k := snap.Config.KeyByID(keyID)
	if k == nil {
		return nil, nil, apierr.New(apierr.CodeNotFound, fmt.Sprintf("no key %q", keyID))
	}
	return snap, k, nil
}

// Explain implements [admin.Backend.Explain].
func (b adminBackend) Explain(ctx context.Context, keyID, model string) (any, error) {
	snap, k, err := b.key(keyID)
	if err != nil {
		return nil, err
	}
	return snap.ExplainModel(ctx, k, model)
}

// EffectiveProfile implements [admin.Backend.EffectiveProfile].
func (b adminBackend) EffectiveProfile(ctx context.Context, keyID string) (any, error) {
	snap, k, err := b.key(keyID)
	if err != nil {
		return nil, err
	}
	return snap.Explain(ctx, k, nil, nil, "")
}

// Audit implements [admin.Backend.Audit].
func (b adminBackend) Audit(ctx context.Context, limit int, cursor string) ([]state.AuditEntry, string, error) {
	return b.s.state.Audit(ctx, limit, cursor)
}

// adminHandler is the admin API: every answer carries a request id
// (X-Request-Id), and a change's audit entry records it with the client's
// address ([Server.clientAddress]).
func (s *Server) adminHandler() http.Handler {
	h := admin.New(admin.Options{Token: s.opts.AdminToken, Backend: adminBackend{s}, Logger: s.log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID(time.Now())
		w.Header().Set(HeaderRequestID, id)
		h.ServeHTTP(w, r.WithContext(admin.WithOrigin(r.Context(), s.clientAddress(r), id)))
	})
}
