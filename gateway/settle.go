package gateway

import (
	"strings"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/snapshot"
)

// settled is what settle made of the answer: who served, in the catalog's
// names, and what it cost.
type settled struct {
	model, provider string
	usage           connectors.Usage
	cost            float64
	// representationBreak: a model other than the decided one served, so
	// the session's prompt cache is cold however identical the bytes.
	representationBreak bool
	// cacheDiscount: the turn kept the cross-turn prompt-cache discount.
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
	sv := &t.served
	sv.model = strings.ToLower(res.ServedModel)
	var ep *guardrails.Endpoint
	sv.provider, ep = servedEndpoint(t.snap, sv.model, res.ServedProvider)
	sv.usage = res.Usage
	// A switch of model is a representation break: the new model's prompt
	// cache is cold however identical the bytes, so no discount this turn.
	sv.representationBreak = sv.model != "" && sv.model != t.decided
	now := snapshot.Pin{Model: sv.model, Provider: sv.provider}
	sv.cacheDiscount = t.hasPin && !sv.representationBreak && t.pin == now
	if t.pinKey != "" && sv.model != "" {
		s.sessions.Put(t.pinKey, now)
	}
	sv.cost = cost(ep, res.Usage, sv.cacheDiscount)
	if a.metered {
		s.ledger.Add(budget.Month(t.start), sv.cost, budget.KeyScope(t.key.ID), budget.TeamScope(t.key.Org, t.key.Team))
	}
	s.keep(t)
}

// servedEndpoint names the provider that served the way the catalog does,
// and returns the catalog endpoint whose prices the answer costs (nil when
// the catalog does not have the model). Upstreams report providers in their
// own spelling — the marketplace by display name, "Amazon Bedrock" for the
// catalog's amazon-bedrock — so a reported name that is not a slug of the
// served model's endpoints is matched to one ignoring case and punctuation.
// A name no endpoint matches is kept, lower-cased (the row shows what the
// upstream said), and priced at the model's first endpoint.
func servedEndpoint(snap *snapshot.Snapshot, model, reported string) (string, *guardrails.Endpoint) {
	low := strings.ToLower(reported)
	if snap.Catalog == nil {
		return low, nil
	}
	m, ok := snap.Catalog.Model(model)
	if !ok || len(m.Endpoints) == 0 {
		return low, nil
	}
	if low != "" {
		for i, e := range m.Endpoints {
			if e.Provider == low || e.Slug() == low {
				return low, &m.Endpoints[i]
			}
		}
		for i, e := range m.Endpoints {
			if sameLetters(e.Provider, reported) {
				return e.Provider, &m.Endpoints[i]
			}
		}
	}
	return low, &m.Endpoints[0]
}

// sameLetters reports whether a and b spell the same letters and digits,
// ignoring case and everything else ("Amazon Bedrock", "amazon-bedrock").
func sameLetters(a, b string) bool {
	next := func(s string, i int) (byte, int) {
		for ; i < len(s); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c >= 0x80 {
				return c, i + 1
			}
		}
		return 0, i
	}
	i, j := 0, 0
	for {
		var ca, cb byte
		ca, i = next(a, i)
		cb, j = next(b, j)
		if ca != cb {
			return false
		}
		if ca == 0 {
			return true
		}
	}
}

// cost estimates the spend of an answer from the endpoint's prices (USD per
// million tokens; 0 without an endpoint). With the cross-turn discount,
// cached prompt tokens are priced at a tenth.
func cost(ep *guardrails.Endpoint, u connectors.Usage, discount bool) float64 {
	if ep == nil {
		return 0
	}
	prompt := float64(u.PromptTokens)
	if discount && u.CachedTokens > 0 && u.CachedTokens <= u.PromptTokens {
		prompt -= 0.9 * float64(u.CachedTokens)
	}
	return (prompt*ep.PriceIn + float64(u.CompletionTokens)*ep.PriceOut) / 1e6
}
