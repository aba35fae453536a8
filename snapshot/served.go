package snapshot

import (
	"strings"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
)

// Served is who answered a request, in the catalog's names.
type Served struct {
	// Model is the catalog slug of the model that answered; an id that names
	// no catalog model is kept as the upstream reported it (on a direct
	// upstream as "<provider>/<id>"), so a substitution stays visible.
	Model string
	// Provider is the catalog slug of the provider that served ("provider"
	// or "provider/tag"); a name that matches no provider is kept as the
	// upstream reported it; "" when the upstream did not say.
	Provider string
	// Endpoint is the catalog endpoint that served, whose prices cost the
	// answer; nil when the model or the provider is unknown — an answer is
	// never priced at another endpoint.
	Endpoint *guardrails.Endpoint
	// ModelUnmatched and ProviderUnmatched report an id or a name the
	// upstream reported that matched nothing in the catalog (counted, so
	// that the catalog can learn it: an alias, a provider spelling).
	ModelUnmatched, ProviderUnmatched bool
}

// Served resolves what an upstream reported of an answer to the catalog's
// names. A reported model is the catalog model whose slug, alias, upstream
// id or native id it is, with or without a date or version suffix
// ([guardrails.Catalog.ReportedModel]), or the model or chain entry it was
// sent as; an unreported model is the decided one. A reported provider is
// the catalog provider it names in that upstream's spelling
// ([guardrails.Catalog.ReportedProvider]); a direct upstream's is its own.
func (c *Compiled) Served(cat *guardrails.Catalog, res connectors.Result) Served {
	var sv Served
	kind := c.Upstream.Config.Connector
	direct := c.Upstream.Check.Capabilities.DirectProvider
	sv.Model, sv.ModelUnmatched = c.servedModel(cat, kind, direct, res.ServedModel)
	switch {
	case direct != "":
		sv.Provider = direct
	case res.ServedProvider == "":
	case cat == nil:
		sv.Provider = strings.ToLower(res.ServedProvider)
	default:
		p, ok := cat.ReportedProvider(kind, res.ServedProvider)
		if !ok {
			sv.Provider, sv.ProviderUnmatched = res.ServedProvider, true
			break
		}
		sv.Provider = p
	}
	if cat != nil && !sv.ModelUnmatched && !sv.ProviderUnmatched && sv.Provider != "" {
		sv.Endpoint = endpoint(cat, sv.Model, sv.Provider)
	}
	return sv
}

// servedModel resolves a reported model id; unmatched is true when it names
// nothing the catalog or the request knows.
func (c *Compiled) servedModel(cat *guardrails.Catalog, kind, direct, reported string) (model string, unmatched bool) {
	plan := c.Call.Plan
	if reported == "" {
		return plan.DecidedModel, false
	}
	if cat != nil {
		if slug, ok := cat.ReportedModel(kind, direct, reported); ok {
			return slug, false
		}
	}
	// What the request was sent as: the model and the chain, in the
	// upstream's ids (a model the catalog does not list, or no catalog).
	id := strings.ToLower(reported)
	bare := guardrails.TrimVersion(id)
	sent := func(as string) bool {
		as = strings.ToLower(as)
		return as != "" && (id == as || bare == as)
	}
	if sent(c.Outcome.NativeModel) {
		return plan.DecidedModel, false
	}
	for i, as := range c.Outcome.Chain {
		if sent(as) && i < len(plan.Chain) {
			return plan.Chain[i], false
		}
	}
	if direct != "" {
		return direct + "/" + reported, true
	}
	return reported, true
}

// endpoint returns the model's endpoint of a provider slug: the one of
// exactly that slug ("deepinfra/fp8"), else the provider's first one (a
// marketplace that names the provider but not the variant); nil when the
// model has none of the provider's.
func endpoint(cat *guardrails.Catalog, model, provider string) *guardrails.Endpoint {
	m, ok := cat.Model(model)
	if !ok {
		return nil
	}
	for i, e := range m.Endpoints {
		if e.Slug() == provider {
			return &m.Endpoints[i]
		}
	}
	for i, e := range m.Endpoints {
		if e.Provider == provider {
			return &m.Endpoints[i]
		}
	}
	return nil
}
