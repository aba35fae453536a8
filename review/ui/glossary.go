package ui

import (
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/store/requestlog"
)

// term is one entry of the glossary page: a badge the pages show, what it
// means in plain words, and the column it comes from.
type term struct {
	// ID is the entry's anchor on /ui/glossary ("degraded-ranking").
	ID string
	// Word is the badge as shown; Column the row's column it reads.
	Word, Column string
	// Text says what it means.
	Text string
}

// glossary lists every badge of the pages, grouped by column, in the order
// the glossary page shows them.
var glossary = []term{
	{"verdict-first_preferred", requestlog.VerdictFirstPreferred, "preference_verdict", "The first provider of the preferred order served the request: the preference was honoured."},
	{"verdict-other_preferred", requestlog.VerdictOtherPreferred, "preference_verdict", "A later provider of the preferred order served: the first one was down, busy or skipped by the upstream. The upstream's attempts, when it reported them, say why."},
	{"verdict-outside_preference", requestlog.VerdictOutsidePreference, "preference_verdict", "A provider outside the preferred order served (or, without an order, one the allow or deny list excludes). The gateway passes the preference on; the upstream did not keep to it."},
	{"verdict-unknown", requestlog.VerdictUnknown, "preference_verdict", "The marketplace answered without saying which provider served, so whether the preference was honoured cannot be told."},
	{"verdict-not_applicable", requestlog.VerdictNotApplicable, "preference_verdict", "Nothing to check: no provider answered (refused, failed, or answered from the cache), the upstream serves a single provider, or no preferred order, allow list or deny list applied (a ranking alone is not checked)."},
	{"degraded-ranking", "ranking", "routing_degraded", "The provider ranking (by cost, latency or throughput) could not be sent: the upstream cannot rank, or it sorts only when no preferred order is given. The request went on without it."},
	{"degraded-preferred_order", "preferred_order", "routing_degraded", "The preferred provider order could not be sent to this upstream. The request went on without it, so any eligible provider may have served."},
	{"degraded-chain", "chain", "routing_degraded", "The fallback chain could not be sent (a direct upstream walks no chain): had the model failed, no other model would have been tried."},
	{"degraded-chain_truncated", "chain_truncated", "routing_degraded", "Only the first entries of the fallback chain were sent: the upstream accepts fewer."},
	{"switch-chain", "chain", "routing_switch_reason", "The decided model did not answer, and the upstream walked the fallback chain to another model. The upstream's attempts, when it reported them, show what failed."},
	{"switch-upstream_substitution", "upstream_substitution", "routing_switch_reason", "A model that is neither the decided one nor in its chain answered: the upstream did something the plan did not allow."},
	{"switch-target_fallback", "target_fallback", "routing_switch_reason", "The gateway's own failover answered from a later target of the route, with another model."},
	{"switch-safety_net", "safety_net", "routing_switch_reason", "The caller's own upstream key failed, and the platform key answered instead."},
	{"fallback", "fallback", "fallback_reason", "The gateway sent the request on to another target after a failure; the badge names the failure (a status class, a timeout, a connection error)."},
	{"refused", "refused", "refused_code", "The gateway refused the request: a guardrail forbade the model, a restriction the upstream cannot express, a budget or a rate limit. The message beside the code says which, in words."},
	{"representation-break", "representation break", "representation_break", "Another model than the decided one served this turn, so its prompt cache was cold: the turn is not priced at the cache price, and a session's pin moves to the new model."},
	{"cached", "cached", "cache_discount_applied", "Cached prompt tokens were priced at the cache price."},
	{"cache-hit", "cache hit", "cache_hit", "Answered from sluice's response cache: no upstream was asked."},
	{"data", "data policy", "data_policy", "Data restrictions that bound the request (zero retention, no training, quantizations, a price ceiling); hover for how each was held on the upstream: natively, by reducing the allowed providers, or decided locally."},
	{"flags-match", "any / all", "", "With several of degraded, refused and switched ticked, \"all\" keeps rows that have every one, \"any\" keeps rows that have at least one."},
}

// glossaryByKey finds entries by "column word" (and by ID).
var glossaryByKey = func() map[string]term {
	m := make(map[string]term, 2*len(glossary))
	for _, t := range glossary {
		m[t.Column+" "+t.Word] = t
		m[t.ID] = t
	}
	return m
}()

// lookup returns the entry for a badge word of a column, falling back to
// the column's general entry (every fallback reason, every refusal code).
func lookup(column, word string) term {
	if t, ok := glossaryByKey[column+" "+word]; ok {
		return t
	}
	for _, t := range glossary {
		if t.Column == column {
			return t
		}
	}
	return term{ID: "", Word: word, Column: column}
}

// helpText is the inline help of a badge: its glossary text.
func helpText(column, word string) string { return lookup(column, word).Text }

// helpLink is the glossary address of a badge.
func helpLink(column, word string) string {
	if id := lookup(column, word).ID; id != "" {
		return "/ui/glossary#" + id
	}
	return "/ui/glossary"
}

// glossaryColumns groups the entries for the page.
type glossaryGroup struct {
	Column string
	Terms  []term
}

func glossaryGroups() []glossaryGroup {
	var out []glossaryGroup
	for _, t := range glossary {
		col := t.Column
		if col == "" {
			col = "filters"
		}
		if n := len(out); n > 0 && out[n-1].Column == col {
			out[n-1].Terms = append(out[n-1].Terms, t)
			continue
		}
		out = append(out, glossaryGroup{Column: col, Terms: []term{t}})
	}
	return out
}

// sentence joins words as prose: "a", "a and b", "a, b and c".
func sentence(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

type glossaryData struct {
	base
	Groups []glossaryGroup
}

// glossaryPage explains every badge of the pages in plain words.
func (h *handler) glossaryPage(w http.ResponseWriter, _ *http.Request, v *viewer) {
	h.render(w, http.StatusOK, "glossary", glossaryData{base: base{Title: "Glossary", Nav: "glossary", Viewer: v}, Groups: glossaryGroups()})
}
