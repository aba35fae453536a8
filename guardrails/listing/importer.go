package listing

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/sluicegw/sluice/guardrails"
)

// Import is what one listing says in the catalog's terms: the models and
// endpoints it lists, the names it reports providers by, and what it
// skipped and why. [Merge] applies it to a catalog document. It is plain
// data and marshals to JSON (the gateway keeps the last good one in
// data_dir).
type Import struct {
	// Source is the listing: "openrouter" or "vercel".
	Source string `json:"source"`
	// Only are the model patterns the import was limited to (guardrail
	// pattern syntax); models outside them are left alone. Default none:
	// every model.
	Only []string `json:"only,omitempty"`
	// Listed counts the models the listing lists.
	Listed int `json:"listed"`
	// FetchedAt is when the listing was read. Default: zero (not known).
	FetchedAt time.Time `json:"fetched_at,omitzero"`
	// Models are the listed models, each with the endpoints the listing
	// gives (Source set); a model whose listing has no endpoints has none.
	// OpenRouter only.
	Models []*guardrails.Model `json:"models,omitempty"`
	// Untouched are slugs of listed models the import says nothing about
	// (priced "-1", or whose endpoints listing was missing or unusable):
	// Merge leaves them as they are.
	Untouched []string `json:"untouched,omitempty"`
	// Reported maps a provider slug to the names the listing reports it by
	// (OpenRouter's provider_name). OpenRouter only.
	Reported map[string][]string `json:"reported,omitempty"`
	// Vercel is the Vercel AI Gateway's model list. Vercel only.
	Vercel []VercelModel `json:"vercel,omitempty"`
	// Notes says what was skipped and why.
	Notes []Note `json:"notes,omitempty"`
}

// Note is one thing an import or a merge skipped or left as it was, and
// why.
type Note struct {
	// Model is the model id as listed (or the catalog slug).
	Model string `json:"model"`
	// Endpoint is the endpoint's tag, "" for the whole model.
	Endpoint string `json:"endpoint,omitempty"`
	// Reason says why.
	Reason string `json:"reason"`
}

// inScope reports whether a slug is one the import may change.
func (imp *Import) inScope(slug string) bool { return matchOnly(imp.Only, slug) }

func matchOnly(only []string, slug string) bool {
	if len(only) == 0 {
		return true
	}
	for _, p := range only {
		if guardrails.MatchPattern(p, slug) {
			return true
		}
	}
	return false
}

// BuildOpenRouter turns OpenRouter's model list and the endpoints listings
// of its models (by model id; a model absent from endpoints had no listing)
// into an Import, limited to the models only matches (every model when
// only is empty). Per model: the slug (the id, lower-cased), the canonical
// slug as an alias, the context window, and one endpoint per tag — a tag
// "deepinfra/fp8" is provider "deepinfra" with tag "fp8" — with its
// prices, cache prices, and latency and throughput medians. Aliases
// ("~…-latest") and models priced "-1" are skipped with a note.
func BuildOpenRouter(models []ORModel, endpoints map[string][]OREndpoint, only []string) *Import {
	imp := &Import{Source: guardrails.SourceOpenRouter, Only: only, Listed: len(models), Reported: map[string][]string{}}
	for _, m := range models {
		slug := strings.ToLower(m.ID)
		if !imp.inScope(slug) {
			continue
		}
		switch {
		case m.Alias():
			target := m.AliasTarget
			if target == "" {
				target = "another model"
			}
			imp.Notes = append(imp.Notes, Note{Model: m.ID, Reason: "an alias of " + target + ", not a model of its own"})
			continue
		case m.Router:
			imp.Notes = append(imp.Notes, Note{Model: m.ID, Reason: `priced "-1": a router with no fixed price`})
			imp.Untouched = append(imp.Untouched, slug)
			continue
		}
		eps, ok := endpoints[m.ID]
		if !ok {
			imp.Notes = append(imp.Notes, Note{Model: m.ID, Reason: "no endpoints listing"})
			imp.Untouched = append(imp.Untouched, slug)
			continue
		}
		cm := &guardrails.Model{Slug: slug, ContextWindow: m.ContextLength, Endpoints: []guardrails.Endpoint{}}
		if c := strings.ToLower(m.CanonicalSlug); c != "" && c != slug && m.Variant() == "" {
			cm.Aliases = []string{c}
		}
		seen := map[string]bool{}
		fromEndpoints := cm.ContextWindow == 0
		for _, e := range eps {
			ce, reason := endpointOf(e)
			if reason == "" && seen[ce.Slug()] {
				reason = "listed twice; the first is kept"
			}
			if reason != "" {
				imp.Notes = append(imp.Notes, Note{Model: m.ID, Endpoint: firstNonEmpty(e.Tag, e.ProviderName), Reason: reason})
				continue
			}
			seen[ce.Slug()] = true
			if fromEndpoints && e.ContextLength > cm.ContextWindow {
				cm.ContextWindow = e.ContextLength
			}
			cm.Endpoints = append(cm.Endpoints, ce)
			if e.ProviderName != "" && !containsName(imp.Reported[ce.Provider], e.ProviderName) {
				imp.Reported[ce.Provider] = append(imp.Reported[ce.Provider], e.ProviderName)
			}
		}
		switch {
		case len(eps) > 0 && len(cm.Endpoints) == 0:
			imp.Notes = append(imp.Notes, Note{Model: m.ID, Reason: "no usable endpoint in its listing"})
			imp.Untouched = append(imp.Untouched, slug)
			continue
		case cm.ContextWindow == 0 && len(cm.Endpoints) > 0:
			imp.Notes = append(imp.Notes, Note{Model: m.ID, Reason: "no context length listed"})
			imp.Untouched = append(imp.Untouched, slug)
			continue
		}
		imp.Models = append(imp.Models, cm)
	}
	for k := range imp.Reported {
		sort.Strings(imp.Reported[k])
	}
	return imp
}

// endpointOf converts one listed endpoint, or says why it cannot be one.
func endpointOf(e OREndpoint) (guardrails.Endpoint, string) {
	if e.Router {
		return guardrails.Endpoint{}, `priced "-1": no fixed price`
	}
	tag := e.Tag
	if tag == "" {
		// Listings older than the tag field: the display name, when a
		// built-in spelling knows it.
		slug, ok := guardrails.BuiltinProviderSlug(guardrails.ConnectorOpenRouter, e.ProviderName)
		if !ok {
			return guardrails.Endpoint{}, "no tag, and the provider name " + quote(e.ProviderName) + " is no built-in spelling"
		}
		tag = slug
	}
	base, variant, _ := strings.Cut(tag, "/")
	if strings.Contains(variant, "/") {
		return guardrails.Endpoint{}, "a variant of two levels (" + tag + ") has no catalog endpoint"
	}
	ce := guardrails.Endpoint{Provider: base, Tag: variant, PriceIn: e.PriceIn, PriceOut: e.PriceOut,
		PriceCacheRead: e.CacheRead, PriceCacheWrite: e.CacheWrite, Quantization: e.Quantization, Source: guardrails.SourceOpenRouter}
	if e.LatencyP50 != nil {
		ce.LatencyMS = int(math.Round(*e.LatencyP50))
	}
	if e.ThroughputP50 != nil {
		ce.ThroughputTPS = math.Round(*e.ThroughputP50*10) / 10
	}
	return ce, ""
}

// MarkZeroRetention writes what OpenRouter's zero-data-retention endpoint
// list says into the import's endpoints: an endpoint the list names (by
// its model's id or, for a model that is no ":variant", its canonical
// slug, and its tag) gets zero_retention true and no_training true (a
// provider that keeps nothing cannot train on it, as OpenRouter's ZDR
// guide says); every other endpoint of an imported model gets
// zero_retention false (OpenRouter routes a zdr request to none of them)
// and no_training as it was (the list says nothing about training
// without retention). An entry without a tag is matched by its provider
// name's built-in spelling.
func (imp *Import) MarkZeroRetention(zdr []ORZDREndpoint) {
	listed := make(map[string]bool, len(zdr))
	for _, z := range zdr {
		tag := z.Tag
		if tag == "" {
			slug, ok := guardrails.BuiltinProviderSlug(guardrails.ConnectorOpenRouter, z.ProviderName)
			if !ok {
				continue
			}
			tag = slug
		}
		listed[z.ModelID+" "+tag] = true
	}
	for _, m := range imp.Models {
		keys := []string{m.Slug}
		if !strings.Contains(m.Slug, ":") {
			keys = append(keys, m.Aliases...)
		}
		for i := range m.Endpoints {
			e := &m.Endpoints[i]
			zero := false
			for _, k := range keys {
				zero = zero || listed[k+" "+e.Slug()]
			}
			e.ZeroRetention = boolPtr(zero)
			if zero {
				e.NoTraining = boolPtr(true)
			}
		}
	}
}

func boolPtr(b bool) *bool { return &b }

// BuildVercel wraps the Vercel AI Gateway's model list as an Import,
// limited to the catalog models only matches.
func BuildVercel(models []VercelModel, only []string) *Import {
	return &Import{Source: guardrails.SourceVercel, Only: only, Listed: len(models), Vercel: models}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func quote(s string) string { return `"` + s + `"` }

func containsName(list []string, name string) bool {
	k := guardrails.NameKey(name)
	for _, n := range list {
		if guardrails.NameKey(n) == k {
			return true
		}
	}
	return false
}
