package listing

import (
	"sort"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
)

// vercelAuthors maps the Vercel AI Gateway's creator names to OpenRouter's
// (the catalog's) where they differ, for matching models by name.
var vercelAuthors = map[string]string{
	"meta":    "meta-llama",
	"mistral": "mistralai",
	"xai":     "x-ai",
	"zai":     "z-ai",
	"alibaba": "qwen",
}

// modelKey spells a model id so that the two marketplaces' spellings of
// one model agree: the author as the catalog spells it, then the name's
// letters and digits only, without a trailing "instruct"
// ("meta/llama-3.1-70b" and "meta-llama/llama-3.1-70b-instruct" are both
// "meta-llama/llama3170b").
func modelKey(id string) string {
	author, name, _ := strings.Cut(strings.ToLower(id), "/")
	if a, ok := vercelAuthors[author]; ok {
		author = a
	}
	return author + "/" + strings.TrimSuffix(guardrails.NameKey(name), "instruct")
}

// vercel merges the Vercel AI Gateway's listing.
func (m *merger) vercel() {
	src := guardrails.SourceVercel
	conn := guardrails.ConnectorVercel
	exact := map[string]string{} // lower-cased slug, alias or Vercel id → slug
	byKey := map[string][]string{}
	for _, md := range m.doc.Models {
		for _, id := range append([]string{md.Slug, md.UpstreamIDs[conn]}, md.Aliases...) {
			if id = strings.ToLower(id); id != "" {
				if _, taken := exact[id]; !taken {
					exact[id] = md.Slug
				}
			}
		}
		k := modelKey(md.Slug)
		if !contains(byKey[k], md.Slug) {
			byKey[k] = append(byKey[k], md.Slug)
		}
	}
	listed := map[string]map[string]bool{} // slug → the endpoint slugs the listing prices
	matchedBy := map[string]string{}
	for _, vm := range m.imp.Vercel {
		if vm.Type != "" && vm.Type != "language" {
			continue
		}
		slug, ok := exact[strings.ToLower(vm.ID)]
		if !ok {
			switch c := byKey[modelKey(vm.ID)]; len(c) {
			case 1:
				slug = c[0]
			case 0:
				if m.imp.inScope(strings.ToLower(vm.ID)) {
					m.sum.Notes = append(m.sum.Notes, Note{Model: vm.ID, Reason: "matches no catalog model"})
				}
				continue
			default:
				m.sum.Notes = append(m.sum.Notes, Note{Model: vm.ID, Reason: "matches several catalog models (" + strings.Join(c, ", ") + "): none chosen"})
				continue
			}
		}
		if !m.imp.inScope(slug) {
			continue
		}
		if prev, dup := matchedBy[slug]; dup {
			m.sum.Notes = append(m.sum.Notes, Note{Model: vm.ID, Reason: "matches " + slug + ", already matched by " + prev})
			continue
		}
		matchedBy[slug] = vm.ID
		md := m.bySlug[slug]
		m.sum.Imported++
		id := strings.ToLower(vm.ID)
		if id != md.Slug && !contains(md.Aliases, id) {
			switch have := md.UpstreamIDs[conn]; {
			case have == "":
				if md.UpstreamIDs == nil {
					md.UpstreamIDs = map[string]string{}
				}
				md.UpstreamIDs[conn] = vm.ID
				m.sum.UpstreamIDs = append(m.sum.UpstreamIDs, md.Slug+" → "+vm.ID)
			case !strings.EqualFold(have, vm.ID):
				m.sum.Notes = append(m.sum.Notes, Note{Model: vm.ID, Reason: "matched " + md.Slug + ", whose upstream_ids.vercel " + have + " is kept"})
			}
		}
		if listed[slug] == nil {
			listed[slug] = map[string]bool{}
		}
		if !vm.Priced {
			continue
		}
		provider := m.vercelProvider(vm.OwnedBy)
		if provider == "" {
			m.sum.Notes = append(m.sum.Notes, Note{Model: vm.ID, Reason: "priced for creator " + quote(vm.OwnedBy) + ", which names no provider: no endpoint"})
			continue
		}
		le := guardrails.Endpoint{Provider: provider, PriceIn: vm.PriceIn, PriceOut: vm.PriceOut,
			PriceCacheRead: vm.CacheRead, PriceCacheWrite: vm.CacheWrite, Source: src}
		other := false
		for _, e := range md.Endpoints {
			if e.Provider == provider && e.Source != src {
				other = true
			}
		}
		if other {
			continue // the model has this provider's endpoint from elsewhere: its price stands
		}
		listed[slug][le.Slug()] = true
		m.endpointsOnly(md, le)
	}
	for _, md := range m.doc.Models {
		if m.imp.inScope(md.Slug) {
			m.removeUnlisted(md, listed[md.Slug], src)
		}
	}
}

// endpointsOnly adds or updates one endpoint of src's.
func (m *merger) endpointsOnly(md *guardrails.Model, le guardrails.Endpoint) {
	for i := range md.Endpoints {
		if md.Endpoints[i].Slug() == le.Slug() {
			m.update(md.Slug, &md.Endpoints[i], le)
			return
		}
	}
	md.Endpoints = append(md.Endpoints, le)
	m.sum.EndpointsAdded = append(m.sum.EndpointsAdded, md.Slug+" "+le.Slug())
}

// removeUnlisted removes the endpoints src imported that keep no longer
// holds.
func (m *merger) removeUnlisted(md *guardrails.Model, keep map[string]bool, src string) {
	out := md.Endpoints[:0]
	for _, e := range md.Endpoints {
		if e.Source == src && !keep[e.Slug()] {
			m.sum.EndpointsRemoved = append(m.sum.EndpointsRemoved, md.Slug+" "+e.Slug())
			m.touched[md.Slug] = true
			continue
		}
		out = append(out, e)
	}
	md.Endpoints = out
}

// vercelProvider returns the catalog provider a Vercel provider name
// spells: the catalog's own spelling, else a built-in one; "" when it
// names none.
func (m *merger) vercelProvider(name string) string {
	if name == "" {
		return ""
	}
	conn := guardrails.ConnectorVercel
	slugs := make([]string, 0, len(m.doc.Providers))
	for slug := range m.doc.Providers {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		pn := m.doc.Providers[slug]
		if strings.EqualFold(pn.Send[conn], name) || containsName(pn.Reported[conn], name) {
			return slug
		}
	}
	slug, _ := guardrails.BuiltinProviderSlug(conn, name)
	return slug
}
