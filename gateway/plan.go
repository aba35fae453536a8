package gateway

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// decide issues the principal's guardrail decision once per request (the
// cache key names its revision, and every plan applies it).
func (s *Server) decide(r *http.Request, t *turn) error {
	if t.decisionIssued {
		return nil
	}
	d, err := t.snap.Decision(r.Context(), t.key.Principal())
	if err != nil {
		return err
	}
	t.decision, t.decisionIssued = d, true
	return nil
}

// plan decides the request and orders its attempts. A request that names a
// model is a one-target plan (the key's upstream); a route alias is planned
// over the targets it may be sent to. Profiles and guardrails apply to every
// target alike, and a target the request may not be sent to at all is
// skipped, not failed over to.
func (s *Server) plan(r *http.Request, t *turn) *apierr.Error {
	if shutdownCut(r) {
		return errServerShutdown // cut at shutdown before it was planned: sent nowhere
	}
	if rt := t.req.Routing; rt != nil && rt.SetsData() {
		if diags := t.snap.CheckRequestRung(t.key.ID, rt); len(diags) > 0 {
			return loosened(diags)
		}
	}
	if err := s.decide(r, t); err != nil {
		s.log.Error("guardrail decision failed", "request_id", t.id, "key", t.key.ID, "err", err)
		return internalError()
	}
	if t.pinKey != "" && (!t.fetched || t.fetchedLocal) { // else admission read the shared pin
		if p, ok := s.sessions.Get(t.pinKey); ok {
			t.pin, t.hasPin = p, true
		}
	}
	if t.hasPin || t.memo.Snapshot() == nil { // else admission's, made without a pin, serves
		s.initMemo(t, t.pin)
	}
	if t.route = t.snap.Config.Route(t.req.Model); t.route == nil {
		return s.planModel(r.Context(), t)
	}
	if e := s.planRoute(t); e != nil {
		return e
	}
	return s.placeContinuation(r.Context(), t) // a stored response's continuation: where it is stored, only
}

// initMemo makes the turn's compile memo, for the session's pin.
func (s *Server) initMemo(t *turn, pin snapshot.Pin) {
	t.snap.InitMemo(&t.memo, t.key, t.decision, t.req.Routing, pin, t.req.Body)
	t.memo.SetInbound(t.req.Inbound)
	t.memo.SetSession(t.session)
}

// planModel plans a request that names a model: one target, the key's
// upstream, refused when that upstream must not serve it.
func (s *Server) planModel(ctx context.Context, t *turn) *apierr.Error {
	upstream := t.snap.Config.UpstreamFor(t.key)
	t.first = failover.Target{Upstream: upstream, Model: t.req.Model}
	t.decided, t.chain = t.req.Model, t.memo.Plan(t.req.Model).Chain
	t.single.SetSingle(t.first)
	t.targets = &t.single
	if e := s.placeContinuation(ctx, t); e != nil { // before the compile: where the response is says more
		return e
	}
	c, err := t.memo.Compile(upstream, t.req.Model)
	if err != nil {
		s.log.Error("compile failed", "request_id", t.id, "upstream", upstream, "err", err)
		return internalError()
	}
	if r := c.Refused(); r != nil {
		return apierr.FromRefusal(r)
	}
	return nil
}

// planRoute plans a route alias into attempts: the targets the request may
// be sent to, ordered by the route's strategy and the targets' health.
func (s *Server) planRoute(t *turn) *apierr.Error {
	usable, refused, err := t.memo.Usable(t.route)
	switch {
	case err != nil:
		s.log.Error("compile failed", "request_id", t.id, "route", t.route.Model, "err", err)
		return internalError()
	case refused != nil:
		return apierr.FromRefusal(refused)
	}
	t.targets = t.snap.PlanRoute(s.planner, usable, t.req.Body)
	first, ok := t.targets.First()
	if !ok {
		return apierr.New(apierr.CodeUpstreamUnavailable, fmt.Sprintf("route %q has no target that can take this request", t.route.Model))
	}
	t.first = first
	p := t.memo.Plan(first.Model)
	t.decided, t.chain = p.DecidedModel, p.Chain
	return nil
}

// routeName is the route's alias, or "" for a plain model.
func (t *turn) routeName() string {
	if t.route == nil {
		return ""
	}
	return t.route.Model
}

// loosened answers a request whose routing object loosens a data
// restriction the key's ladder sets: 400 invalid_routing, each loosening
// located by pointer.
//
//go:noinline
func loosened(diags profiles.Diagnostics) *apierr.Error {
	e := &apierr.Error{Code: apierr.CodeInvalidRouting, Param: diags[0].Pointer, Message: "invalid routing object: " + diags[0].Message}
	for _, d := range diags {
		e.Details = append(e.Details, apierr.Detail{Pointer: d.Pointer, Code: d.Code, Message: d.Message})
	}
	return e
}
