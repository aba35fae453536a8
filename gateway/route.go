package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// SwitchTargetFallback is the routing_switch_reason of an answer from a route
// target whose model differs from the first planned one.
const SwitchTargetFallback = "target_fallback"

// compiler caches, per request, the plan of each model and the compile of
// each (upstream, model): a route's targets often share both.
type requestCompiler struct {
	t     *turn
	d     *guardrails.Decision
	plans map[string]*compiler.Plan
	comps map[[2]string]compiled
}

type compiled struct {
	c   *snapshot.Compiled
	err *apierr.Error
}

func newRequestCompiler(t *turn, d *guardrails.Decision) *requestCompiler {
	return &requestCompiler{t: t, d: d, plans: map[string]*compiler.Plan{}, comps: map[[2]string]compiled{}}
}

// plan decides the request for one model: profiles and guardrails apply to
// every attempt alike.
func (rc *requestCompiler) plan(model string) *compiler.Plan {
	if p, ok := rc.plans[model]; ok {
		return p
	}
	t := rc.t
	creq := compiler.Request{Model: model, Routing: t.req.Routing}
	if t.hasPin && t.pin.model == model {
		creq.PinnedProvider = t.pin.provider
	}
	creq.Principal = t.key.Principal()
	p := compiler.Decide(creq, t.snap.Layers(t.key.ID), rc.d)
	rc.plans[model] = p
	return p
}

// compile checks and translates the request for one target; err is the
// refusal or translation error when the target must not serve it.
func (rc *requestCompiler) compile(upstream, model string) (*snapshot.Compiled, *apierr.Error) {
	k := [2]string{upstream, model}
	if c, ok := rc.comps[k]; ok {
		return c.c, c.err
	}
	c, e := rc.compileBody(upstream, model, rc.t.req.Body)
	rc.comps[k] = compiled{c, e}
	return c, e
}

// compileBody compiles a variant of the request body (a budget-capped one).
func (rc *requestCompiler) compileBody(upstream, model string, body connectors.Body) (*snapshot.Compiled, *apierr.Error) {
	c, terr := rc.t.snap.Compile(rc.plan(model), upstream, body)
	var e *apierr.Error
	switch {
	case terr != nil:
		e = translateError(terr)
	case c.Refused() != nil:
		e = &apierr.Error{Code: c.Refused().Code, Message: c.Refused().Message, Param: c.Refused().Param}
	}
	return c, e
}

// serve runs the request's attempts: one target for a plain model, the
// planned targets for a route alias. It answers the caller in every case.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, t *turn, d *guardrails.Decision, cacheKey string) {
	rc := newRequestCompiler(t, d)
	rt := t.snap.Config.Route(t.req.Model)
	if rt == nil {
		s.serveModel(w, r, t, rc, cacheKey)
		return
	}
	s.serveRoute(w, r, t, rc, rt, cacheKey)
}

// serveModel sends a request that names a model to the key's upstream.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, t *turn, rc *requestCompiler, cacheKey string) {
	upstream := t.snap.Config.UpstreamFor(t.key)
	t.row.Upstream = upstream
	t.plan = rc.plan(t.req.Model)
	t.row.Chain = t.plan.Chain
	c, aerr := rc.compile(upstream, t.req.Model)
	if aerr != nil {
		s.fail(w, t, aerr)
		return
	}
	t.row.RoutingDegraded = c.Outcome.Degraded
	res, _, stop := s.tryTarget(w, r, t, rc, upstream, t.req.Model, false, cacheKey)
	switch {
	case stop != nil:
		s.fail(w, t, stop)
	case !res.committed:
		s.forward(w, t, res)
	}
}

// serveRoute plans a route alias into attempts and fails over across its
// targets by failure class.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, t *turn, rc *requestCompiler, rt *profiles.Route, cacheKey string) {
	t.row.Route = rt.Model
	usable, firstRefusal := usableRoute(rt, rc)
	if firstRefusal != nil {
		s.fail(w, t, firstRefusal)
		return
	}
	plan := s.planner.Plan(usable, t.snap.Config.RetryBudget(rt), t.req.PromptTokens, t.snap.ContextWindow)
	tgt, ok := plan.First()
	if !ok {
		s.failUpstream(w, t, apierr.New(apierr.CodeUpstreamUnavailable, fmt.Sprintf("route %q has no target that can take this request", rt.Model)))
		return
	}
	reason := ""
	if f, ok := plan.FirstReason(); ok {
		reason = f.String() // planning sent an oversized prompt straight to the tail
	}
	decided := ""
	for {
		c, _ := rc.compile(tgt.Upstream, tgt.Model) // usableRoute kept only targets that compile
		if decided == "" {
			decided = tgt.Model
			t.row.DecidedModel = decided
			t.plan = c.Call.Plan
			t.row.Chain = t.plan.Chain
		}
		t.row.Upstream = tgt.Upstream
		t.row.RoutingDegraded = c.Outcome.Degraded
		t.row.RoutingSwitchReason = ""
		if tgt.Model != decided {
			t.row.RoutingSwitchReason = SwitchTargetFallback
		}
		t.row.FallbackReason = reason
		start := time.Now()
		res, callerKey, stop := s.tryTarget(w, r, t, rc, tgt.Upstream, tgt.Model, t.row.Attempts > 0 || reason != "", cacheKey)
		if stop != nil {
			s.fail(w, t, stop)
			return
		}
		if !clientGone(r.Context()) {
			// Only an answer feeds the target's latency and clears its
			// failures, and only a health failure counts towards making it
			// cold; a refusal or a client error is the request's doing and
			// says nothing of either (a quick 400 is no sign of speed).
			switch {
			case res.committed:
				s.planner.Observe(rt.Model, tgt, time.Since(start), true)
			case healthFailure(res.failure):
				s.planner.Observe(rt.Model, tgt, time.Since(start), false)
			}
		}
		if res.committed {
			if t.row.FallbackReason != "" {
				s.metrics.Fallbacks.WithLabelValues(t.row.FallbackReason).Inc()
			}
			return
		}
		next, ok, stopReason := plan.Next(tgt, res.failure, callerKey)
		if !ok {
			s.log.Info("route ends on a failure", "request_id", t.row.RequestID, "route", rt.Model, "target", tgt.Name(),
				"failure", res.failure.String(), "stop", string(stopReason))
			t.row.RoutingSwitchReason = ""
			s.forward(w, t, res)
			return
		}
		reason = res.failure.String()
		tgt = next
	}
}

// healthFailure reports whether a failure says something about the target's
// health (and so counts toward making it cold).
func healthFailure(f failover.Failure) bool {
	switch f.Class {
	case failover.ClassThrottled, failover.ClassTimeout, failover.ClassServerError, failover.ClassConnection:
		return true
	}
	return false
}

// usableRoute returns the route without the targets this request may not
// be sent to; when no ordinary target is left, the first refusal answers.
func usableRoute(rt *profiles.Route, rc *requestCompiler) (*profiles.Route, *apierr.Error) {
	var first *apierr.Error
	u, ok := failover.Without(rt, func(tg profiles.Target) bool {
		_, err := rc.compile(tg.Upstream, tg.Model)
		if err != nil && first == nil {
			first = err
		}
		return err != nil
	})
	if ok {
		return u, nil
	}
	if first == nil {
		first = apierr.New(apierr.CodeUpstreamUnavailable, fmt.Sprintf("route %q has no ordinary target", rt.Model))
	}
	return nil, first
}
