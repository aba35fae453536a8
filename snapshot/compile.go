package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Decision issues (or fetches from the cache) the principal's guardrail
// decision; nil when the directory has no catalog, so no guardrail applies.
func (s *Snapshot) Decision(ctx context.Context, p profiles.Principal) (*guardrails.Decision, error) {
	if s.Issuer == nil {
		return nil, nil
	}
	return s.Issuer.Decide(ctx, p)
}

// Plan decides a request for a key: ladder merge (with the request rung),
// guardrail decision, chain filtering and the provider preferences.
func (s *Snapshot) Plan(ctx context.Context, key *profiles.Key, req compiler.Request) (*compiler.Plan, *guardrails.Decision, error) {
	d, err := s.Decision(ctx, key.Principal())
	if err != nil {
		return nil, nil, err
	}
	p := compiler.Decide(req, s.layers[key.ID], d)
	p.Principal = key.Principal()
	return p, d, nil
}

// Compiled is a plan checked and translated for one upstream.
type Compiled struct {
	Upstream *Upstream
	Outcome  compiler.Outcome
	// Native is the translated request; nil when refused.
	Native *connectors.Native
	// Call is handed back to the connector to read the answer.
	Call *connectors.Call
}

// Refused returns the refusal of the check or the translation, or nil.
func (c *Compiled) Refused() *compiler.Refusal { return c.Outcome.Refused }

// Compile runs the expressibility check for the upstream, then translates.
// A translation error (a request field the upstream cannot honour) comes
// back as the error; refusals are in the outcome.
func (s *Snapshot) Compile(plan *compiler.Plan, upstream string, body connectors.Body) (*Compiled, error) {
	u := s.Upstreams[upstream]
	if u == nil {
		return nil, fmt.Errorf("snapshot: no upstream %q", upstream)
	}
	c := &Compiled{Upstream: u, Outcome: compiler.Check(plan, u.Check, s.Catalog)}
	if c.Outcome.Refused != nil {
		return c, nil
	}
	native, err := u.Connector.Translate(body, plan, &c.Outcome)
	if err != nil {
		return c, err
	}
	c.Native = native
	c.Call = &connectors.Call{Plan: plan, Outcome: &c.Outcome}
	return c, nil
}

// UpstreamNames returns the configured upstreams in file order.
func (s *Snapshot) UpstreamNames() []string {
	out := make([]string, len(s.Config.Upstreams))
	for i, u := range s.Config.Upstreams {
		out[i] = u.Name
	}
	return out
}

// Explanation is the output of `sluice explain --json` and of the admin
// API's explain endpoint: the contract the rest of the project relies on.
type Explanation struct {
	Principal profiles.Principal `json:"principal"`
	// Profile is the merged profile (the request rung included).
	Profile profiles.ProfileView `json:"profile"`
	// Sources maps each set profile field to the file that set it.
	Sources map[string]string `json:"sources"`
	// Guardrail summarises the principal's decision.
	Guardrail *GuardrailView `json:"guardrail"`
	// The fields below are present when a request was given.
	DecidedModel  string               `json:"decided_model,omitempty"`
	Chain         []string             `json:"chain"`
	Dropped       []guardrails.Dropped `json:"dropped"`
	Providers     *compiler.Providers  `json:"providers,omitempty"`
	Provenance    map[string]string    `json:"provenance"`
	ContentFilter string               `json:"content_filter"`
	Compiled      []CompiledView       `json:"compiled"`
	// Route is present when the request's model is a route alias: the
	// planned attempts, and Compiled then holds one entry per target.
	Route *RouteView `json:"route,omitempty"`
}

// RouteView is the plan of a route alias in an [Explanation]: members in
// order, removed members with the reason, restricted targets with the
// failures they take over, and the tail with its guard. Targets the request
// may not be sent to at all are listed under Skipped. Latency ordering
// (fastest) reflects no observations here: the gateway orders by what it has
// measured.
type RouteView struct {
	failover.Explanation
	Skipped []SkippedTarget `json:"skipped"`
}

// SkippedTarget is a route target the request may not be sent to.
type SkippedTarget struct {
	Upstream string            `json:"upstream"`
	Model    string            `json:"model"`
	Refused  *compiler.Refusal `json:"refused"`
}

// GuardrailView is the guardrail part of an [Explanation].
type GuardrailView struct {
	// Revision identifies the policy and catalog the decision was issued for.
	Revision string `json:"revision"`
	// Patterns are the rule values that applied to the principal.
	Patterns guardrails.Patterns `json:"patterns"`
	// Counts are the sizes of the expanded literal sets.
	Counts guardrails.Counts `json:"counts"`
	// ContentFilter is the filter the guardrail requires, or "".
	ContentFilter string `json:"content_filter"`
	// ModelAllowed tells whether the request's model is allowed (with a request).
	ModelAllowed *bool `json:"model_allowed,omitempty"`
	// Dropped lists the chain entries the guardrail removed (with a request).
	Dropped []guardrails.Dropped `json:"dropped,omitempty"`
}

// CompiledView is one upstream's compile result in an [Explanation].
type CompiledView struct {
	Upstream string `json:"upstream"`
	// Model is the target's model (route targets only).
	Model     string            `json:"model,omitempty"`
	Connector string            `json:"connector"`
	Refused   *compiler.Refusal `json:"refused"`
	Degraded  []string          `json:"degraded"`
	// Path is the upstream path the native body is posted to.
	Path string `json:"path,omitempty"`
	// Native is the exact JSON body that would be sent.
	Native json.RawMessage `json:"native"`
}

// Explain explains a key's routing: the merged profile with provenance and the
// guardrail decision, and, when req is not nil, the plan and its compiled
// form on every upstream (or only the named one).
func (s *Snapshot) Explain(ctx context.Context, key *profiles.Key, req *compiler.Request, body connectors.Body, upstream string) (*Explanation, error) {
	if upstream != "" && s.Upstreams[upstream] == nil {
		return nil, fmt.Errorf("no upstream %q (configured: %v)", upstream, s.UpstreamNames())
	}
	var routing *profiles.Profile
	if req != nil {
		routing = req.Routing
	}
	prof, _ := s.Config.Explain(key, routing)
	e := &Explanation{Principal: prof.Principal, Profile: prof.Profile, Sources: prof.Sources, Provenance: prof.Provenance,
		Chain: []string{}, Dropped: []guardrails.Dropped{}, Compiled: []CompiledView{}}
	d, err := s.Decision(ctx, key.Principal())
	if err != nil {
		return nil, err
	}
	if d != nil {
		e.Guardrail = &GuardrailView{Revision: d.Revision(), Patterns: d.Patterns(), Counts: d.Counts(), ContentFilter: d.ContentFilter()}
		e.ContentFilter = d.ContentFilter()
	}
	if req == nil {
		return e, nil
	}
	if rt := s.Config.Route(req.Model); rt != nil {
		return s.explainRoute(ctx, e, key, req, body, rt)
	}
	plan, _, err := s.Plan(ctx, key, *req)
	if err != nil {
		return nil, err
	}
	e.DecidedModel = plan.DecidedModel
	e.Chain = plan.Chain
	if plan.Dropped != nil {
		e.Dropped = plan.Dropped
	}
	e.Providers = &plan.Providers
	e.Provenance = plan.Provenance()
	if e.Guardrail != nil {
		allowed := plan.Auto || d.ModelAllowed(plan.DecidedModel)
		e.Guardrail.ModelAllowed = &allowed
		e.Guardrail.Dropped = plan.Dropped
	}
	names := s.UpstreamNames()
	if upstream != "" {
		names = []string{upstream}
	}
	for _, name := range names {
		v, err := s.compiledView(plan, name, body)
		if err != nil {
			return nil, err
		}
		e.Compiled = append(e.Compiled, v)
	}
	return e, nil
}

// compiledView checks and translates a plan for one upstream and renders the
// outcome: the refusal (a translation error counts as one, with its code) or
// what was degraded and the exact native body.
func (s *Snapshot) compiledView(plan *compiler.Plan, upstream string, body connectors.Body) (CompiledView, error) {
	c, err := s.Compile(plan, upstream, body)
	if c == nil {
		return CompiledView{}, err
	}
	v := CompiledView{Upstream: upstream, Connector: c.Upstream.Config.Connector, Refused: c.Outcome.Refused, Degraded: c.Outcome.Degraded}
	switch {
	case err != nil:
		v.Refused = &compiler.Refusal{Code: errCode(err), Message: err.Error()}
		v.Degraded = []string{}
	case c.Native != nil:
		v.Path, v.Native = c.Native.Path, c.Native.Body
	}
	return v, nil
}

// ContextWindow returns a model's context window from the catalog, or 0 when
// unknown.
func (s *Snapshot) ContextWindow(model string) int {
	if s.Catalog != nil {
		if m, ok := s.Catalog.Model(model); ok {
			return m.ContextWindow
		}
	}
	return 0
}

// explainRoute explains a route alias: every target compiled for its own
// model, and the attempts planned from the targets the request may use.
func (s *Snapshot) explainRoute(ctx context.Context, e *Explanation, key *profiles.Key, req *compiler.Request, body connectors.Body, rt *profiles.Route) (*Explanation, error) {
	views := map[[2]string]CompiledView{}
	plans := map[string]*compiler.Plan{}
	compile := func(t profiles.Target) (CompiledView, error) {
		k := [2]string{t.Upstream, t.Model}
		if v, ok := views[k]; ok {
			return v, nil
		}
		p, ok := plans[t.Model]
		if !ok {
			r := *req
			r.Model = t.Model
			var err error
			if p, _, err = s.Plan(ctx, key, r); err != nil {
				return CompiledView{}, err
			}
			plans[t.Model] = p
		}
		v, err := s.compiledView(p, t.Upstream, body)
		if err != nil {
			return CompiledView{}, err
		}
		v.Model = t.Model
		views[k] = v
		return v, nil
	}
	all := append([]profiles.Target(nil), rt.Targets...)
	if rt.Then != nil {
		all = append(all, rt.Then.Targets...)
	}
	rv := &RouteView{Skipped: []SkippedTarget{}}
	for _, t := range all {
		v, err := compile(t)
		if err != nil {
			return nil, err
		}
		e.Compiled = append(e.Compiled, v)
		if v.Refused != nil {
			rv.Skipped = append(rv.Skipped, SkippedTarget{Upstream: t.Upstream, Model: t.Model, Refused: v.Refused})
		}
	}
	usable, _ := failover.Without(rt, func(t profiles.Target) bool {
		v, _ := compile(t)
		return v.Refused != nil
	})
	fp := failover.NewPlanner(failover.PlannerOptions{}).Plan(usable, s.Config.RetryBudget(rt), failover.EstimateTokens(body["messages"]), s.ContextWindow)
	rv.Explanation = fp.Explain()
	e.Route = rv
	if first, ok := fp.First(); ok {
		p := plans[first.Model]
		e.DecidedModel, e.Chain, e.Providers, e.Provenance = p.DecidedModel, p.Chain, &p.Providers, p.Provenance()
		if p.Dropped != nil {
			e.Dropped = p.Dropped
		}
	}
	return e, nil
}

// errCode extracts the stable code of a translation error.
func errCode(err error) string {
	var te *connectors.TranslateError
	if errors.As(err, &te) {
		return te.Code
	}
	return "translation_failed"
}
