package gateway

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// parallelLease bounds how long a max_parallel slot outlives a replica that
// died holding it (the longest a request may run, streams included).
const parallelLease = 10 * time.Minute

// admit is the request's admission: its rate limits (the key's and its
// team's rpm, tpm and max_parallel) and, with [shared] redis_url, everything
// the request reads of the fleet's state before its first attempt — the
// limits, its cached answer, its session's pin and the first attempt's
// budget reservation — in one round trip. Over a limit it answers 429
// rate_limited with Retry-After (recorded as the row's refused_code).
func (s *Server) admit(r *http.Request, t *turn) *apierr.Error {
	t.checks, t.charged = rateChecks(t)
	lease := parallelLease
	if t.api == connectors.APIRealtime { // a session holds its slot while open, up to its maximum duration
		lease = max(lease, t.snap.Config.Realtime.MaxDuration.Duration+time.Minute)
	}
	if s.fleet == nil {
		if len(t.checks) == 0 {
			return nil
		}
		i, after := s.limiter.Admit(t.id, t.checks, 1, lease)
		if i >= 0 {
			return rateLimited(t.checks[i], after)
		}
		t.admitted = true
		return nil
	}
	q := shared.Admission{ID: t.id, Checks: t.checks, Lease: lease, PinKey: t.pinKey}
	if t.snap.Config.Cache.Enabled && !t.req.Stream && s.decide(r, t) == nil {
		t.cacheKey, t.cacheID = cacheKey(t)
		q.CacheKey = t.cacheKey
	}
	pre := s.firstAsk(r, t)
	if pre != nil {
		q.Budget = &pre.ask
	}
	res := s.fleet.Admit(r.Context(), &q)
	if res.Refused >= 0 {
		return rateLimited(t.checks[res.Refused], res.RetryAfter)
	}
	t.admitted, t.fetched, t.fetchedLocal = len(t.checks) > 0, true, res.Local
	if res.Hold != nil && pre != nil {
		pre.hold = res.Hold
		t.pre = pre
	}
	if res.Local {
		return nil // replay and plan look in this replica's own cache and pins
	}
	if res.Cache != nil {
		t.fetchedCache = decodeCached(res.Cache)
	}
	if res.Pin != nil {
		model, provider, _ := strings.Cut(string(res.Pin), "\x00")
		t.pin, t.hasPin = snapshot.Pin{Model: model, Provider: provider}, true
	}
	return nil
}

// depart gives back what admission held once the request ends: its
// parallel slots, the tokens charged at admission that the answer did not
// use, and a first reservation no attempt used (a cache hit, a refusal).
func (s *Server) depart(t *turn) {
	if t.pre != nil && t.pre.hold != nil {
		h := t.pre.hold
		go s.fleet.Release(context.Background(), h)
	}
	if !t.admitted {
		return
	}
	var delta int64
	if a := t.final; a != nil && a.out.answered {
		delta = t.served.usage.PromptTokens + t.served.usage.CompletionTokens - t.charged
	}
	if s.fleet == nil {
		s.limiter.Depart(t.id, t.checks, delta)
		return
	}
	s.fleet.Depart(shared.Departure{ID: t.id, Checks: t.checks, Delta: delta, Local: t.fetchedLocal})
}

// rateChecks are the request's rate limits, the key's then its team's, and
// the tokens a tpm limit charges at admission: the prompt's estimate plus
// the completion cap the request sets (corrected to the usage at depart).
func rateChecks(t *turn) ([]shared.Check, int64) {
	tokens := int64(t.req.PromptTokens) + t.req.Completion
	var out []shared.Check
	add := func(scope string, rl *profiles.RateLimit) {
		if !rl.Set() {
			return
		}
		if rl.RPM > 0 {
			out = append(out, shared.Check{Scope: scope, Kind: shared.RPM, Limit: rl.RPM, Cost: 1})
		}
		if rl.TPM > 0 {
			out = append(out, shared.Check{Scope: scope, Kind: shared.TPM, Limit: rl.TPM, Cost: max(tokens, 1)})
		}
		if rl.MaxParallel > 0 {
			out = append(out, shared.Check{Scope: scope, Kind: shared.Parallel, Limit: rl.MaxParallel, Cost: 1})
		}
	}
	add(string(budget.KeyScope(t.key.ID)), t.key.RateLimit)
	if team := t.snap.Config.Team(t.key.Org, t.key.Team); team != nil {
		add(string(budget.TeamScope(t.key.Org, t.key.Team)), team.RateLimit)
	}
	return out, tokens
}

// rateLimited is the 429 of a limit, with the seconds to wait.
func rateLimited(c shared.Check, after time.Duration) *apierr.Error {
	e := apierr.New(apierr.CodeRateLimited, fmt.Sprintf("%s of %s is %d; try again in %s", c.Kind, strings.Replace(c.Scope, ":", " ", 1), c.Limit, after.Round(time.Millisecond)))
	e.RetryAfter = int(math.Ceil(after.Seconds()))
	if e.RetryAfter < 1 {
		e.RetryAfter = 1
	}
	return e
}

// preReservation is the first attempt's reservation made with the
// admission (so that the common request makes one round trip before its
// upstream call), for the plain model's target; dispatch uses it when its
// first metered attempt is that target with the same worst case.
type preReservation struct {
	upstream, model string
	ask             shared.BudgetAsk
	hold            *shared.Hold
}

// firstAsk returns the reservation of the first attempt when admission can
// know it: a plain model (a route's first target depends on planning) on
// the platform key, under a budget, priced in the catalog (not embeddings,
// whose reservation prices the input alone: see reserveInput). The compile
// here has no session pin, which changes the provider order only, never
// the chain that prices the worst case; it is made in the turn's memo,
// which plan then uses as it is unless the session has a pin.
func (s *Server) firstAsk(r *http.Request, t *turn) *preReservation {
	limits := budgetLimits(t)
	if len(limits) == 0 || t.api == connectors.APIEmbeddings || t.api == connectors.APIRealtime || t.snap.Config.Route(t.req.Model) != nil {
		return nil
	}
	upstream := t.snap.Config.UpstreamFor(t.key)
	if t.callerKey(upstream) != "" || s.decide(r, t) != nil {
		return nil
	}
	s.initMemo(t, snapshot.Pin{})
	c, err := t.memo.Compile(upstream, t.req.Model)
	if err != nil || c.Refused() != nil {
		return nil
	}
	want, _, _, priced := worstCase(t, c, t.req.Model)
	if !priced {
		return nil
	}
	return &preReservation{upstream: upstream, model: t.req.Model,
		ask: shared.BudgetAsk{Month: budget.Month(time.Now()), Want: want, Limits: limits, Lease: budgetLease(t, upstream)}}
}

// budgetLease bounds a reservation by the attempt's deadline and a margin.
func budgetLease(t *turn, upstream string) time.Duration {
	if u := t.snap.Config.Upstream(upstream); u != nil {
		return u.Timeout.Duration + time.Minute
	}
	return 3 * time.Minute
}

// cachedWire is a cached answer as the shared cache stored it before
// cachedFormat (JSON; still read while such entries live out their ttl).
type cachedWire struct {
	Body     json.RawMessage  `json:"b"`
	Model    string           `json:"m,omitempty"`
	Provider string           `json:"p,omitempty"`
	Upstream string           `json:"u,omitempty"`
	Usage    connectors.Usage `json:"usage"`
}

// cachedFormat starts a cached answer as the shared cache stores it: the
// usage's five counts and the served model, provider and upstream as
// varints and length-prefixed strings, then the body as it came, to the
// end. The body is copied once, into the value Redis is sent (JSON
// escaped and scanned it twice, and again to read it back).
const cachedFormat = 1

func encodeCached(a cachedAnswer) []byte {
	u := &a.usage
	n := 1 + 5*binary.MaxVarintLen64 + 3*binary.MaxVarintLen64 + len(a.servedModel) + len(a.servedProvider) + len(a.upstream) + len(a.body)
	b := make([]byte, 0, n)
	b = append(b, cachedFormat)
	for _, v := range [...]int64{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		b = binary.AppendVarint(b, v)
	}
	for _, s := range [...]string{a.servedModel, a.servedProvider, a.upstream} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return append(b, a.body...)
}

// decodeCached reads a cached answer (nil: unreadable, or empty); the body
// is b's tail, not a copy.
func decodeCached(b []byte) *cachedAnswer {
	if len(b) > 0 && b[0] == '{' {
		var w cachedWire
		if json.Unmarshal(b, &w) != nil || len(w.Body) == 0 {
			return nil
		}
		return &cachedAnswer{body: w.Body, servedModel: w.Model, servedProvider: w.Provider, upstream: w.Upstream, usage: w.Usage}
	}
	if len(b) == 0 || b[0] != cachedFormat {
		return nil
	}
	b = b[1:]
	var counts [5]int64
	for i := range counts {
		v, n := binary.Varint(b)
		if n <= 0 {
			return nil
		}
		counts[i], b = v, b[n:]
	}
	var strs [3]string
	for i := range strs {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil
		}
		strs[i], b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	if len(b) == 0 {
		return nil
	}
	return &cachedAnswer{body: b, servedModel: strs[0], servedProvider: strs[1], upstream: strs[2],
		usage: connectors.Usage{PromptTokens: counts[0], CompletionTokens: counts[1], CachedTokens: counts[2], CacheWriteTokens: counts[3], ReasoningTokens: counts[4]}}
}
