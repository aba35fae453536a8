package listing

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
)

// MergeOptions tune [Merge].
type MergeOptions struct {
	// PriceThreshold is the relative change of price_in or price_out above
	// which a price change is listed in the summary (0.05 = 5 %). Default
	// 0: every change.
	PriceThreshold float64
}

// Summary is what a merge changed.
type Summary struct {
	// Source is the listing merged.
	Source string `json:"source"`
	// Listed counts the listing's models; Imported those the import gave
	// the catalog (after --only and the skips).
	Listed   int `json:"listed"`
	Imported int `json:"imported"`
	// ModelsAdded and ModelsRemoved are model slugs.
	ModelsAdded   []string `json:"models_added"`
	ModelsRemoved []string `json:"models_removed"`
	// EndpointsAdded and EndpointsRemoved are "model endpoint" pairs.
	EndpointsAdded   []string `json:"endpoints_added"`
	EndpointsRemoved []string `json:"endpoints_removed"`
	// PriceChanges are the price_in and price_out changes above the
	// threshold.
	PriceChanges []PriceChange `json:"price_changes"`
	// UpstreamIDs are the upstream ids set ("model → id"; Vercel).
	UpstreamIDs []string `json:"upstream_ids"`
	// FactChanges are the data facts (zero_retention, no_training,
	// quantization) the merge changed on endpoints already in the catalog.
	// Default none.
	FactChanges []FactChange `json:"fact_changes,omitempty"`
	// Notes says what was skipped or kept as it was, and why.
	Notes []Note `json:"notes"`
	// Models and Endpoints count the resulting catalog.
	Models    int `json:"models"`
	Endpoints int `json:"endpoints"`
}

// PriceChange is one price that moved.
type PriceChange struct {
	Model    string  `json:"model"`
	Endpoint string  `json:"endpoint"`
	Field    string  `json:"field"`
	Old      float64 `json:"old"`
	New      float64 `json:"new"`
}

// FactChange is one data fact of an endpoint that moved.
type FactChange struct {
	Model    string `json:"model"`
	Endpoint string `json:"endpoint"`
	// Field is "zero_retention", "no_training" or "quantization".
	Field string `json:"field"`
	// Old and New are the values as the summary prints them: "true",
	// "false", a quantization, or "unknown".
	Old string `json:"old"`
	New string `json:"new"`
}

// Relative is the change relative to the old price (1 when the old price
// was 0 and the new one is not).
func (p PriceChange) Relative() float64 {
	if p.Old == 0 {
		if p.New == 0 {
			return 0
		}
		return 1
	}
	return math.Abs(p.New-p.Old) / p.Old
}

// Changed reports whether the merge changed the catalog's models,
// endpoints, listed prices, upstream ids or data facts.
func (s *Summary) Changed() bool {
	return len(s.ModelsAdded)+len(s.ModelsRemoved)+len(s.EndpointsAdded)+len(s.EndpointsRemoved)+len(s.PriceChanges)+len(s.UpstreamIDs)+len(s.FactChanges) > 0
}

// Merge applies an import to a catalog document (nil for none) and returns
// the merged document and what changed; base is not modified. The rules:
//
//   - Only models the import's Only patterns match are touched.
//   - A listed model absent from the catalog is added. A listed model in
//     it gets the listing's context window and its canonical slug as an
//     alias (an alias that would name another model is dropped, noted);
//     its class, native ids, caller_key_only, upstream ids and aliases
//     stay.
//   - A listed endpoint replaces the prices, cache prices and (when
//     measured) latency and throughput of the same provider/tag endpoint,
//     keeping its class, and marks it imported (source). An endpoint whose
//     source is "manual" is never touched; one another listing imported is
//     taken over only by OpenRouter's. Endpoints this listing imported
//     before and no longer lists are removed; hand-written ones stay.
//   - A listed endpoint's data facts (zero_retention, no_training,
//     quantization) are taken where the listing publishes them, except a
//     fact the catalog endpoint pins (noted when the listing differs); a
//     fact the listing does not publish (nil, "") keeps its value.
//   - A model left with no endpoint is removed.
//   - OpenRouter's provider names are added to providers.*.reported for
//     providers whose name the built-in spellings do not already know.
//   - Vercel: each listed language model is matched to a catalog model (its
//     slug, an alias or its Vercel upstream id; else the one model whose
//     author and name agree once spelled alike — "meta/llama-3.1-70b" is
//     meta-llama/llama-3.1-70b-instruct); upstream_ids.vercel is set when
//     the id differs and none was written; the listing's price becomes an
//     endpoint of the model's creator, when the creator is a provider the
//     gateway names (anthropic, openai, google, …), only where the model
//     has no other endpoint of that provider.
func Merge(base *guardrails.Document, imp *Import, opt MergeOptions) (*guardrails.Document, *Summary) {
	doc := clone(base)
	m := &merger{doc: doc, imp: imp, opt: opt, sum: &Summary{Source: imp.Source, Listed: imp.Listed}, newAliases: map[string][]string{}}
	m.sum.Notes = append(m.sum.Notes, imp.Notes...)
	m.index()
	switch imp.Source {
	case guardrails.SourceVercel:
		m.vercel()
	default:
		m.openRouter()
	}
	m.dropEmpty()
	m.resolveAliases()
	for _, md := range doc.Models {
		m.sum.Endpoints += len(md.Endpoints)
	}
	m.sum.Models = len(doc.Models)
	sort.Strings(m.sum.ModelsAdded)
	sort.Strings(m.sum.ModelsRemoved)
	sort.Strings(m.sum.EndpointsAdded)
	sort.Strings(m.sum.EndpointsRemoved)
	sort.Strings(m.sum.UpstreamIDs)
	sort.SliceStable(m.sum.FactChanges, func(i, j int) bool {
		a, b := m.sum.FactChanges[i], m.sum.FactChanges[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Endpoint < b.Endpoint
	})
	sort.Slice(m.sum.PriceChanges, func(i, j int) bool {
		a, b := m.sum.PriceChanges[i], m.sum.PriceChanges[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Endpoint != b.Endpoint {
			return a.Endpoint < b.Endpoint
		}
		return a.Field < b.Field
	})
	return doc, m.sum
}

// clone deep-copies a document (nil is an empty one).
func clone(base *guardrails.Document) *guardrails.Document {
	if base == nil {
		return &guardrails.Document{Models: []*guardrails.Model{}}
	}
	b, err := json.Marshal(base)
	if err != nil { // plain data: cannot happen
		panic(fmt.Sprintf("listing: cloning a catalog document: %v", err))
	}
	var out guardrails.Document
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("listing: cloning a catalog document: %v", err))
	}
	if out.Models == nil {
		out.Models = []*guardrails.Model{}
	}
	return &out
}

type merger struct {
	doc        *guardrails.Document
	imp        *Import
	opt        MergeOptions
	sum        *Summary
	bySlug     map[string]*guardrails.Model
	touched    map[string]bool     // models that lost an endpoint here
	newAliases map[string][]string // slug → aliases this merge added
}

func (m *merger) index() {
	m.bySlug = make(map[string]*guardrails.Model, len(m.doc.Models))
	m.touched = map[string]bool{}
	for _, md := range m.doc.Models {
		if md.Slug = strings.ToLower(md.Slug); m.bySlug[md.Slug] == nil {
			m.bySlug[md.Slug] = md
		}
		for i := range md.Endpoints {
			e := &md.Endpoints[i]
			e.Provider, e.Tag = strings.ToLower(e.Provider), strings.ToLower(e.Tag)
		}
	}
}

func (m *merger) openRouter() {
	src := guardrails.SourceOpenRouter
	listed := make(map[string]bool, len(m.imp.Models))
	var added []*guardrails.Model
	for _, lm := range m.imp.Models {
		listed[lm.Slug] = true
		bm := m.bySlug[lm.Slug]
		if bm == nil {
			if len(lm.Endpoints) == 0 {
				continue
			}
			nm := *lm
			nm.Endpoints = append([]guardrails.Endpoint(nil), lm.Endpoints...)
			nm.Aliases = nil
			m.newAliases[nm.Slug] = lm.Aliases
			added = append(added, &nm)
			m.bySlug[nm.Slug] = &nm
			m.sum.ModelsAdded = append(m.sum.ModelsAdded, nm.Slug)
			for _, e := range nm.Endpoints {
				m.sum.EndpointsAdded = append(m.sum.EndpointsAdded, nm.Slug+" "+e.Slug())
			}
			m.sum.Imported++
			continue
		}
		m.sum.Imported++
		if lm.ContextWindow > 0 {
			bm.ContextWindow = lm.ContextWindow
		}
		for _, a := range lm.Aliases {
			if !contains(bm.Aliases, a) && a != bm.Slug {
				m.newAliases[bm.Slug] = append(m.newAliases[bm.Slug], a)
			}
		}
		m.endpoints(bm, lm.Endpoints, src)
	}
	untouched := map[string]bool{}
	for _, s := range m.imp.Untouched {
		untouched[s] = true
	}
	for _, bm := range m.doc.Models {
		if !listed[bm.Slug] && !untouched[bm.Slug] && m.imp.inScope(bm.Slug) {
			m.endpoints(bm, nil, src)
		}
	}
	sort.Slice(added, func(i, j int) bool { return added[i].Slug < added[j].Slug })
	m.doc.Models = append(m.doc.Models, added...)
	m.providerNames()
}

// endpoints merges one model's listed endpoints (src's) into the catalog
// model: update, add, and remove what src imported before and no longer
// lists.
func (m *merger) endpoints(bm *guardrails.Model, listed []guardrails.Endpoint, src string) {
	have := make(map[string]int, len(bm.Endpoints))
	for i, e := range bm.Endpoints {
		have[e.Slug()] = i
	}
	keep := map[string]bool{}
	for _, le := range listed {
		slug := le.Slug()
		keep[slug] = true
		i, ok := have[slug]
		if !ok {
			bm.Endpoints = append(bm.Endpoints, le)
			have[slug] = len(bm.Endpoints) - 1
			m.sum.EndpointsAdded = append(m.sum.EndpointsAdded, bm.Slug+" "+slug)
			continue
		}
		be := &bm.Endpoints[i]
		switch {
		case be.Source == guardrails.SourceManual:
			m.sum.Notes = append(m.sum.Notes, Note{Model: bm.Slug, Endpoint: slug, Reason: `source "manual": kept as written`})
			continue
		case be.Source != "" && be.Source != src && src != guardrails.SourceOpenRouter:
			continue // another listing's: only OpenRouter's takes one over
		}
		m.update(bm.Slug, be, le)
	}
	m.removeUnlisted(bm, keep, src)
}

// update takes a listed endpoint's imported fields into a catalog one.
func (m *merger) update(model string, be *guardrails.Endpoint, le guardrails.Endpoint) {
	for _, f := range []struct {
		name     string
		old, new float64
	}{{"price_in", be.PriceIn, le.PriceIn}, {"price_out", be.PriceOut, le.PriceOut}} {
		c := PriceChange{Model: model, Endpoint: be.Slug(), Field: f.name, Old: f.old, New: f.new}
		if f.old != f.new && c.Relative() > m.opt.PriceThreshold {
			m.sum.PriceChanges = append(m.sum.PriceChanges, c)
		}
	}
	be.PriceIn, be.PriceOut = le.PriceIn, le.PriceOut
	be.PriceCacheRead, be.PriceCacheWrite = le.PriceCacheRead, le.PriceCacheWrite
	if le.LatencyMS > 0 {
		be.LatencyMS = le.LatencyMS
	}
	if le.ThroughputTPS > 0 {
		be.ThroughputTPS = le.ThroughputTPS
	}
	m.facts(model, be, le)
	be.Source = le.Source
}

// Data fact names, as in an endpoint's pinned list.
const (
	factZeroRetention = "zero_retention"
	factNoTraining    = "no_training"
	factQuantization  = "quantization"
)

// facts takes the data facts a listed endpoint publishes into a catalog
// one: a fact the listing does not publish (nil, "") keeps its value, and
// one the catalog endpoint pins is kept as written (noted when the
// listing says otherwise).
func (m *merger) facts(model string, be *guardrails.Endpoint, le guardrails.Endpoint) {
	set := func(field, old, new string, apply func()) {
		if old == new {
			return
		}
		if contains(be.Pinned, field) {
			m.sum.Notes = append(m.sum.Notes, Note{Model: model, Endpoint: be.Slug(),
				Reason: fmt.Sprintf("%s pinned: kept %s (the listing says %s)", field, old, new)})
			return
		}
		m.sum.FactChanges = append(m.sum.FactChanges, FactChange{Model: model, Endpoint: be.Slug(), Field: field, Old: old, New: new})
		apply()
	}
	if le.ZeroRetention != nil {
		v := *le.ZeroRetention
		set(factZeroRetention, boolFact(be.ZeroRetention), boolFact(&v), func() { be.ZeroRetention = &v })
	}
	if le.NoTraining != nil {
		v := *le.NoTraining
		set(factNoTraining, boolFact(be.NoTraining), boolFact(&v), func() { be.NoTraining = &v })
	}
	if le.Quantization != "" {
		set(factQuantization, stringFact(be.Quantization), le.Quantization, func() { be.Quantization = le.Quantization })
	}
}

// boolFact renders a yes/no fact for the summary.
func boolFact(b *bool) string {
	if b == nil {
		return "unknown"
	}
	return fmt.Sprint(*b)
}

func stringFact(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// dropEmpty removes the models this merge left without an endpoint.
func (m *merger) dropEmpty() {
	out := m.doc.Models[:0]
	for _, md := range m.doc.Models {
		if len(md.Endpoints) == 0 && m.touched[md.Slug] {
			m.sum.ModelsRemoved = append(m.sum.ModelsRemoved, md.Slug)
			continue
		}
		out = append(out, md)
	}
	m.doc.Models = out
}

// resolveAliases adds the aliases this merge found, except one that would
// name another model (a slug, an alias or an upstream id of another): the
// catalog refuses those (duplicate_alias), so it is dropped and noted.
func (m *merger) resolveAliases() {
	owner := map[string]string{}
	for _, md := range m.doc.Models {
		owner[md.Slug] = md.Slug
	}
	for _, md := range m.doc.Models {
		for _, a := range md.Aliases {
			if _, ok := owner[strings.ToLower(a)]; !ok {
				owner[strings.ToLower(a)] = md.Slug
			}
		}
		for _, id := range md.UpstreamIDs {
			if _, ok := owner[strings.ToLower(id)]; !ok {
				owner[strings.ToLower(id)] = md.Slug
			}
		}
	}
	for _, md := range m.doc.Models {
		for _, a := range m.newAliases[md.Slug] {
			if prev, ok := owner[a]; ok && prev != md.Slug {
				m.sum.Notes = append(m.sum.Notes, Note{Model: md.Slug, Reason: "alias " + a + " already names " + prev + ": not added"})
				continue
			}
			if !contains(md.Aliases, a) {
				md.Aliases = append(md.Aliases, a)
			}
			owner[a] = md.Slug
		}
	}
}

// providerNames writes the listing's provider names the catalog does not
// know yet into providers.*.reported.openrouter, after the names already
// there (or the built-in ones, which a catalog entry replaces).
func (m *merger) providerNames() {
	conn := guardrails.ConnectorOpenRouter
	slugs := make([]string, 0, len(m.imp.Reported))
	for s := range m.imp.Reported {
		slugs = append(slugs, s)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		pn, own := m.doc.Providers[slug]
		known := pn.Reported[conn]
		if _, ok := pn.Reported[conn]; !ok {
			known = guardrails.BuiltinReportedNames(conn, slug)
		}
		list := append([]string(nil), known...)
		for _, name := range m.imp.Reported[slug] {
			if !containsName(list, name) && guardrails.NameKey(name) != guardrails.NameKey(slug) {
				list = append(list, name)
			}
		}
		if len(list) == len(known) {
			continue
		}
		if !own && m.doc.Providers == nil {
			m.doc.Providers = map[string]guardrails.ProviderNames{}
		}
		if pn.Reported == nil {
			pn.Reported = map[string][]string{}
		}
		pn.Reported[conn] = list
		m.doc.Providers[slug] = pn
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
