package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

// Compiled is a plan checked and translated for one upstream.
type Compiled struct {
	Upstream *Upstream
	Outcome  compiler.Outcome
	// Native is the translated request; nil when refused.
	Native *connectors.Native
	// Call is handed back to the connector to read the answer.
	Call *connectors.Call
	// untranslatable is the translation's refusal: a request the connector
	// cannot write for this upstream (the client's to fix).
	untranslatable *compiler.Refusal
	// api is the API the request came in on.
	api connectors.API
}

// Refused returns why the upstream must not serve the request: the check's
// refusal, or a translation error (code unsupported_parameter or
// invalid_request, with the JSON pointer of the member at fault); nil when
// it may.
func (c *Compiled) Refused() *compiler.Refusal {
	if c.untranslatable != nil {
		return c.untranslatable
	}
	return c.Outcome.Refused
}

// Degraded returns what the upstream could not express and proceeds without:
// the check's sorted set, or none when the translation refused the request.
func (c *Compiled) Degraded() []string {
	if c.untranslatable != nil {
		return noneDegraded
	}
	return c.Outcome.Degraded
}

var noneDegraded = []string{}

// Compile runs the expressibility check for the upstream, then translates.
// Refusals of either step are in [Compiled.Refused]; the error is only for an
// upstream the snapshot does not have.
func (s *Snapshot) Compile(plan *compiler.Plan, upstream string, body connectors.Body) (*Compiled, error) {
	return s.CompileFor(plan, upstream, body, nil)
}

// CompileFor is [Snapshot.Compile] for a request that came in on in's API
// (chat completions when in is nil): the check runs with what the upstream
// can express for that API, a model of the other kind or an upstream that
// does not serve the API at all is refused, and the translation is the
// API's (see [connectors.TranslateFor]). What the translation could not
// carry joins the check's degraded set.
func (s *Snapshot) CompileFor(plan *compiler.Plan, upstream string, body connectors.Body, in *connectors.Inbound) (*Compiled, error) {
	u := s.Upstreams[upstream]
	if u == nil {
		return nil, fmt.Errorf("snapshot: no upstream %q", upstream)
	}
	api := connectors.APIChat
	if in != nil {
		api = in.API
	}
	check := u.Check
	check.CallerKey = s.CallerKey(plan.Principal.Key, upstream) != ""
	if api != connectors.APIChat {
		// The upstream's endpoint for the API may take fewer knobs than
		// its chat endpoint (Vercel's Messages endpoint takes none).
		check.Capabilities = connectors.CapabilitiesFor(u.Connector, api)
	}
	if plan.Refused == nil {
		// Before the check: a model of the wrong kind, or an API the
		// upstream lacks, says more than what the check would find next.
		if r := s.apiRefusal(plan, u, api); r != nil {
			return &Compiled{Upstream: u, Outcome: compiler.Outcome{Refused: r, Degraded: noneDegraded}, api: api}, nil
		}
	}
	c := &Compiled{Upstream: u, Outcome: compiler.Check(plan, check, s.Catalog), api: api}
	if c.Outcome.Refused != nil {
		return c, nil
	}
	native, err := connectors.TranslateFor(u.Connector, in, body, plan, &c.Outcome)
	if err != nil {
		c.untranslatable = untranslatable(err)
		return c, nil
	}
	c.Native = native
	c.Outcome.Degraded = connectors.MergeDegraded(c.Outcome.Degraded, native)
	c.Call = &connectors.Call{Plan: plan, Outcome: &c.Outcome, UsageAdded: native.UsageAdded, Inbound: in}
	if in != nil && (in.API == connectors.APIMessages || in.API == connectors.APIResponses) && s.Catalog != nil {
		cat, kind, direct := s.Catalog, u.Config.Connector, u.Check.Capabilities.DirectProvider
		c.Call.Resolve = func(reported string) string {
			slug, _ := cat.ReportedModel(kind, direct, reported)
			return slug
		}
	}
	return c, nil
}

// apiRefusal refuses a request for a model of the other kind than its API
// (the catalog says which), then one for an API the upstream does not
// serve.
func (s *Snapshot) apiRefusal(plan *compiler.Plan, u *Upstream, api connectors.API) *compiler.Refusal {
	if s.Catalog != nil && !plan.Auto {
		m, ok := s.Catalog.Model(plan.DecidedModel)
		if ok && m.Embedding() != (api == connectors.APIEmbeddings) {
			if m.Embedding() {
				return &compiler.Refusal{Code: compiler.CodeModelKindMismatch, Param: "/model", Message: fmt.Sprintf(
					"model %q is an embedding model (the catalog's kind); send it to POST /v1/embeddings", m.Slug)}
			}
			return &compiler.Refusal{Code: compiler.CodeModelKindMismatch, Param: "/model", Message: fmt.Sprintf(
				"model %q is a chat model, not an embedding model (the catalog's kind); embeddings need a model of kind \"embedding\"", m.Slug)}
		}
		if ok && m.Realtime() != (api == connectors.APIRealtime) {
			if m.Realtime() {
				return &compiler.Refusal{Code: compiler.CodeModelKindMismatch, Param: "/model", Message: fmt.Sprintf(
					"model %q is a realtime model (the catalog's kind); open a session on GET /v1/realtime", m.Slug)}
			}
			return &compiler.Refusal{Code: compiler.CodeModelKindMismatch, Param: "/model", Message: fmt.Sprintf(
				"model %q is not a realtime model (the catalog's kind); a realtime session needs a model of kind \"realtime\"", m.Slug)}
		}
	}
	if !connectors.Serves(u.Connector, api) {
		return &compiler.Refusal{Code: compiler.CodeAPIUnsupported, Message: fmt.Sprintf(
			"upstream %q (%s) does not serve the %s API", u.Config.Name, u.Config.Connector, api)}
	}
	return nil
}

// untranslatable turns a connector's translation error into a refusal that
// keeps its code and the pointer to the member at fault.
func untranslatable(err error) *compiler.Refusal {
	var te *connectors.TranslateError
	if errors.As(err, &te) {
		return &compiler.Refusal{Code: te.Code, Message: te.Message, Param: te.Param}
	}
	return &compiler.Refusal{Code: connectors.CodeInvalidRequest, Message: err.Error()}
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
	// Data is the data policy that binds the plan (the profile's tightened
	// by the guardrail's), omitted when there is none; who set each field
	// is in Provenance.
	Data     *compiler.DataPolicy `json:"data,omitempty"`
	Compiled []CompiledView       `json:"compiled"`
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
	// Session is true for a realtime session's plan: its candidates are
	// the members in order, and the Restricted targets are left out (a
	// session never uses a takes_over target).
	Session bool `json:"session,omitempty"`
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
	// Affinity is the upstream's stickiness knob the body sets for the
	// request's session ([connectors.Native.Affinity]), "" for none.
	Affinity string `json:"affinity,omitempty"`
	// Asked is how the upstream is asked for the request's API
	// ([connectors.Asked]): "native", "via chat", ...
	Asked string `json:"asked"`
	// DataVia is how each data restriction is held on this upstream
	// ("zero_retention=native,max_price=allow_list"), omitted without one.
	DataVia string `json:"data_via,omitempty"`
	// Region is where a direct upstream processes the request
	// ([compiler.Outcome.Region]: its declared region, or its model id's
	// inference-profile geography), omitted on a marketplace and on an
	// upstream that declares none.
	Region string `json:"region,omitempty"`
	// Betas are the anthropic-beta flags the upstream would be sent
	// ([compiler.Outcome.Betas]), omitted without any.
	Betas []string `json:"betas,omitempty"`
}

// Explain explains a key's routing: the merged profile with provenance and the
// guardrail decision, and, when req is not nil, the plan and its compiled
// form on every upstream (or only the named one).
func (s *Snapshot) Explain(ctx context.Context, key *profiles.Key, req *compiler.Request, body connectors.Body, upstream string) (*Explanation, error) {
	return s.ExplainFor(ctx, key, req, body, nil, upstream)
}

// ExplainFor is [Snapshot.Explain] for a request that came in on in's API
// (chat completions when in is nil): each upstream is compiled as it would
// be asked for that API, natively or translated, and says which.
func (s *Snapshot) ExplainFor(ctx context.Context, key *profiles.Key, req *compiler.Request, body connectors.Body, in *connectors.Inbound, upstream string) (*Explanation, error) {
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
	var pin Pin
	if req.PinnedProvider != "" {
		pin = Pin{Model: strings.ToLower(req.Model), Provider: req.PinnedProvider}
	}
	memo := s.Memo(key, d, routing, pin, body)
	memo.SetSession(req.Session)
	memo.SetInbound(in)
	if rt := s.Config.Route(req.Model); rt != nil {
		return e, s.explainRoute(e, memo, rt, in != nil && in.API == connectors.APIRealtime)
	}
	plan := memo.Plan(strings.ToLower(req.Model))
	e.setPlan(plan)
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
		c, err := memo.Compile(name, plan.DecidedModel)
		if err != nil {
			return nil, err
		}
		e.Compiled = append(e.Compiled, view(c, ""))
	}
	return e, nil
}

// ExplainModel explains a key's routing of a request that names a model (or
// route alias) and carries nothing else ([ModelBody]).
func (s *Snapshot) ExplainModel(ctx context.Context, key *profiles.Key, model string) (*Explanation, error) {
	model = strings.ToLower(strings.TrimSpace(model))
	return s.Explain(ctx, key, &compiler.Request{Model: model}, ModelBody(model), "")
}

// setPlan shows the plan's decision: the decided model, its chain and what
// was dropped from it, the effective provider lists and their provenance.
func (e *Explanation) setPlan(p *compiler.Plan) {
	e.DecidedModel, e.Chain, e.Providers, e.Provenance = p.DecidedModel, p.Chain, &p.Providers, p.Provenance()
	if !p.Data.Empty() {
		e.Data = &p.Data
	}
	if p.Dropped != nil {
		e.Dropped = p.Dropped
	}
}

// view renders one compile result: the refusal, or what was degraded and
// the exact native body. model is set for route targets only.
func view(c *Compiled, model string) CompiledView {
	v := CompiledView{Upstream: c.Upstream.Config.Name, Model: model, Connector: c.Upstream.Config.Connector, Refused: c.Refused(), Degraded: c.Degraded(),
		Asked: connectors.Asked(connectors.Dialect(c.Upstream.Connector, c.Outcome.NativeModel), c.api), DataVia: c.Outcome.DataVia, Region: c.Outcome.Region, Betas: c.Outcome.Betas}
	if c.Native != nil {
		v.Path, v.Native, v.Affinity = c.Native.Path, c.Native.Body, c.Native.Affinity
	}
	return v
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
func (s *Snapshot) explainRoute(e *Explanation, memo *Memo, rt *profiles.Route, session bool) error {
	rv := &RouteView{Skipped: []SkippedTarget{}, Session: session}
	for _, t := range rt.AllTargets() {
		c, err := memo.Compile(t.Upstream, t.Model)
		if err != nil {
			return err
		}
		v := view(c, t.Model)
		e.Compiled = append(e.Compiled, v)
		if v.Refused != nil {
			rv.Skipped = append(rv.Skipped, SkippedTarget{Upstream: t.Upstream, Model: t.Model, Refused: v.Refused})
		}
	}
	usable, _, err := memo.Usable(rt)
	if err != nil {
		return err
	}
	fp := s.PlanRoute(failover.NewPlanner(failover.PlannerOptions{}), usable, memo.Body())
	rv.Explanation = fp.Explain()
	if session && len(rv.Restricted) > 0 {
		rv.Notes = append(rv.Notes, "a realtime session's candidates are the members in order, fixed before any attempt fails: the restricted targets are left out")
	}
	e.Route = rv
	if first, ok := fp.First(); ok {
		e.setPlan(memo.Plan(first.Model))
	}
	return nil
}

// PlanRoute orders the attempts of a request on a route (one whose targets
// the request may all be sent to: [Memo.Usable]) with the route's retry
// budget, the prompt's estimated size and the catalog's context windows and
// classes (a target whose model the catalog gives a forbidden class is
// removed like one of a forbidden class of its own).
func (s *Snapshot) PlanRoute(p *failover.Planner, usable *profiles.Route, body connectors.Body) *failover.Plan {
	usable = s.withCatalogClasses(usable)
	return p.Plan(usable, s.Config.RetryBudget(usable), failover.EstimateTokens(PromptOf(body)), s.ContextWindow)
}

// PromptOf is the part of a body whose size estimates the prompt: the
// messages of a chat or Messages request, the input of an embeddings one.
func PromptOf(body connectors.Body) []byte {
	if m, ok := body["messages"]; ok {
		return m
	}
	return body["input"]
}

// ResolveModel returns the catalog slug a client's model name stands for,
// as the clients of an API whose model ids are provider's write it: a route
// alias or a catalog slug as it is, else the model whose alias, upstream id
// or native id at provider it is (with or without a date suffix), else the
// name as it is (the plan refuses what it cannot serve).
func (s *Snapshot) ResolveModel(model, provider string) string {
	if s.Config.Route(model) != nil || s.Catalog == nil {
		return model
	}
	if _, ok := s.Catalog.Model(model); ok {
		return model
	}
	if slug, ok := s.Catalog.ReportedModel(provider, provider, model); ok {
		return slug
	}
	return model
}
