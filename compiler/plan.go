package compiler

import (
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// AutoModel is the model a request sends to ask the upstream to choose.
const AutoModel = "auto"

// Provenance names of values the compiler itself supplies.
const (
	// RungAnthropicDefault marks the Anthropic first-party default order.
	RungAnthropicDefault = "default:anthropic-first-party"
	// RungSession marks a preferred entry that came from a session pin.
	RungSession = "session"
	// RungGuardrail marks provider lists that only a guardrail set.
	RungGuardrail = "guardrail"
)

// Request is what the compiler needs from a parsed request.
type Request struct {
	// Principal is who the request is issued for; a plan carries it.
	Principal profiles.Principal
	// Model is the requested model slug, or [AutoModel].
	Model string
	// Routing is the request rung (the body's "routing" object), or nil.
	Routing *profiles.Profile
	// PinnedProvider is the provider a session is pinned to, or "". It becomes
	// the first preferred entry unless a restriction forbids it.
	PinnedProvider string
	// Session is the request's session id ("" without one); a plan carries
	// it so that a connector can express it in its upstream's own
	// stickiness knob.
	Session string
	// Betas are the request's anthropic-beta flags, in the caller's order
	// (nil without any): the check keeps, per upstream, those it takes.
	Betas []string
}

// Providers are the effective provider preferences of a plan. Entries are
// lower-case literal slugs: "provider" (every endpoint) or "provider/tag".
type Providers struct {
	// RankBy is "cost", "latency", "throughput" or "" (none).
	RankBy string `json:"rank_by"`
	// Preferred is an explicit order tried before other eligible endpoints.
	Preferred []string `json:"preferred"`
	// Allowed restricts who may serve; nil means no restriction, and an empty
	// non-nil list means nobody may (the profile and guardrail lists share no
	// provider).
	Allowed []string `json:"allowed"`
	// Denied lists who may never serve.
	Denied []string `json:"denied"`
}

// Plan is the compiled decision for one request and one principal, before any
// upstream is considered.
type Plan struct {
	Principal profiles.Principal `json:"principal"`
	// DecidedModel is the model the request asked for (lower-case).
	DecidedModel string `json:"decided_model"`
	// Auto reports that the request delegates the model choice to the upstream.
	Auto bool `json:"auto"`
	// Chain is the fallback chain after dedupe and guardrail filtering: at most
	// [profiles.MaxFallbacks] entries, first entry first. Empty means no chain.
	Chain []string `json:"chain"`
	// Dropped lists chain entries removed before anything is forwarded.
	Dropped []guardrails.Dropped `json:"dropped"`
	// Providers are the effective provider preferences.
	Providers Providers `json:"providers"`
	// Merged is the merged profile the plan was decided from; with the
	// overrides below it gives [Plan.Provenance]. Kept as it is, so that the
	// hot path builds no provenance map nobody reads, and shared by the plans
	// of one request.
	Merged *profiles.Merged `json:"-"`
	// PreferredRung overrides the rung of providers.preferred when the
	// compiler supplied the order ([RungAnthropicDefault], [RungSession]).
	PreferredRung string `json:"-"`
	// GuardrailAllowed and GuardrailDenied report that a guardrail contributed
	// to the effective provider lists.
	GuardrailAllowed, GuardrailDenied bool `json:"-"`
	// AutoModels restricts an auto-mode choice to these models: the
	// guardrail's literal allowed set. nil means unrestricted.
	AutoModels []string `json:"auto_models,omitempty"`
	// ContentFilter names a content filter the guardrail requires, or "".
	ContentFilter string `json:"content_filter"`
	// Refused is set when the plan is refused before any upstream is
	// considered (a guardrail forbids the decided model).
	Refused *Refusal `json:"refused,omitempty"`
	// Data are the data restrictions that bind the plan: the merged
	// profile's, tightened by the guardrail's.
	Data DataPolicy `json:"data"`
	// GuardrailData has a bit for each data restriction a guardrail set.
	GuardrailData uint8 `json:"-"`
	// Session is the request's session id ([Request.Session]), "" without
	// one. Connectors whose upstream has a stickiness knob send it there
	// (OpenRouter's session_id, OpenAI's prompt_cache_key).
	Session string `json:"session,omitempty"`
	// Betas are the request's anthropic-beta flags ([Request.Betas]).
	Betas []string `json:"betas,omitempty"`
}

// Decide builds the plan for a request from the principal's ladder (layers top
// first, the request rung not included) and their guardrail decision. A nil
// decision means no guardrail applies.
func Decide(req Request, layers []profiles.Layer, d *guardrails.Decision) *Plan {
	if req.Routing != nil {
		layers = append(layers[:len(layers):len(layers)], profiles.Layer{Rung: "request", File: profiles.RequestFile, Profile: req.Routing})
	}
	m := profiles.Merge(layers...)
	return DecideMerged(req, &m, d)
}

// DecideMerged is [Decide] for a profile that is already merged (the request
// rung included), so that a caller can cache the ladder merge and share it
// between the plans of one request. The plan keeps m: it must not change
// afterwards.
func DecideMerged(req Request, m *profiles.Merged, d *guardrails.Decision) *Plan {
	model := strings.ToLower(req.Model)
	p := &Plan{Principal: req.Principal, DecidedModel: model, Auto: model == AutoModel, Merged: m, Session: req.Session, Betas: req.Betas}
	if d != nil {
		p.ContentFilter = d.ContentFilter()
	}

	// The decided model passes the guardrail first; a refusal here refuses
	// every upstream alike. Auto mode has no model to check: the upstream is
	// restricted to the allowed models when it is translated.
	if p.Auto && d != nil {
		p.AutoModels = d.AllowedModels()
		if p.AutoModels != nil && len(p.AutoModels) == 0 {
			// Model rules apply and match nothing: an empty list sent to an
			// auto router could read as "no restriction".
			p.Refused = &Refusal{Code: CodeModelForbidden, Message: fmt.Sprintf(
				"auto mode has no model to choose from: the guardrail for principal %s allows none of the catalog's models", p.Principal)}
		}
	}
	if !p.Auto && d != nil {
		if err := d.CheckModel(model); err != nil {
			r := err.(*guardrails.Refusal)
			p.Refused = &Refusal{Code: r.Code, Message: r.Message}
		}
	}

	// The chain: the merged fallbacks without the decided model, each entry
	// through the same gate as the decided model.
	if m.Fallbacks.Set && len(m.Fallbacks.Value) > 0 {
		chain := make([]string, 0, len(m.Fallbacks.Value))
		for _, f := range m.Fallbacks.Value {
			if f != model {
				chain = append(chain, f)
			}
		}
		if d != nil {
			p.Chain, p.Dropped = d.FilterChain(chain, chain)
		} else {
			p.Chain = dedupe(chain)
		}
		if len(p.Chain) > profiles.MaxFallbacks {
			p.Chain = p.Chain[:profiles.MaxFallbacks]
		}
	}
	if p.Chain == nil {
		p.Chain = []string{}
	}

	decideData(p, m, d)
	p.Providers.RankBy = m.RankBy.Value
	p.Providers.Allowed, p.Providers.Denied = guardrails.CombineProviders(m.Allowed.Value, m.Denied.Value, m.Allowed.Set, d)
	if d != nil {
		p.GuardrailAllowed, p.GuardrailDenied = d.RestrictsProviders()
	}
	if p.Providers.Denied == nil {
		p.Providers.Denied = []string{}
	}
	p.Providers.Preferred = m.Preferred.Value
	if p.Providers.Preferred == nil {
		p.Providers.Preferred = noProviders
	}

	// The Anthropic first-party default: only there are automatic prompt-cache
	// breakpoints guaranteed. It stands down for any explicit preference.
	if strings.HasPrefix(model, "anthropic/") && !m.Preferred.Set && len(p.Providers.Allowed) == 0 && !names(p.Providers.Denied, "anthropic") {
		p.Providers.Preferred = anthropicFirst
		p.PreferredRung = RungAnthropicDefault
	}

	// A session pin goes first, unless a restriction forbids its provider.
	if pin := strings.ToLower(req.PinnedProvider); pin != "" && Permits(p.Providers, pin) {
		pref := make([]string, 0, len(p.Providers.Preferred)+1)
		pref = append(pref, pin)
		for _, e := range p.Providers.Preferred {
			if e != pin {
				pref = append(pref, e)
			}
		}
		p.Providers.Preferred = pref
		p.PreferredRung = RungSession
	}
	return p
}

// Shared read-only lists: a plan's lists are never modified after Decide.
var (
	noProviders    = []string{}
	anthropicFirst = []string{"anthropic"}
)

// Provenance maps each set field to the rung that set it ("fallbacks",
// "providers.rank_by", "providers.preferred", "providers.allowed",
// "providers.denied"): a ladder rung, "request", a compiler default, or
// "RUNG+guardrail" when a guardrail contributed as well.
func (p *Plan) Provenance() map[string]string {
	out := p.Merged.Provenance()
	if p.PreferredRung != "" {
		out["providers.preferred"] = p.PreferredRung
	}
	if p.GuardrailAllowed {
		out["providers.allowed"] = joinRung(out["providers.allowed"])
	}
	if p.GuardrailDenied {
		out["providers.denied"] = joinRung(out["providers.denied"])
	}
	for _, g := range []struct {
		bit uint8
		key string
		set bool // the plan holds the value (a max_price side may be unset)
	}{
		{guardZeroRetention, "data.zero_retention", true},
		{guardNoTraining, "data.no_training", true},
		{guardQuantizations, "providers.quantizations", true},
		{guardRegions, "data.regions", true},
		{guardMaxPrice, "providers.max_price.input", p.Data.MaxPriceIn != nil},
		{guardMaxPrice, "providers.max_price.output", p.Data.MaxPriceOut != nil},
	} {
		if p.GuardrailData&g.bit != 0 && g.set {
			out[g.key] = joinRung(out[g.key])
		}
	}
	return out
}

// joinRung records that a guardrail contributed to a provider list.
func joinRung(rung string) string {
	if rung == "" {
		return RungGuardrail
	}
	return rung + "+" + RungGuardrail
}

// Permits reports whether the effective lists let the provider serve: no allow
// list or an allowed entry covering it, and no denied entry covering it.
// provider is a base slug or provider/tag.
func Permits(ps Providers, provider string) bool {
	if ps.Allowed != nil {
		ok := false
		for _, a := range ps.Allowed {
			if covers(a, provider) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, d := range ps.Denied {
		if covers(d, provider) {
			return false
		}
	}
	return true
}

// covers reports whether entry a covers b: equal, or a is b's base provider.
func covers(a, b string) bool {
	return a == b || (len(b) > len(a) && b[len(a)] == '/' && b[:len(a)] == a)
}

// names reports whether any entry names the provider, on its own or by one of
// its endpoint tags.
func names(list []string, provider string) bool {
	for _, e := range list {
		if e == provider || strings.HasPrefix(e, provider+"/") {
			return true
		}
	}
	return false
}

func dedupe(in []string) []string {
	out := in[:0]
	for _, s := range in {
		dup := false
		for _, o := range out {
			if o == s {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}
