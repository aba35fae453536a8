package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/snapshot"
)

// dispatch runs the planned attempts until one answers or the plan ends on
// a failure, which answer then forwards. Gateway failover moves to the plan's
// next target by the failure's class (see [failover.Plan.Next]). It returns
// an error only when the request must stop at once (a budget is exhausted, a
// model may not use the safety net).
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, t *turn) *apierr.Error {
	t.cur, t.curReason = t.first, firstReason(t)
	for {
		start := time.Now()
		a, stop := s.dispatchTarget(w, r, t)
		if stop != nil {
			return stop
		}
		if !s.advance(r, t, a, time.Since(start)) {
			return nil
		}
	}
}

// firstReason is why the first target was dispatched: "" for the plan's
// first, or the overflow when planning sent an oversized prompt straight to
// the tail.
func firstReason(t *turn) string {
	if f, ok := t.targets.FirstReason(); ok {
		return f.String()
	}
	return ""
}

// advance feeds the attempt's outcome to the planner and moves the turn on
// to the plan's next target; false when the request ends here (an answer,
// or a failure the plan does not go past). Out of dispatch, like
// every step of its loop: dispatch's frame stays on the stack for a whole
// stream, and a smaller stack is less memory per open stream.
//
//go:noinline
func (s *Server) advance(r *http.Request, t *turn, a *attempt, took time.Duration) bool {
	tgt := &t.cur
	s.observe(r, t, a, took)
	if a.out.committed() {
		return false
	}
	next, ok, why := t.targets.Next(*tgt, a.out.failure, a.callerKey)
	if !ok {
		if t.route != nil {
			s.log.Info("route ends on a failure", "request_id", t.id, "route", t.route.Model, "target", tgt.Name(),
				"failure", a.out.failure.String(), "stop", string(why))
		}
		return false
	}
	s.logFailover(t, a, &next, "failover")
	t.curReason, *tgt = a.out.failure.String(), next
	return true
}

// logFailover logs a failed attempt that another follows: the upstream and
// model that failed, its status (0 without one: a transport failure) and
// class, and the target tried next ("failover" along the plan, "safety_net"
// on the platform key after the caller's own key).
//
//go:noinline
func (s *Server) logFailover(t *turn, a *attempt, next *failover.Target, via string) {
	s.log.Warn("upstream attempt failed; trying the next target", "request_id", t.id, "upstream", a.target.Upstream, "model", a.target.Model,
		"status", a.out.failure.Status, "class", a.out.failure.String(), "attempt", t.sent, "next_upstream", next.Upstream, "next_model", next.Model, "via", via)
}

// dispatchTarget sends the request to one target and returns the last
// attempt it made. With the caller's own key for the upstream the attempt is
// unmetered; when it fails retryably and the key has the safety net, the same
// model is tried once more on the platform key, if the account is eligible
// and the model may run on platform keys. Without a caller key the attempt is
// on the platform key, metered.
func (s *Server) dispatchTarget(w http.ResponseWriter, r *http.Request, t *turn) (*attempt, *apierr.Error) {
	tgt, reason := &t.cur, t.curReason
	c, err := t.memo.Compile(tgt.Upstream, tgt.Model) // planning kept only targets that compile
	if err != nil {
		return nil, s.compileFailed(t, tgt, err)
	}
	t.at = stage{compiled: c, reason: reason}
	ck := t.callerKey(tgt.Upstream)
	if ck == "" {
		a, stop := s.meteredAttempt(t, tgt, c, reason)
		if stop != nil {
			return nil, stop
		}
		s.send(w, r, t, a)
		return a, nil
	}
	a := t.newAttempt(tgt, c, reason, ck)
	a.callerKey = true
	s.send(w, r, t, a)
	if a.out.committed() || !t.key.SafetyNet || !failover.Retryable(a.out.failure, true) {
		return a, nil
	}
	return s.safetyNet(w, r, t, c, a)
}

// compileFailed logs a target that did not compile (planning kept only
// targets that do, so this is a bug) and answers it.
//
//go:noinline
func (s *Server) compileFailed(t *turn, tgt *failover.Target, err error) *apierr.Error {
	s.log.Error("compile failed", "request_id", t.id, "upstream", tgt.Upstream, "err", err)
	return internalError()
}

// safetyNet tries the current target once more on the platform key after
// the caller's own key failed retryably, when the account is eligible and
// the model may run on platform keys; otherwise the caller's own failure
// stands.
//
//go:noinline
func (s *Server) safetyNet(w http.ResponseWriter, r *http.Request, t *turn, c *snapshot.Compiled, a *attempt) (*attempt, *apierr.Error) {
	tgt := &t.cur
	if e := s.safetyNetRefusal(t, tgt.Model); e != nil {
		return nil, e
	}
	if !s.safetyNetEligible(t, c.Upstream.APIKey) {
		return a, nil // the caller's own error is preserved
	}
	sn, stop := s.meteredAttempt(t, tgt, c, a.out.failure.String())
	switch {
	case stop != nil && stop.Code == apierr.CodeBudgetExhausted:
		return a, nil // past the cap: the caller's own error is preserved
	case stop != nil:
		return nil, stop
	}
	t.at.reason, sn.safetyNet = sn.reason, true
	s.logFailover(t, a, tgt, "safety_net")
	s.send(w, r, t, sn)
	return sn, nil
}

// send makes one attempt: the exchange with the upstream fills in a.out. A
// failed attempt's budget reservation is released at once (it cost
// nothing); an answer's is released by settle, once its cost is charged.
func (s *Server) send(w http.ResponseWriter, r *http.Request, t *turn, a *attempt) {
	t.sent++
	t.final = a
	s.startAttemptSpan(t, a)
	s.exchange(w, r, t, a)
	if a.open != nil {
		return // an open stream: the relay step ends its span
	}
	if !a.out.committed() && shutdownCut(r) {
		// The server cut the exchange at shutdown: no failure of the
		// upstream's, and no other target is dialled.
		a.out.endAtShutdown()
	}
	s.endAttemptSpan(a)
	if !a.out.committed() {
		s.metrics.UpstreamErrors.WithLabelValues(a.target.Upstream, a.out.failure.Class).Inc()
		a.releaseBudget()
	}
}

// releaseBudget frees the attempt's budget reservation, if it holds one.
func (a *attempt) releaseBudget() {
	if a.release != nil {
		a.release()
	}
}

// observe feeds a route target's health and speed. Only an answer feeds the
// target's latency and clears its failures, and only a health failure counts
// towards making it cold; a refusal or a client error is the request's doing
// and says nothing of either (a quick 400 is no sign of speed). A caller who
// left, or a request the server cut at shutdown, says nothing either.
func (s *Server) observe(r *http.Request, t *turn, a *attempt, took time.Duration) {
	if t.route == nil || r.Context().Err() != nil {
		return
	}
	switch {
	case a.out.committed():
		s.planner.Observe(t.route.Model, a.target, took, true)
	case healthFailure(a.out.failure):
		s.planner.Observe(t.route.Model, a.target, took, false)
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

// meteredAttempt prepares an attempt on the platform key, whose answer's
// cost counts against the key's and the team's budgets: refused when a budget
// is exhausted, and compiled again when the budget lowered the completion cap.
func (s *Server) meteredAttempt(t *turn, tgt *failover.Target, c *snapshot.Compiled, reason string) (*attempt, *apierr.Error) {
	body, capped, release, hold, stop := s.reserve(t, c, tgt.Model)
	if stop != nil {
		return nil, stop
	}
	a := t.newAttempt(tgt, c, reason, c.Upstream.APIKey)
	a.metered, a.capped, a.release, a.hold = true, capped, release, hold
	if capped {
		cc, err := t.memo.CompileBody(tgt.Upstream, tgt.Model, body)
		if err != nil {
			release()
			s.log.Error("compile failed", "request_id", t.id, "upstream", tgt.Upstream, "err", err)
			return nil, internalError()
		}
		if r := cc.Refused(); r != nil {
			release()
			return nil, apierr.FromRefusal(r)
		}
		a.compiled = cc
	}
	return a, nil
}

// safetyNetRefusal refuses the safety net for a model only callers' own
// keys may serve.
func (s *Server) safetyNetRefusal(t *turn, model string) *apierr.Error {
	if t.snap.Catalog == nil {
		return nil
	}
	if m, ok := t.snap.Catalog.Model(model); ok && m.CallerKeyOnly {
		return apierr.New(apierr.CodeSafetyNetNotPermitted, fmt.Sprintf(
			"your own key for model %q failed, and the safety net cannot use platform keys for this model: it is served on callers' keys only; fix the key or choose another model", model))
	}
	return nil
}

// safetyNetEligible: the platform does not spend shared quota for free. The
// account must be on the pro plan or hold positive credit, must not be past
// its monthly spend cap, and the upstream must have a platform key.
func (s *Server) safetyNetEligible(t *turn, platformKey string) bool {
	k := t.key
	if platformKey == "" || (k.Plan != "pro" && k.CreditUSD <= 0) {
		return false
	}
	limits := budgetLimits(t)
	return len(limits) == 0 || s.available(t, budget.Month(time.Now()), limits) > 0
}

// budgetLimits returns the key's and the team's monthly platform-key
// budgets, those that are set.
func budgetLimits(t *turn) []budget.Limit {
	var limits []budget.Limit
	if b := t.key.MonthlyBudgetUSD; b > 0 {
		limits = append(limits, budget.Limit{Scope: budget.KeyScope(t.key.ID), USD: b})
	}
	if team := t.snap.Config.Team(t.key.Org, t.key.Team); team != nil && team.MonthlyBudgetUSD > 0 {
		limits = append(limits, budget.Limit{Scope: budget.TeamScope(t.key.Org, t.key.Team), USD: team.MonthlyBudgetUSD})
	}
	return limits
}

// reserve prepares a metered attempt under the key's and team's budgets. It
// refuses the attempt when the budget is exhausted (402); otherwise it
// reserves the attempt's worst-case cost — the prompt and the requested (or,
// when unbounded, the largest affordable) completion, at the highest prices
// of any model the upstream may serve for it (the model and the chain it is
// sent) — and lowers the completion cap to what that reservation pays for.
// Attempts in flight together therefore cannot overrun a budget (across the
// fleet with shared state). release frees the reservation (settle calls it
// once the cost is charged); hold is the shared reservation, if any.
func (s *Server) reserve(t *turn, c *snapshot.Compiled, model string) (body connectors.Body, capped bool, release func(), hold *shared.Hold, _ *apierr.Error) {
	body = t.req.Body
	limits := budgetLimits(t)
	if len(limits) == 0 {
		return body, false, nil, nil, nil
	}
	month := budget.Month(time.Now())
	exhausted := apierr.New(apierr.CodeBudgetExhausted, fmt.Sprintf("the monthly platform-key budget of key %q or its team is exhausted", t.key.ID))
	if t.api == connectors.APIEmbeddings {
		release, hold, ok := s.reserveInput(t, c, model, month, limits)
		if !ok {
			return nil, false, nil, nil, exhausted
		}
		return body, false, release, hold, nil
	}
	want, promptCost, out, priced := worstCase(t, c, model)
	if !priced {
		// Nothing to cap with: refuse only an exhausted budget.
		if s.available(t, month, limits) <= 0 {
			return nil, false, nil, nil, exhausted
		}
		return body, false, nil, nil, nil
	}
	field := "max_tokens"
	if _, ok := body["max_completion_tokens"]; ok {
		field = "max_completion_tokens"
	}
	if t.api == connectors.APIResponses {
		field = "max_output_tokens"
	}
	asked := t.req.Completion
	grant, release, hold := s.hold(t, c.Upstream.Config.Name, model, month, want, limits)
	// Each of the body's n completions may run to the cap: the grant pays
	// for all of them.
	maxTokens := int64((grant - promptCost) / out * 1e6 / float64(choices(t)))
	if grant <= 0 || maxTokens < 1 {
		release()
		return nil, false, nil, nil, exhausted
	}
	if asked > 0 && asked <= maxTokens {
		return body, false, release, hold, nil
	}
	cappedBody := make(connectors.Body, len(body))
	for k, v := range body {
		cappedBody[k] = v
	}
	cappedBody[field] = json.RawMessage(strconv.FormatInt(maxTokens, 10))
	return cappedBody, true, release, hold, nil
}

// worstCase prices an attempt at its worst: want is the prompt plus the
// completion cap the body asks, times the completions it asks for (n), at
// the highest prices of what the upstream may serve (+Inf without a cap);
// priced is false when the catalog has no output price for any of it.
func worstCase(t *turn, c *snapshot.Compiled, model string) (want, promptCost, out float64, priced bool) {
	in, out, priced := highestPrices(t.snap, c, model)
	if !priced {
		return 0, 0, 0, false
	}
	promptCost = float64(t.req.PromptTokens) * in / 1e6
	want = math.Inf(1)
	if asked := t.req.Completion; asked > 0 {
		want = promptCost + float64(asked)*float64(choices(t))*out/1e6
	}
	return want, promptCost, out, true
}

// choices is how many completions the request asks for (chat completions'
// n), at least 1: one prompt, priced once, answered that many times.
func choices(t *turn) int64 {
	return max(t.req.Choices, 1)
}

// hold reserves want under the limits: in this process, or in the fleet's
// shared budgets — where the reservation admission made for this target,
// when there is one, is used instead of another round trip.
func (s *Server) hold(t *turn, upstream, model, month string, want float64, limits []budget.Limit) (float64, func(), *shared.Hold) {
	if s.fleet == nil {
		grant, release := s.ledger.Reserve(month, want, limits...)
		return grant, release, nil
	}
	var h *shared.Hold
	if p := t.pre; p != nil && p.hold != nil && p.upstream == upstream && p.model == model && p.ask.Want == want && p.ask.Month == month {
		h, p.hold = p.hold, nil
	} else {
		t.reserved++
		h = s.fleet.Reserve(context.Background(), fmt.Sprintf("%s.%d", t.id, t.reserved),
			shared.BudgetAsk{Month: month, Want: want, Limits: limits, Lease: budgetLease(t, upstream)})
	}
	return h.Grant(), func() { s.fleet.Release(context.Background(), h) }, h
}

// available is what remains of the limits: this process's ledger, or the
// fleet's.
func (s *Server) available(t *turn, month string, limits []budget.Limit) float64 {
	if s.fleet == nil {
		return s.ledger.Available(month, limits...)
	}
	return s.fleet.Available(context.Background(), month, limits)
}

// highestPrices returns the highest input and output prices (USD per
// million tokens) over the endpoints of the model and of every model of the
// chain the upstream is sent (it may serve any of them); priced is false
// when the catalog has no output price for any of them.
func highestPrices(snap *snapshot.Snapshot, c *snapshot.Compiled, model string) (in, out float64, priced bool) {
	if snap.Catalog == nil {
		return 0, 0, false
	}
	price := func(slug string) {
		if m, ok := snap.Catalog.Model(slug); ok {
			for _, e := range m.Endpoints {
				in, out = math.Max(in, e.PriceIn), math.Max(out, e.PriceOut)
			}
		}
	}
	price(model)
	if c != nil {
		for _, slug := range c.Outcome.Chain {
			price(slug)
		}
	}
	return in, out, out > 0
}
