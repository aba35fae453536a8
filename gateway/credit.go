package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/failover"
	"github.com/sluicegw/sluice/gateway/snapshot"
)

// SwitchSafetyNet is the routing_switch_reason of an answer the platform key
// gave after the caller's own key failed.
const SwitchSafetyNet = "safety_net"

// tryTarget sends the request to one target. With the caller's own key for
// the upstream, the attempt is unmetered and its 401/403 count as
// retryable; when it fails retryably and the key has the safety net, the same
// model is tried once more on the platform key, if the account is eligible
// and the model may run on platform keys. Platform-key attempts are metered:
// refused when a budget is exhausted, and their completion cap lowered so
// that the remaining budget cannot be overrun.
//
// stop is an error that ends the request at once (402, 403).
func (s *Server) tryTarget(w http.ResponseWriter, r *http.Request, t *turn, rc *requestCompiler, upstream, model string, fallback bool, cacheKey string) (res attemptResult, callerKey bool, stop *apierr.Error) {
	c, _ := rc.compile(upstream, model)
	if ck := t.snap.CallerKey(t.key.ID, upstream); ck != "" {
		t.metered = false
		t.row.Attempts++
		res = s.attempt(w, r, t, c, attemptOpts{apiKey: ck, fallback: fallback, cacheKey: cacheKey})
		if res.committed || !t.key.SafetyNet || !failover.Retryable(res.failure, true) {
			return res, true, nil
		}
		if e := s.safetyNetRefusal(t, model); e != nil {
			return res, true, e
		}
		if !s.safetyNetEligible(t, c.Upstream.APIKey) {
			return res, true, nil // the caller's own error is preserved
		}
		body, capped, e := s.budgetBody(t, model, t.req.Body)
		if e != nil {
			return res, true, nil // past the cap: the caller's own error is preserved
		}
		t.row.RoutingSwitchReason = SwitchSafetyNet
		t.row.FallbackReason = res.failure.String()
		return s.meteredAttempt(w, r, t, rc, c, upstream, model, body, capped, true, cacheKey)
	}
	body, capped, e := s.budgetBody(t, model, t.req.Body)
	if e != nil {
		return res, false, e
	}
	return s.meteredAttempt(w, r, t, rc, c, upstream, model, body, capped, fallback, cacheKey)
}

// meteredAttempt sends the request on the platform key; its answer's cost
// counts against the budgets.
func (s *Server) meteredAttempt(w http.ResponseWriter, r *http.Request, t *turn, rc *requestCompiler, c *snapshotCompiled, upstream, model string, body connectors.Body, capped, fallback bool, cacheKey string) (attemptResult, bool, *apierr.Error) {
	if capped {
		var cerr *apierr.Error
		if c, cerr = rc.compileBody(upstream, model, body); cerr != nil {
			return attemptResult{}, false, cerr
		}
		cacheKey = "" // a capped answer is not the answer to the request as sent
	}
	t.metered = true
	t.row.Attempts++
	return s.attempt(w, r, t, c, attemptOpts{apiKey: c.Upstream.APIKey, fallback: fallback, cacheKey: cacheKey}), false, nil
}

type snapshotCompiled = snapshot.Compiled

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
	remaining, capped := s.remainingBudget(t)
	return !capped || remaining > 0
}

// remainingBudget returns the smaller of the key's and the team's remaining
// monthly platform-key budget; capped is false when neither has a budget.
func (s *Server) remainingBudget(t *turn) (float64, bool) {
	month := budget.Month(time.Now())
	remaining, capped := math.Inf(1), false
	if b := t.key.MonthlyBudgetUSD; b > 0 {
		remaining, capped = b-s.ledger.Spent(budget.KeyScope(t.key.ID), month), true
	}
	if team := t.snap.Config.Team(t.key.Team); team != nil && team.MonthlyBudgetUSD > 0 {
		remaining = math.Min(remaining, team.MonthlyBudgetUSD-s.ledger.Spent(budget.TeamScope(t.key.Org, t.key.Team), month))
		capped = true
	}
	return remaining, capped
}

// budgetBody refuses a metered attempt whose budget is exhausted (402), and
// lowers the completion cap when the remaining budget could not pay for the
// requested (or an unbounded) completion at the model's highest price.
func (s *Server) budgetBody(t *turn, model string, body connectors.Body) (connectors.Body, bool, *apierr.Error) {
	remaining, capped := s.remainingBudget(t)
	if !capped {
		return body, false, nil
	}
	exhausted := apierr.New(apierr.CodeBudgetExhausted, fmt.Sprintf("the monthly platform-key budget of key %q or its team is exhausted", t.key.ID))
	if remaining <= 0 {
		return nil, false, exhausted
	}
	if t.snap.Catalog == nil {
		return body, false, nil
	}
	m, ok := t.snap.Catalog.Model(model)
	if !ok || len(m.Endpoints) == 0 {
		return body, false, nil
	}
	var in, out float64
	for _, e := range m.Endpoints {
		in, out = math.Max(in, e.PriceIn), math.Max(out, e.PriceOut)
	}
	if out <= 0 {
		return body, false, nil
	}
	maxTokens := int64((remaining - float64(t.req.PromptTokens)*in/1e6) / out * 1e6)
	if maxTokens < 1 {
		return nil, false, exhausted
	}
	field := "max_tokens"
	if _, ok := body["max_completion_tokens"]; ok {
		field = "max_completion_tokens"
	}
	var asked int64
	if raw, ok := body[field]; ok {
		_ = json.Unmarshal(raw, &asked)
	}
	if asked > 0 && asked <= maxTokens {
		return body, false, nil
	}
	capped2 := make(connectors.Body, len(body))
	for k, v := range body {
		capped2[k] = v
	}
	capped2[field] = json.RawMessage(strconv.FormatInt(maxTokens, 10))
	return capped2, true, nil
}
