package gateway

import (
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
	"github.com/sluicegw/sluice/snapshot"
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
		body, capped, release, e := s.budgetBody(t, c, model, t.req.Body)
		if e != nil {
			return res, true, nil // past the cap: the caller's own error is preserved
		}
		defer release() // after the attempt has recorded its cost
		t.row.RoutingSwitchReason = SwitchSafetyNet
		t.row.FallbackReason = res.failure.String()
		return s.meteredAttempt(w, r, t, rc, c, upstream, model, body, capped, true, cacheKey)
	}
	body, capped, release, e := s.budgetBody(t, c, model, t.req.Body)
	if e != nil {
		return res, false, e
	}
	defer release() // after the attempt has recorded its cost
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
	limits := s.budgetLimits(t)
	return len(limits) == 0 || s.ledger.Available(budget.Month(time.Now()), limits...) > 0
}

// budgetLimits returns the key's and the team's monthly platform-key
// budgets, those that are set.
func (s *Server) budgetLimits(t *turn) []budget.Limit {
	var limits []budget.Limit
	if b := t.key.MonthlyBudgetUSD; b > 0 {
		limits = append(limits, budget.Limit{Scope: budget.KeyScope(t.key.ID), USD: b})
	}
	if team := t.snap.Config.Team(t.key.Team); team != nil && team.MonthlyBudgetUSD > 0 {
		limits = append(limits, budget.Limit{Scope: budget.TeamScope(t.key.Org, t.key.Team), USD: team.MonthlyBudgetUSD})
	}
	return limits
}

// budgetBody prepares a metered attempt under the key's and team's budgets.
// It refuses the attempt when the budget is exhausted (402); otherwise it
// reserves the attempt's worst-case cost — the prompt and the requested (or,
// when unbounded, the largest affordable) completion, at the highest prices
// of any model the upstream may serve for it (the model and the chain it is
// sent) — and lowers the completion cap to what that reservation pays for.
// Attempts in flight together therefore cannot overrun a budget. The caller
// must call release once the attempt has recorded its cost.
func (s *Server) budgetBody(t *turn, c *snapshot.Compiled, model string, body connectors.Body) (_ connectors.Body, capped bool, release func(), _ *apierr.Error) {
	noop := func() {}
	limits := s.budgetLimits(t)
	if len(limits) == 0 {
		return body, false, noop, nil
	}
	month := budget.Month(time.Now())
	exhausted := apierr.New(apierr.CodeBudgetExhausted, fmt.Sprintf("the monthly platform-key budget of key %q or its team is exhausted", t.key.ID))
	in, out, priced := s.highestPrices(t, c, model)
	if !priced {
		// Nothing to cap with: refuse only an exhausted budget.
		if s.ledger.Available(month, limits...) <= 0 {
			return nil, false, noop, exhausted
		}
		return body, false, noop, nil
	}
	field := "max_tokens"
	if _, ok := body["max_completion_tokens"]; ok {
		field = "max_completion_tokens"
	}
	var asked int64
	if raw, ok := body[field]; ok {
		_ = json.Unmarshal(raw, &asked)
	}
	promptCost := float64(t.req.PromptTokens) * in / 1e6
	want := math.Inf(1)
	if asked > 0 {
		want = promptCost + float64(asked)*out/1e6
	}
	grant, release := s.ledger.Reserve(month, want, limits...)
	maxTokens := int64((grant - promptCost) / out * 1e6)
	if grant <= 0 || maxTokens < 1 {
		release()
		return nil, false, noop, exhausted
	}
	if asked > 0 && asked <= maxTokens {
		return body, false, release, nil
	}
	cappedBody := make(connectors.Body, len(body))
	for k, v := range body {
		cappedBody[k] = v
	}
	cappedBody[field] = json.RawMessage(strconv.FormatInt(maxTokens, 10))
	return cappedBody, true, release, nil
}

// highestPrices returns the highest input and output prices (USD per
// million tokens) over the endpoints of the model and of every model of the
// chain the upstream is sent (it may serve any of them); priced is false
// when the catalog has no output price for any of them.
func (s *Server) highestPrices(t *turn, c *snapshot.Compiled, model string) (in, out float64, priced bool) {
	if t.snap.Catalog == nil {
		return 0, 0, false
	}
	price := func(slug string) {
		if m, ok := t.snap.Catalog.Model(slug); ok {
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
