package compiler

import (
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// CodeDataPolicyUnsatisfiable: no way the upstream can be held to a data
// restriction (zero retention, no training, quantizations, a price ceiling,
// regions):
// it has no knob for it, no allow-list to reduce it to, or none of the
// endpoints that could serve satisfies it. The message names the field and
// the rung that set it.
const CodeDataPolicyUnsatisfiable = "data_policy_unsatisfiable"

// DropDataPolicy is the reason a fallback-chain entry is dropped when no
// endpoint of the model satisfies the plan's data restrictions.
const DropDataPolicy = "data_policy"

// Data-policy field names, as rows, explain and refusals spell them.
const (
	DataZeroRetention = "zero_retention"
	DataNoTraining    = "no_training"
	DataQuantizations = "quantizations"
	DataMaxPrice      = "max_price"
	DataRegions       = "regions"
)

// How a data restriction was held on an upstream, in [Outcome.DataVia].
const (
	// ViaNative: the upstream's own knob carries it, and the upstream
	// enforces it.
	ViaNative = "native"
	// ViaAllowList: it was reduced to the providers whose catalog endpoints
	// satisfy it, sent in the upstream's allow knob.
	ViaAllowList = "allow_list"
	// ViaLocal: sluice decided it before sending, from a direct upstream's
	// declared agreement or its endpoint's catalog facts.
	ViaLocal = "local"
)

// DataPolicy is a plan's data restrictions: what an endpoint that serves may
// do with the traffic, and what it may be. The zero value restricts nothing.
type DataPolicy struct {
	// ZeroRetention admits only endpoints known to keep no prompt or
	// completion after answering.
	ZeroRetention bool `json:"zero_retention,omitempty"`
	// NoTraining admits only endpoints known neither to train on nor to
	// collect prompts.
	NoTraining bool `json:"no_training,omitempty"`
	// Quantizations admits only endpoints known to serve at one of these
	// precisions; nil admits any. An empty non-nil list (a profile's and a
	// guardrail's lists share nothing) admits none.
	Quantizations []string `json:"quantizations,omitempty"`
	// MaxPriceIn and MaxPriceOut are ceilings in USD per million input and
	// output tokens; nil is no ceiling.
	MaxPriceIn  *float64 `json:"max_price_in,omitempty"`
	MaxPriceOut *float64 `json:"max_price_out,omitempty"`
	// Regions admits only endpoints known to process in one of these
	// geographies ([profiles.Geographies]); nil admits any. An empty non-nil
	// list (a profile's and a guardrail's lists share nothing) admits none.
	Regions []string `json:"regions,omitempty"`
}

// Empty reports whether the policy restricts nothing.
func (d *DataPolicy) Empty() bool {
	return !d.ZeroRetention && !d.NoTraining && d.Quantizations == nil && d.MaxPriceIn == nil && d.MaxPriceOut == nil && d.Regions == nil
}

// Fields returns the names of the restrictions set, comma-separated in a
// fixed order (zero_retention, no_training, quantizations, max_price,
// regions): the row's data_policy. "" when none is.
func (d *DataPolicy) Fields() string {
	i := 0
	for bit, on := range [...]bool{d.ZeroRetention, d.NoTraining, d.Quantizations != nil, d.MaxPriceIn != nil || d.MaxPriceOut != nil, d.Regions != nil} {
		if on {
			i |= 1 << bit
		}
	}
	return fieldSets[i]
}

// fieldSets holds [DataPolicy.Fields] for each combination of the five
// restrictions (bit 0 zero_retention ... bit 4 regions), so that a row
// names its policy without an allocation.
var fieldSets = func() (out [32]string) {
	names := [...]string{DataZeroRetention, DataNoTraining, DataQuantizations, DataMaxPrice, DataRegions}
	for i := range out {
		var parts []string
		for bit, n := range names {
			if i&(1<<bit) != 0 {
				parts = append(parts, n)
			}
		}
		out[i] = strings.Join(parts, ",")
	}
	return out
}()

func (d *DataPolicy) each(fn func(field string)) {
	if d.ZeroRetention {
		fn(DataZeroRetention)
	}
	if d.NoTraining {
		fn(DataNoTraining)
	}
	if d.Quantizations != nil {
		fn(DataQuantizations)
	}
	if d.MaxPriceIn != nil || d.MaxPriceOut != nil {
		fn(DataMaxPrice)
	}
	if d.Regions != nil {
		fn(DataRegions)
	}
}

// Fails returns the first restriction the endpoint does not meet, or "" when
// it meets them all. An unknown fact meets nothing. agreed are the facts an
// account agreement adds for the endpoint (a direct upstream's declared
// terms); nil adds none.
func (d *DataPolicy) Fails(e *guardrails.Endpoint, agreed *Agreement) string {
	if d.ZeroRetention && !(isTrue(e.ZeroRetention) || agreed != nil && agreed.ZeroRetention) {
		return DataZeroRetention
	}
	if d.NoTraining && !(isTrue(e.NoTraining) || agreed != nil && agreed.NoTraining) {
		return DataNoTraining
	}
	if d.Quantizations != nil && (e.Quantization == "" || !contains(d.Quantizations, e.Quantization)) {
		return DataQuantizations
	}
	if d.MaxPriceIn != nil && e.PriceIn > *d.MaxPriceIn || d.MaxPriceOut != nil && e.PriceOut > *d.MaxPriceOut {
		return DataMaxPrice
	}
	if d.Regions != nil && !d.regionsAdmit(e.Regions, agreed) {
		return DataRegions
	}
	return ""
}

// regionsAdmit reports whether an endpoint that may process in geos (all
// of them; none is unknown) is admitted by the policy's regions. A direct
// provider's declared geographies (agreed, where its upstreams process)
// stand in for the catalog's: one of them in the set is enough, since the
// request can go to that upstream.
func (d *DataPolicy) regionsAdmit(geos []string, agreed *Agreement) bool {
	if agreed != nil && len(agreed.Geographies) > 0 {
		for _, g := range agreed.Geographies {
			if contains(d.Regions, g) {
				return true
			}
		}
		return false
	}
	if len(geos) == 0 {
		return false
	}
	for _, g := range geos {
		if !contains(d.Regions, g) {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

// Agreement is what an operator declared of the account behind a direct
// upstream ([[upstreams]] zero_retention, no_training): terms that hold for
// every request sent on the platform key, whatever the catalog says.
type Agreement struct {
	ZeroRetention bool `json:"zero_retention,omitempty"`
	NoTraining    bool `json:"no_training,omitempty"`
	// Geographies are where the provider's direct upstreams process (their
	// declared regions' geographies): used for the chain's entries only,
	// since an upstream's own region is held by the check whatever the
	// key.
	Geographies []string `json:"geographies,omitempty"`
}

// Guardrail bits of [Plan.GuardrailData]: which data restrictions a
// guardrail contributed.
const (
	guardZeroRetention uint8 = 1 << iota
	guardNoTraining
	guardQuantizations
	guardMaxPrice
	guardRegions
)

// decideData combines the merged profile's data restrictions with the
// guardrail's: each binds, so the plan holds the tighter of the two.
func decideData(p *Plan, m *profiles.Merged, d *guardrails.Decision) {
	dp := &p.Data
	dp.ZeroRetention = m.ZeroRetention.Value
	dp.NoTraining = m.NoTraining.Value
	if m.Quantizations.Set && len(m.Quantizations.Value) > 0 {
		dp.Quantizations = m.Quantizations.Value
	}
	if m.MaxPriceIn.Set {
		dp.MaxPriceIn = &m.MaxPriceIn.Value
	}
	if m.MaxPriceOut.Set {
		dp.MaxPriceOut = &m.MaxPriceOut.Value
	}
	if m.Regions.Set && len(m.Regions.Value) > 0 {
		dp.Regions = m.Regions.Value
	}
	if d == nil {
		return
	}
	decideDataPatterns(p, &d.PatternsRef().DataRules)
}

// decideDataPatterns tightens the plan's data restrictions (the merged
// profile's, already in p.Data) by a guardrail's rule values.
func decideDataPatterns(p *Plan, g *guardrails.DataRules) {
	dp := &p.Data
	if !g.Any() {
		return
	}
	if g.ZeroRetention {
		dp.ZeroRetention = true
		p.GuardrailData |= guardZeroRetention
	}
	if g.NoTraining {
		dp.NoTraining = true
		p.GuardrailData |= guardNoTraining
	}
	if g.Quantizations != nil {
		p.GuardrailData |= guardQuantizations
		dp.Quantizations = intersectLists(dp.Quantizations, g.Quantizations)
	}
	if mp := g.MaxPrice; mp != nil {
		p.GuardrailData |= guardMaxPrice
		if mp.Input != nil && (dp.MaxPriceIn == nil || *mp.Input < *dp.MaxPriceIn) {
			dp.MaxPriceIn = mp.Input
		}
		if mp.Output != nil && (dp.MaxPriceOut == nil || *mp.Output < *dp.MaxPriceOut) {
			dp.MaxPriceOut = mp.Output
		}
	}
	if g.Regions != nil {
		p.GuardrailData |= guardRegions
		dp.Regions = intersectLists(dp.Regions, g.Regions)
	}
}

// intersectLists returns the entries of profile that guard lists too, or
// guard itself when profile is nil (unrestricted); never nil when guard is
// not.
func intersectLists(profile, guard []string) []string {
	if profile == nil {
		return guard
	}
	both := make([]string, 0, len(profile))
	for _, q := range profile {
		if contains(guard, q) {
			both = append(both, q)
		}
	}
	return both
}

// DataRung returns who set a data restriction of the plan (field is one of
// the Data* names): the ladder rung and file ("org (profiles/org.toml)"),
// "guardrail", or both joined by "+".
func (p *Plan) DataRung(field string) string {
	var bit uint8
	m := p.Merged
	if m == nil {
		m = &profiles.Merged{}
	}
	where := func(set bool, rung, file string) string {
		if !set {
			return ""
		}
		if file == "" || file == rung {
			return rung
		}
		return rung + " (" + file + ")"
	}
	var rung string
	switch field {
	case DataZeroRetention:
		bit = guardZeroRetention
		if m.ZeroRetention.Value {
			rung = where(true, m.ZeroRetention.Rung, m.ZeroRetention.File)
		}
	case DataNoTraining:
		bit = guardNoTraining
		if m.NoTraining.Value {
			rung = where(true, m.NoTraining.Rung, m.NoTraining.File)
		}
	case DataQuantizations:
		bit = guardQuantizations
		rung = where(m.Quantizations.Set && len(m.Quantizations.Value) > 0, m.Quantizations.Rung, m.Quantizations.File)
	case DataRegions:
		bit = guardRegions
		rung = where(m.Regions.Set && len(m.Regions.Value) > 0, m.Regions.Rung, m.Regions.File)
	case DataMaxPrice:
		bit = guardMaxPrice
		rung = where(m.MaxPriceIn.Set, m.MaxPriceIn.Rung, m.MaxPriceIn.File)
		if out := where(m.MaxPriceOut.Set, m.MaxPriceOut.Rung, m.MaxPriceOut.File); out != "" && out != rung {
			if rung != "" {
				rung += ", "
			}
			rung += out
		}
	}
	if p.GuardrailData&bit != 0 {
		return joinRung(rung)
	}
	return rung
}

// DataProvenance maps each data restriction the plan holds to who set it,
// keyed as profiles name them ("data.zero_retention", "data.no_training",
// "data.regions", "providers.quantizations", "providers.max_price").
func (p *Plan) DataProvenance() map[string]string {
	out := map[string]string{}
	p.Data.each(func(f string) {
		key := "providers." + f
		if f == DataZeroRetention || f == DataNoTraining || f == DataRegions {
			key = "data." + f
		}
		out[key] = p.DataRung(f)
	})
	return out
}

// KeepSatisfiable drops from a plan's chain every model no catalog endpoint
// of which satisfies the plan's data restrictions (counting the agreements
// declared for direct providers, by provider slug), as a guardrail drops a
// forbidden model: a chain is never walked into a model that could only be
// served against the policy. The plan is returned as it is when nothing is
// dropped; a nil catalog drops nothing.
func KeepSatisfiable(p *Plan, cat *guardrails.Catalog, agreements map[string]Agreement) *Plan {
	if cat == nil || len(p.Chain) == 0 || p.Data.Empty() {
		return p
	}
	return p.DropFromChain(func(slug string) bool { return !satisfiable(&p.Data, cat, slug, agreements) }, DropDataPolicy)
}

// DropFromChain returns the plan without the chain entries drop selects,
// each recorded in Dropped with the reason; the plan itself when none is
// (so the common case allocates nothing). p is not modified.
func (p *Plan) DropFromChain(drop func(slug string) bool, reason string) *Plan {
	var kept []string
	var dropped []guardrails.Dropped
	for i, slug := range p.Chain {
		if !drop(slug) {
			if kept != nil {
				kept = append(kept, slug)
			}
			continue
		}
		if kept == nil {
			kept = append(make([]string, 0, len(p.Chain)), p.Chain[:i]...)
		}
		dropped = append(dropped, guardrails.Dropped{Model: slug, Reason: reason})
	}
	if kept == nil {
		return p
	}
	q := *p
	q.Chain = kept
	q.Dropped = append(append([]guardrails.Dropped(nil), p.Dropped...), dropped...)
	return &q
}

// satisfiable reports whether some catalog endpoint of the model meets the
// policy.
func satisfiable(dp *DataPolicy, cat *guardrails.Catalog, slug string, agreements map[string]Agreement) bool {
	m, ok := cat.Model(slug)
	if !ok {
		return false
	}
	for i := range m.Endpoints {
		e := &m.Endpoints[i]
		var agreed *Agreement
		if a, ok := agreements[e.Provider]; ok {
			agreed = &a
		}
		if dp.Fails(e, agreed) == "" {
			return true
		}
	}
	return false
}

// checkData decides, for one upstream, how each of the plan's data
// restrictions is held: natively, by an allow-list of satisfying
// providers, or locally on a direct upstream; it returns the refusal when
// one cannot be held at all. out's Providers and Data are filled in; out.
// DataVia records the decision ("zero_retention=native,max_price=allow_list").
func checkData(p *Plan, u Upstream, cat *guardrails.Catalog, out *Outcome) *Refusal {
	dp := &p.Data
	caps := u.Capabilities
	refuse := func(field, format string, args ...any) *Refusal {
		who := p.DataRung(field)
		return &Refusal{Code: CodeDataPolicyUnsatisfiable, Message: fmt.Sprintf("%s (set by %s): ", field, who) + fmt.Sprintf(format, args...)}
	}
	var via strings.Builder
	record := func(field, how string) {
		if via.Len() > 0 {
			via.WriteByte(',')
		}
		via.WriteString(field)
		via.WriteByte('=')
		via.WriteString(how)
	}

	if caps.DirectProvider != "" {
		// A direct upstream: decided here, from the account's declared
		// terms (the platform key's only) and the provider's endpoint facts.
		agreed := &u.Agreement
		if u.CallerKey {
			agreed = nil
		}
		// Where it processes is the upstream's own (its region, or its
		// model id's inference profile), on any key: the catalog's regions
		// describe the provider's other endpoints.
		if dp.Regions != nil {
			if why := regionFails(dp.Regions, u.Region, out.Region); why != "" {
				return refuse(DataRegions, "upstream %q serves only provider %q and is decided here: %s", u.Name, caps.DirectProvider, why)
			}
			rest := *dp
			rest.Regions = nil
			dp = &rest
		}
		// Every catalog endpoint of the provider for the model must meet
		// it; with none, only the agreement can speak.
		var eps []guardrails.Endpoint
		if cat != nil {
			if m, ok := cat.Model(p.DecidedModel); ok {
				eps = m.Endpoints
			}
		}
		none := guardrails.Endpoint{Provider: caps.DirectProvider}
		found := false
		for i := range eps {
			if eps[i].Provider != caps.DirectProvider {
				continue
			}
			found = true
			if f := dp.Fails(&eps[i], agreed); f != "" {
				return refuse(f, "upstream %q serves only provider %q and is decided here: %s", u.Name, caps.DirectProvider, whyFails(f, &eps[i], dp, p.DecidedModel, u.CallerKey))
			}
		}
		if !found {
			f := dp.Fails(&none, agreed)
			if f == "" && (dp.MaxPriceIn != nil || dp.MaxPriceOut != nil) {
				f = DataMaxPrice // no endpoint, no known price: a ceiling cannot be met
			}
			if f != "" {
				return refuse(f, "upstream %q serves only provider %q and is decided here: %s", u.Name, caps.DirectProvider, whyFails(f, &none, dp, p.DecidedModel, u.CallerKey))
			}
		}
		p.Data.each(func(f string) { record(f, ViaLocal) })
		out.DataVia = via.String()
		return nil
	}

	// A marketplace: each restriction in its own knob where it has one (and
	// the upstream enforces it on this key), the rest reduced to an
	// allow-list of the providers whose endpoints all satisfy them.
	knobOK := !u.CallerKey || caps.DataKnobsCallerKey
	var reduce DataPolicy
	var firstReduced string
	dp.each(func(f string) {
		native := false
		switch f {
		case DataZeroRetention:
			native = caps.ZeroRetention && knobOK
			if native {
				out.Data.ZeroRetention = true
			} else {
				reduce.ZeroRetention = true
			}
		case DataNoTraining:
			native = caps.NoTraining && knobOK
			if native {
				out.Data.NoTraining = true
			} else {
				reduce.NoTraining = true
			}
		case DataQuantizations:
			native = caps.Quantizations
			if native {
				out.Data.Quantizations = dp.Quantizations
			} else {
				reduce.Quantizations = dp.Quantizations
			}
		case DataMaxPrice:
			native = caps.MaxPrice
			if native {
				out.Data.MaxPriceIn, out.Data.MaxPriceOut = dp.MaxPriceIn, dp.MaxPriceOut
			} else {
				reduce.MaxPriceIn, reduce.MaxPriceOut = dp.MaxPriceIn, dp.MaxPriceOut
			}
		case DataRegions:
			// No marketplace has a knob for where an endpoint processes:
			// always the allow-list of providers known to process there.
			reduce.Regions = dp.Regions
		}
		if native {
			record(f, ViaNative)
		} else {
			if firstReduced == "" {
				firstReduced = f
			}
			record(f, ViaAllowList)
		}
	})
	if dp.Quantizations != nil && len(dp.Quantizations) == 0 {
		return refuse(DataQuantizations, "the profile's and the guardrail's quantizations have no precision in common, so no endpoint may serve")
	}
	if dp.Regions != nil && len(dp.Regions) == 0 {
		return refuse(DataRegions, "the profile's and the guardrail's regions have no geography in common, so no endpoint may serve")
	}
	if firstReduced != "" {
		if u.CallerKey && (reduce.ZeroRetention || reduce.NoTraining) && (caps.ZeroRetention || caps.NoTraining) {
			f := DataZeroRetention
			if !reduce.ZeroRetention {
				f = DataNoTraining
			}
			return refuse(f, "upstream %q does not enforce its data-policy knobs for requests on a caller's own key, and the catalog's facts describe its own accounts, not the caller's", u.Name)
		}
		if !caps.AllowList {
			return refuse(firstReduced, "upstream %q has no knob for it and cannot restrict which providers serve, so serving would ignore it", u.Name)
		}
		allowed, why := reduceToProviders(&reduce, p, cat, u.Connector)
		if len(allowed) == 0 {
			return refuse(firstReduced, "upstream %q has no knob for it, and %s", u.Name, why)
		}
		out.Providers.Allowed = allowed
	}
	out.DataVia = via.String()
	return nil
}

// ProviderBedrock is the catalog's provider slug of Amazon Bedrock, whose
// model ids may name a cross-region inference profile.
const ProviderBedrock = "amazon-bedrock"

// servedRegion is where a direct upstream processes: its model id's
// inference-profile geography on Amazon Bedrock, else its declared region.
func servedRegion(provider, region, nativeModel string) string {
	if provider == ProviderBedrock {
		if geo, ok := profiles.InferenceProfileGeography(nativeModel); ok {
			return geo
		}
	}
	return region
}

// regionFails says why a direct upstream that declares region and serves
// from served (its [Outcome.Region]) does not meet regions; "" when it does.
func regionFails(regions []string, region, served string) string {
	if len(regions) == 0 {
		return "the profile's and the guardrail's regions have no geography in common, so no endpoint may serve"
	}
	if served == "" {
		return "it declares no region, so where it processes is unknown"
	}
	geo := profiles.Geography(served)
	what := fmt.Sprintf("region %q", served)
	if served != region {
		what = fmt.Sprintf("its model id's inference profile (geography %q)", served)
	}
	switch {
	case geo == "":
		return fmt.Sprintf("it declares %s, which sluice's region table places in no geography", what)
	case geo == profiles.GeographyAny:
		return fmt.Sprintf("it processes in %s, which may be any region", what)
	case !contains(regions, geo):
		if served != region {
			return fmt.Sprintf("it processes in %s, not one of %v", what, regions)
		}
		return fmt.Sprintf("it processes in %s (geography %q), not one of %v", what, geo, regions)
	}
	return ""
}

// whyFails says why a direct upstream's endpoint does not meet a field.
func whyFails(field string, e *guardrails.Endpoint, dp *DataPolicy, model string, callerKey bool) string {
	agreement := "and the upstream declares no agreement that does"
	if callerKey {
		agreement = "and the request is on the caller's own key, which the upstream's declared agreement does not cover"
	}
	fact := func(b *bool) string {
		switch {
		case b == nil:
			return "unknown"
		case *b:
			return "true"
		}
		return "false"
	}
	switch field {
	case DataZeroRetention:
		return fmt.Sprintf("the catalog's zero_retention for its endpoint %q of %q is %s, %s", e.Slug(), model, fact(e.ZeroRetention), agreement)
	case DataNoTraining:
		return fmt.Sprintf("the catalog's no_training for its endpoint %q of %q is %s, %s", e.Slug(), model, fact(e.NoTraining), agreement)
	case DataQuantizations:
		q := e.Quantization
		if q == "" {
			q = "an unknown precision"
		}
		return fmt.Sprintf("its endpoint %q of %q serves at %s, not one of %v", e.Slug(), model, q, dp.Quantizations)
	}
	if e.PriceIn == 0 && e.PriceOut == 0 && e.Tag == "" && e.ZeroRetention == nil && e.Quantization == "" {
		return fmt.Sprintf("the catalog lists no endpoint of it for %q, so no price is known to be under the ceiling", model)
	}
	return fmt.Sprintf("its endpoint %q of %q is priced %g in / %g out USD per million tokens, above the ceiling", e.Slug(), model, e.PriceIn, e.PriceOut)
}

// reduceToProviders returns the providers (spelled for the connector) that
// may serve under the restrictions: a provider every catalog endpoint of
// which, for every model of the plan (the decided one and its chain), meets
// them, that serves at least one of those models, and that the plan's
// provider lists permit. why says what left none.
func reduceToProviders(dp *DataPolicy, p *Plan, cat *guardrails.Catalog, connector string) ([]string, string) {
	if cat == nil {
		return nil, "no catalog is loaded to say which providers meet it"
	}
	models := make([]*guardrails.Model, 0, 1+len(p.Chain))
	for _, slug := range append([]string{p.DecidedModel}, p.Chain...) {
		if m, ok := cat.Model(slug); ok {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		return nil, fmt.Sprintf("the catalog does not list %q, so no provider is known to meet it", p.DecidedModel)
	}
	ok := map[string]bool{}
	var order []string
	for _, m := range models {
		for i := range m.Endpoints {
			e := &m.Endpoints[i]
			good, seen := ok[e.Provider]
			if !seen {
				order = append(order, e.Provider)
				good = true
			}
			ok[e.Provider] = good && dp.Fails(e, nil) == ""
		}
	}
	var allowed []string
	for _, prov := range order {
		if ok[prov] && Permits(p.Providers, prov) {
			allowed = append(allowed, cat.SendName(connector, prov))
		}
	}
	if len(allowed) == 0 {
		return nil, fmt.Sprintf("no provider of %q that the provider lists permit has catalog endpoints all known to meet it", p.DecidedModel)
	}
	return allowed, ""
}
