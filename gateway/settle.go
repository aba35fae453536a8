package gateway

import (
	"context"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/snapshot"
)

// settled is what settle made of the answer: who served, in the catalog's
// names, and what it cost.
type settled struct {
	model, provider string
	usage           connectors.Usage
	cost            float64
	// costSource is where cost came from: "upstream" (billed and reported),
	// "catalog" (the served endpoint's prices), or "" (no cost known).
	costSource string
	// representationBreak: a model other than the decided one served, so
	// the session's prompt cache is cold however identical the bytes.
	representationBreak bool
	// cacheDiscount: the cached prompt tokens the upstream reported were
	// priced at the cache-read price — by the upstream's own bill when it
	// reported the cost, else at the served endpoint's price_cache_read
	// (see cost). Never on a representation break priced from the catalog.
	cacheDiscount bool
}

// settle closes the books on the request, in one place: who served (the
// catalog's names), the cost, the session pin, the budget charge and the
// release of the answering attempt's reservation, and the answer kept for
// replay. A request that ended on a failure has nothing to settle (each
// failed attempt released its reservation when it failed).
func (s *Server) settle(t *turn) {
	a := t.final
	if !a.out.answered {
		a.releaseBudget()
		return
	}
	defer a.releaseBudget() // after the cost is charged
	res := a.out.result
	who := a.compiled.Served(t.snap.Catalog, res)
	if who.ModelUnmatched {
		s.metrics.Unmatched.WithLabelValues("model", a.target.Upstream).Inc()
	}
	if who.ProviderUnmatched {
		s.metrics.Unmatched.WithLabelValues("provider", a.target.Upstream).Inc()
	}
	sv := &t.served
	sv.model, sv.provider = who.Model, who.Provider
	sv.price(t, who.Endpoint, res)
	now := snapshot.Pin{Model: sv.model, Provider: sv.provider}
	holderID, holder := s.keepHolder(t, a)
	if s.fleet != nil {
		s.settleShared(t, a, now, holderID, holder)
		return
	}
	if t.pinKey != "" && sv.model != "" {
		s.sessions.Put(t.pinKey, now)
	}
	if a.metered {
		s.ledger.Add(budget.Month(t.start), sv.cost, budget.KeyScope(t.key.ID), budget.TeamScope(t.key.Org, t.key.Team))
	}
	s.keep(t)
}

// price prices the answer the served model and provider (set in sv) gave
// to the turn: its usage, the representation break and the cost with its
// source. The cost is what the upstream bills: the cached tokens it reports
// were read from its cache whether or not the request named a session and
// whatever the turn's pin said (none, a first turn, another provider), so
// neither is consulted. A switch of model is a representation break: the
// new model's prompt cache is cold however identical the bytes, and a
// catalog price denies the turn the cache-read price. The budget's
// reservation before the call (dispatch's worstCase) is not priced here.
func (sv *settled) price(t *turn, ep *guardrails.Endpoint, res connectors.Result) {
	sv.usage = res.Usage
	sv.representationBreak = sv.model != "" && sv.model != t.decided
	sv.cost, sv.costSource, sv.cacheDiscount = 0, "", false
	switch {
	case res.CostReported:
		// The upstream's bill prices its cache reads itself (a recorded
		// OpenRouter answer's prompt cost is exactly its 156 cached tokens
		// at the cache price plus 9 at the input price), representation
		// break or not.
		sv.cost, sv.costSource = res.Cost, "upstream"
		sv.cacheDiscount = res.Usage.CachedTokens > 0
	case ep != nil:
		sv.cost, sv.cacheDiscount = cost(ep, res.Usage, !sv.representationBreak)
		sv.costSource = "catalog"
	}
}

// settleShared writes what the request leaves in the fleet's shared state,
// in one round trip: the charge with the release of its reservation, the
// session's pin, the answer for the cache, where a stored response is.
// Whatever Redis did not take
// stays in this replica (the charge is pushed when Redis is back).
func (s *Server) settleShared(t *turn, a *attempt, pin snapshot.Pin, holderID, holder string) {
	sv := &t.served
	w := shared.Writes{Month: budget.Month(t.start)}
	if holderID != "" {
		w.HolderID, w.Holder, w.HolderTTL = holderID, holder, t.snap.Config.Responses.TTL.Duration
	}
	if a.metered {
		w.Hold, w.Cost = a.hold, sv.cost
		w.Scopes = []budget.Scope{budget.KeyScope(t.key.ID), budget.TeamScope(t.key.Org, t.key.Team)}
	}
	if t.pinKey != "" && sv.model != "" {
		w.PinKey, w.Pin, w.PinTTL = t.pinKey, []byte(pin.Model+"\x00"+pin.Provider), t.snap.Config.Sessions.TTL.Duration
	}
	if t.admitted {
		// The request is answered: its parallel slots and token correction
		// go in the same round trip (depart then has nothing left to do).
		w.Depart = &shared.Departure{ID: t.id, Checks: t.checks, Local: t.fetchedLocal,
			Delta: sv.usage.PromptTokens + sv.usage.CompletionTokens - t.charged}
		t.admitted = false
	}
	keep, kept := t.answerToKeep()
	if kept {
		c := &t.snap.Config.Cache
		w.CacheKey, w.Cache, w.CacheTTL, w.CacheMaxBytes = t.cacheKey, encodeCached(keep), c.TTL.Duration, c.MaxBytes
	}
	if s.fleet.Write(context.Background(), &w) {
		return
	}
	if w.PinKey != "" {
		s.sessions.Put(t.pinKey, pin)
	}
	if kept {
		s.cache.Put(t.cacheID, keep)
	}
}

// cost estimates the spend of an answer from the endpoint's prices (USD per
// million tokens; 0 without an endpoint), as the upstream bills it. Prompt
// tokens written to the provider's cache are priced at the endpoint's
// cache-write price; with readPrice (every turn but a representation
// break), the cached prompt tokens the upstream reported are priced at its
// cache-read price (each is price_in when the catalog gives none); the rest
// of the prompt at price_in. Counts an upstream reports inconsistently (more
// cached or written than the whole prompt) are priced as plain prompt
// tokens. discounted reports whether any token was priced at a catalog
// price_cache_read: what the row's cache_discount_applied says.
func cost(ep *guardrails.Endpoint, u connectors.Usage, readPrice bool) (usd float64, discounted bool) {
	if ep == nil {
		return 0, false
	}
	plain, read, written := float64(u.PromptTokens), 0.0, 0.0
	if u.CacheWriteTokens > 0 && u.CacheWriteTokens <= u.PromptTokens {
		written = float64(u.CacheWriteTokens)
	}
	if readPrice && u.CachedTokens > 0 && float64(u.CachedTokens)+written <= plain {
		read = float64(u.CachedTokens)
	}
	plain -= read + written
	usd = (plain*ep.PriceIn + read*ep.CacheReadPrice() + written*ep.CacheWritePrice() + float64(u.CompletionTokens)*ep.PriceOut) / 1e6
	return usd, read > 0 && ep.PriceCacheRead != nil
}
