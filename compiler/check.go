package compiler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
)

// Stable refusal codes of the expressibility check.
const (
	// CodeModelForbidden: a guardrail forbids the decided model.
	CodeModelForbidden = guardrails.CodeModelForbidden
	// CodeProviderRestrictionInexpressible: the upstream cannot express an
	// allow or deny list, and serving would ignore it.
	CodeProviderRestrictionInexpressible = "provider_restriction_inexpressible"
	// CodeContentGuardrailInexpressible: the upstream does not run a required
	// content filter.
	CodeContentGuardrailInexpressible = "content_guardrail_inexpressible"
	// CodeAutoModeInexpressible: the upstream cannot delegate the model choice.
	CodeAutoModeInexpressible = "auto_mode_inexpressible"
	// CodeProviderNotPermitted: the provider lists exclude the only provider a
	// direct upstream has, or leave no provider at all.
	CodeProviderNotPermitted = "provider_not_permitted"
	// CodeUnknownModel: a direct upstream does not serve the model.
	CodeUnknownModel = "unknown_model"
	// CodeAPIUnsupported: the upstream does not serve the API the request
	// came in on (embeddings, on an upstream without an embeddings
	// endpoint).
	CodeAPIUnsupported = "api_unsupported"
	// CodeModelKindMismatch: the model does another kind of work than the
	// API the request came in on (an embedding model asked for a chat
	// completion, or a chat model for embeddings).
	CodeModelKindMismatch = "model_kind_mismatch"
)

// What a check can record as lost, in the sorted degraded set.
const (
	DegradedRanking        = "ranking"
	DegradedPreferredOrder = "preferred_order"
	DegradedChain          = "chain"
	DegradedChainTruncated = "chain_truncated"
)

// Refusal is a plan an upstream must not serve, with a stable code.
type Refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Param is a JSON pointer to the member of the request body at fault,
	// when one is (a request a connector cannot translate), or the name of
	// the request header at fault ([BetaParam]); "" otherwise.
	Param string `json:"param,omitempty"`
}

// Error implements error.
func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Capabilities declare, as data, what an upstream's native knobs can express.
// Connectors declare them; only [Check] reads them.
type Capabilities struct {
	// Ranking: the upstream can rank endpoints by cost, latency or throughput.
	Ranking bool `json:"ranking"`
	// RankingWithOrder: the upstream ranks the endpoints an explicit order
	// leaves (the order first, then the rest by rank). Without it an
	// explicit order makes the ranking inert: a degrade.
	RankingWithOrder bool `json:"ranking_with_order"`
	// PreferredOrder: the upstream can try endpoints in a given order.
	PreferredOrder bool `json:"preferred_order"`
	// AllowList: the upstream can restrict serving to listed providers.
	AllowList bool `json:"allow_list"`
	// DenyList: the upstream can exclude listed providers.
	DenyList bool `json:"deny_list"`
	// Chain: the upstream can walk a fallback chain of models itself.
	Chain bool `json:"chain"`
	// MaxChain is the longest chain the upstream accepts (0 = no limit).
	MaxChain int `json:"max_chain"`
	// Auto: the upstream can choose the model itself.
	Auto bool `json:"auto"`
	// DirectProvider is the one provider a direct upstream serves, or "" for a
	// marketplace.
	DirectProvider string `json:"direct_provider,omitempty"`
	// ZeroRetention, NoTraining, Quantizations and MaxPrice: the upstream
	// has a knob that restricts serving to endpoints meeting that data
	// restriction, and enforces it.
	ZeroRetention bool `json:"zero_retention,omitempty"`
	NoTraining    bool `json:"no_training,omitempty"`
	Quantizations bool `json:"quantizations,omitempty"`
	MaxPrice      bool `json:"max_price,omitempty"`
	// DataKnobsCallerKey: the upstream enforces its zero-retention and
	// no-training knobs on a request made with a caller's own key too.
	// Without it such a request cannot be held to them.
	DataKnobsCallerKey bool `json:"data_knobs_caller_key,omitempty"`
	// Betas, when not nil, is the set of Anthropic beta flags (the
	// anthropic-beta header's values) the upstream accepts, each with the
	// source that says so; a flag outside it is not sent, and the check
	// degrades or refuses the request by what the flag asks for. Nil: the
	// upstream takes every flag the caller sends (Anthropic's own API, the
	// marketplaces).
	Betas map[string]string `json:"betas,omitempty"`
}

// Upstream is what the check needs to know of one configured upstream.
type Upstream struct {
	// Name is the configured upstream name.
	Name string
	// Connector is its connector kind, the vocabulary the catalog's name maps
	// spell models and providers in for it.
	Connector string
	// Capabilities are its connector's.
	Capabilities Capabilities
	// ContentFilters are the filters it is known to run.
	ContentFilters []string
	// Agreement is the data terms declared for the upstream's own account
	// (a direct upstream's zero-retention contract); they do not hold on
	// a caller's own key.
	Agreement Agreement
	// CallerKey reports that the request goes out on the caller's own key
	// for this upstream, not the platform key.
	CallerKey bool
	// Region is the upstream's declared region ([[upstreams]] region, in
	// its cloud's spelling, or a geography); "" when none is declared.
	Region string
}

// Outcome is the check's verdict for one plan on one upstream.
type Outcome struct {
	// Refused is set when the upstream must not serve the plan.
	Refused *Refusal `json:"refused"`
	// Degraded is the sorted set of what could not be expressed and was
	// proceeded without; empty (never nil) when nothing was lost.
	Degraded []string `json:"degraded"`
	// Chain is the part of the plan's chain to express (truncated to the
	// upstream's maximum; empty when the upstream cannot walk a chain).
	Chain []string `json:"-"`
	// NativeModel is the model id to send: the catalog's native id on a direct
	// upstream, the model's upstream id for the connector (else its slug) on
	// a marketplace.
	NativeModel string `json:"-"`
	// Providers are the plan's provider preferences to express, spelled as
	// the upstream names providers (the catalog's send names): a rank the
	// upstream cannot honour beside an explicit order is left out.
	Providers Providers `json:"-"`
	// AutoModels are the plan's auto-mode models in the upstream's ids.
	AutoModels []string `json:"-"`
	// Data are the plan's data restrictions the upstream's own knobs carry
	// (the rest are held by allow-list or decided locally); empty when
	// none is sent.
	Data DataPolicy `json:"-"`
	// DataVia records how each of the plan's data restrictions is held on
	// this upstream, "field=how" comma-separated in the plan's field order
	// (how is [ViaNative], [ViaAllowList] or [ViaLocal]); "" without any.
	DataVia string `json:"data_via,omitempty"`
	// Region is where a direct upstream processes the request: the
	// geography of its model id when that names a cross-region inference
	// profile (an Amazon Bedrock "eu." id: "eu", or "global"), else its
	// declared region; "" on a marketplace (the endpoint is chosen there)
	// and on an upstream that declares none. The row's served_region.
	Region string `json:"region,omitempty"`
	// Betas are the anthropic-beta flags to send: the plan's flags the
	// upstream takes (all of them when its [Capabilities.Betas] is nil), in
	// the caller's order; nil without any. Every connector that passes
	// anthropic-beta on sends exactly these, never the inbound request's
	// own list: a flag the check dropped (recorded as "beta:<flag>" in
	// Degraded) is not sent.
	Betas []string `json:"-"`
}

var noneDegraded = []string{}

// Check decides what the upstream can express of the plan. It runs once per
// (plan, upstream), before translation: connectors never re-check. cat may be
// nil when no catalog is loaded (then a direct upstream accepts its own
// author's models only).
func Check(p *Plan, u Upstream, cat *guardrails.Catalog) Outcome {
	out := Outcome{Degraded: noneDegraded}
	refuse := func(code, format string, args ...any) Outcome {
		out.Refused = &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
		return out
	}
	if p.Refused != nil {
		out.Refused = p.Refused
		return out
	}
	caps := u.Capabilities
	if p.Auto && !caps.Auto {
		return refuse(CodeAutoModeInexpressible, "upstream %q cannot choose the model itself, and a delegated decision has no model to fall back to; name a model", u.Name)
	}
	ps := p.Providers
	if ps.Allowed != nil && len(ps.Allowed) == 0 {
		return refuse(CodeProviderNotPermitted, "the profile's and the guardrail's allowed providers have no provider in common, so no provider may serve")
	}
	if caps.DirectProvider != "" {
		// A direct upstream serves one provider: the lists are decided here.
		if !Permits(ps, caps.DirectProvider) {
			return refuse(CodeProviderNotPermitted, "upstream %q is served only by provider %q, which the provider restrictions exclude", u.Name, caps.DirectProvider)
		}
	} else {
		if ps.Allowed != nil && !caps.AllowList {
			return refuse(CodeProviderRestrictionInexpressible, "upstream %q cannot restrict which providers serve, and serving would ignore the allowed list %v", u.Name, ps.Allowed)
		}
		if len(ps.Denied) > 0 && !caps.DenyList {
			return refuse(CodeProviderRestrictionInexpressible, "upstream %q cannot exclude providers, and serving could route to a denied provider %v", u.Name, ps.Denied)
		}
	}
	if p.ContentFilter != "" && !contains(u.ContentFilters, p.ContentFilter) {
		return refuse(CodeContentGuardrailInexpressible, "content filter %q must run on this traffic and upstream %q does not run it; a filter that does not run leaves no trace, so the request is refused rather than answered unfiltered", p.ContentFilter, u.Name)
	}
	out.NativeModel = p.DecidedModel
	if caps.DirectProvider != "" && !p.Auto {
		native, ok := nativeID(cat, p.DecidedModel, caps.DirectProvider)
		if !ok {
			return refuse(CodeUnknownModel, "upstream %q (provider %q) does not serve model %q", u.Name, caps.DirectProvider, p.DecidedModel)
		}
		out.NativeModel = native
	}
	if caps.DirectProvider != "" {
		out.Region = servedRegion(caps.DirectProvider, u.Region, out.NativeModel)
	}

	var degraded []string
	if caps.DirectProvider == "" {
		// Ranking and order have nothing to choose between on a direct
		// upstream: inert there, and nothing was under-delivered.
		out.NativeModel = upstreamID(cat, u.Connector, p.DecidedModel)
		out.Providers = spell(cat, u.Connector, ps)
		if ps.RankBy != "" && !caps.Ranking {
			degraded = append(degraded, DegradedRanking)
		}
		if len(ps.Preferred) > 0 && !caps.PreferredOrder {
			degraded = append(degraded, DegradedPreferredOrder)
		}
		if ps.RankBy != "" && caps.Ranking && len(ps.Preferred) > 0 && caps.PreferredOrder && !caps.RankingWithOrder {
			// The upstream sorts only when no order is given: the order wins,
			// and the rank of the endpoints after it is lost.
			degraded = append(degraded, DegradedRanking)
			out.Providers.RankBy = ""
		}
		if p.AutoModels != nil {
			out.AutoModels = upstreamIDs(cat, u.Connector, p.AutoModels)
		}
	}
	betas, r := checkBetas(p.Betas, caps.Betas, u.Name, &degraded)
	if r != nil {
		out.Refused = r
		return out
	}
	out.Betas = betas
	if !p.Data.Empty() {
		if r := checkData(p, u, cat, &out); r != nil {
			out.Refused = r
			return out
		}
	}
	switch {
	case len(p.Chain) == 0:
	case !caps.Chain:
		degraded = append(degraded, DegradedChain)
	case caps.MaxChain > 0 && len(p.Chain) > caps.MaxChain:
		degraded = append(degraded, DegradedChainTruncated)
		out.Chain = upstreamIDs(cat, u.Connector, p.Chain[:caps.MaxChain])
	default:
		out.Chain = upstreamIDs(cat, u.Connector, p.Chain)
	}
	if len(degraded) > 0 {
		sort.Strings(degraded)
		out.Degraded = degraded
	}
	return out
}

// upstreamID is the id a marketplace is sent for a model: its upstream id
// for the connector in the catalog, else the slug.
func upstreamID(cat *guardrails.Catalog, connector, slug string) string {
	if cat == nil {
		return slug
	}
	return cat.UpstreamID(connector, slug)
}

// upstreamIDs spells a list of models for the connector; the list itself is
// returned when nothing changes, so the common case allocates nothing.
func upstreamIDs(cat *guardrails.Catalog, connector string, slugs []string) []string {
	return respell(slugs, func(s string) string { return upstreamID(cat, connector, s) })
}

// respell maps each entry of l through name; l itself is returned when no
// entry changes (it is copied only from the first one that does).
func respell(l []string, name func(string) string) []string {
	var out []string
	for i, e := range l {
		n := name(e)
		if out == nil && n != e {
			out = append(make([]string, 0, len(l)), l[:i]...)
		}
		if out != nil {
			out = append(out, n)
		}
	}
	if out == nil {
		return l
	}
	return out
}

// spell returns the provider preferences in the connector's names (the
// catalog's send names); lists without a differently spelled entry are
// shared, not copied.
func spell(cat *guardrails.Catalog, connector string, ps Providers) Providers {
	if cat == nil {
		return ps
	}
	send := func(e string) string { return cat.SendName(connector, e) }
	names := func(l []string) []string { return respell(l, send) }
	return Providers{RankBy: ps.RankBy, Preferred: names(ps.Preferred), Allowed: names(ps.Allowed), Denied: names(ps.Denied)}
}

// nativeID returns a direct provider's own id for a model: the catalog's
// native mapping, else the slug's name when the catalog lists the provider as
// an endpoint of the model (or, without a catalog, when the provider is the
// model's author).
func nativeID(cat *guardrails.Catalog, slug, provider string) (string, bool) {
	author, name, _ := strings.Cut(slug, "/")
	if cat == nil {
		return name, author == provider && name != ""
	}
	m, ok := cat.Model(slug)
	if !ok {
		return "", false
	}
	if id, ok := m.Native[provider]; ok && id != "" {
		return id, true
	}
	for _, e := range m.Endpoints {
		if e.Provider == provider {
			return name, true
		}
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}
