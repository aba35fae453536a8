package failover

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicegw/sluice/profiles"
)

// EstimateTokens is the rough prompt-size estimate (4 bytes a token) that
// planning compares with context windows; messages is the raw "messages"
// array of a request.
func EstimateTokens(messages []byte) int { return (len(messages) + 3) / 4 }

// Strategy names, as written in a route's strategy.
const (
	// StrategyPriority tries ordinary targets in written order (the default).
	StrategyPriority = "priority"
	// StrategyRoundRobin rotates the first ordinary target across requests.
	StrategyRoundRobin = "round_robin"
	// StrategyWeighted orders ordinary targets by a weighted random draw
	// without replacement: the first pick has probability weight/total, the
	// next is drawn from the rest, and so on.
	StrategyWeighted = "weighted"
	// StrategyFastest orders ordinary targets (the pool's members) by their
	// latency average, fastest first; members never observed answering come
	// first, in written order, so each gets measured.
	StrategyFastest = "fastest"
)

// StopReason says why a request ends after a failed attempt instead of
// moving to a successor. The strings are stable.
type StopReason string

// Stop reasons returned by [Plan.Next].
const (
	// StopNone means Next returned a successor.
	StopNone StopReason = ""
	// StopRefusal: the request carries a content refusal and no untried
	// restricted target covers it; the refusal is forwarded unchanged.
	StopRefusal StopReason = "refusal"
	// StopFinal: the failure may not be retried (client_error, or
	// unauthorized on the gateway's own key) and no restricted target takes
	// it over; the answer is forwarded unchanged.
	StopFinal StopReason = "final"
	// StopBudget: a successor exists but the request has no retry left.
	StopBudget StopReason = "budget"
	// StopTailGuard: the failure would carry the request from the pool's
	// members into its tail, and the tail's then.on does not list it.
	StopTailGuard StopReason = "tail_guard"
	// StopExhausted: no untried target may take the request (for an
	// overflow: none whose window is known to hold the prompt).
	StopExhausted StopReason = "exhausted"
)

// Reasons a target is removed from a request's plan, as [Explanation] shows them.
const (
	// RemovedContextWindow: the target's model window is smaller than the prompt.
	RemovedContextWindow = "context_window"
	// RemovedCold: the target's last ColdAfter attempts failed and its last
	// failure is less than ColdFor ago, and a warm alternative of the same
	// section (members or tail) remains.
	RemovedCold = "cold"
	// RemovedForbiddenClass: the route's forbid_classes names the target's class.
	RemovedForbiddenClass = "forbidden_class"
)

// Default [PlannerOptions] values.
const (
	// DefaultColdAfter is the default of [PlannerOptions.ColdAfter].
	DefaultColdAfter = 3
	// DefaultColdFor is the default of [PlannerOptions.ColdFor].
	DefaultColdFor = 30 * time.Second
	// DefaultAlpha is the default of [PlannerOptions.Alpha].
	DefaultAlpha = 0.3
)

// PlannerOptions configures a [Planner]. Zero values take the defaults.
type PlannerOptions struct {
	// Now is the clock used for health. Default time.Now.
	Now func() time.Time
	// ColdAfter is how many consecutive failures make a target cold.
	// Default 3.
	ColdAfter int
	// ColdFor is how long a target stays cold after its last failure; after
	// that one request may try it again, and one more failure makes it cold
	// again. Default 30s.
	ColdFor time.Duration
	// Alpha is the weight of the newest latency in the moving average
	// (0 < Alpha <= 1). Default 0.3.
	Alpha float64
	// Rand is the random source of the weighted strategy; the Planner
	// serialises its use, so any source works. Default: the runtime's
	// random generator.
	Rand rand.Source
	// Health keeps the targets' consecutive failures, which make them
	// cold. Default: in the Planner's memory ([NewMemoryHealth]); a fleet of
	// gateways shares one so that a target one replica found cold is
	// skipped by all.
	Health HealthStore
}

// HealthKey names one target of one route in a [HealthStore].
type HealthKey struct{ Route, Upstream, Model string }

// HealthStore keeps each target's consecutive failures and the time of the
// last one: what makes a target cold. The Planner calls it with its own
// lock held, so its methods must answer from memory, never wait on a
// network (a shared store writes through in the background).
type HealthStore interface {
	// Failures returns the target's consecutive failures and when the last
	// one happened (zero without one).
	Failures(k HealthKey) (n int, last time.Time)
	// Failed counts one more failure at the time given.
	Failed(k HealthKey, at time.Time)
	// Answered clears the target's failures.
	Answered(k HealthKey)
}

// memoryHealth is the in-process [HealthStore].
type memoryHealth struct {
	mu sync.Mutex
	m  map[HealthKey]memoryFails
}

type memoryFails struct {
	n    int
	last time.Time
}

var _ HealthStore = (*memoryHealth)(nil)

// NewMemoryHealth returns a [HealthStore] in this process's memory: what a
// single gateway uses.
func NewMemoryHealth() HealthStore { return &memoryHealth{m: map[HealthKey]memoryFails{}} }

// Failures implements [HealthStore.Failures].
func (h *memoryHealth) Failures(k HealthKey) (int, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.m[k]
	return f.n, f.last
}

// Failed implements [HealthStore.Failed].
func (h *memoryHealth) Failed(k HealthKey, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.m[k]
	h.m[k] = memoryFails{n: f.n + 1, last: at}
}

// Answered implements [HealthStore.Answered].
func (h *memoryHealth) Answered(k HealthKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.m[k]; ok {
		delete(h.m, k)
	}
}

// Planner orders the attempts of routed requests. One Planner serves a
// gateway: it keeps per route the round-robin position and per target the
// latency average and consecutive failures that [Planner.Observe] feeds.
// It is safe for concurrent use.
type Planner struct {
	now       func() time.Time
	coldAfter int
	coldFor   time.Duration
	alpha     float64

	mu      sync.Mutex
	rr      map[string]uint64
	latency map[HealthKey]*latency
	health  HealthStore

	randMu sync.Mutex
	rand   *rand.Rand
}

// latency is a target's moving average, always this replica's own: each
// replica ranks by the latency it sees.
type latency struct {
	ewma     float64 // nanoseconds; valid when observed
	observed bool
}

type runtimeSource struct{}

func (runtimeSource) Uint64() uint64 { return rand.Uint64() }

// NewPlanner returns a Planner with the options' defaults applied.
func NewPlanner(opts PlannerOptions) *Planner {
	p := &Planner{
		now:       opts.Now,
		coldAfter: opts.ColdAfter,
		coldFor:   opts.ColdFor,
		alpha:     opts.Alpha,
		rr:        map[string]uint64{},
		latency:   map[HealthKey]*latency{},
		health:    opts.Health,
	}
	if p.health == nil {
		p.health = NewMemoryHealth()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.coldAfter <= 0 {
		p.coldAfter = DefaultColdAfter
	}
	if p.coldFor <= 0 {
		p.coldFor = DefaultColdFor
	}
	if p.alpha <= 0 || p.alpha > 1 {
		p.alpha = DefaultAlpha
	}
	src := opts.Rand
	if src == nil {
		src = runtimeSource{}
	}
	p.rand = rand.New(src)
	return p
}

// Health returns the planner's health store.
func (p *Planner) Health() HealthStore { return p.health }

// Observe records the outcome of one attempt on a target of the route
// (route is the route's alias). A success resets the target's consecutive
// failures and feeds its latency average; a failure counts towards making
// it cold and leaves the average alone (a quick 429 says nothing about
// speed). Report ok=false only for failures that speak about the target's
// health (throttled, timeout, server_error, connection), and do not report
// a refusal or a client error at all: it is the request's doing, and
// neither an answer nor a sign of ill health.
func (p *Planner) Observe(route string, t Target, took time.Duration, ok bool) {
	k := HealthKey{route, t.Upstream, t.Model}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		p.health.Failed(k, p.now())
		return
	}
	p.health.Answered(k)
	h := p.latency[k]
	if h == nil {
		h = &latency{}
		p.latency[k] = h
	}
	x := float64(took)
	if !h.observed {
		h.ewma, h.observed = x, true
		return
	}
	h.ewma = p.alpha*x + (1-p.alpha)*h.ewma
}

// Target is one attempt the plan may make. Targets returned by [Plan.First]
// and [Plan.Next] carry the request's progress through the plan, so pass
// the failed one back to Next unchanged.
type Target struct {
	// Upstream names the upstream to send to.
	Upstream string `json:"upstream"`
	// Model is the model slug sent upstream.
	Model string `json:"model"`
	// Class is the target's cost class, if any.
	Class string `json:"class,omitempty"`
	// TakesOver lists the failures a restricted target is reserved for;
	// empty for an ordinary one.
	TakesOver []string `json:"takes_over"`
	// Weight is the target's share on a weighted route.
	Weight int `json:"weight"`
	// Tail is true for a target of the route's guarded tail (then.targets).
	Tail bool `json:"tail,omitempty"`
	// Index is the target's written position in the route's targets, or in
	// then.targets when Tail is set.
	Index int `json:"index"`

	cur cursor
}

// Restricted reports whether the target only takes over specific failures.
func (t Target) Restricted() bool { return len(t.TakesOver) > 0 }

// Name returns "upstream/model", the form explain and logs show.
func (t Target) Name() string { return t.Upstream + "/" + t.Model }

// cursor is a request's progress, carried by the target it last tried.
type cursor struct {
	retries    int      // retries spent so far (the first attempt is free)
	next       int      // first position of the ordinary order not yet passed
	tried      []int    // restricted positions already tried
	refusal    *Failure // the latest refusal of the request, if any
	overflowed bool     // the request already overflowed a window
}

// Removal is a target left out of a request's plan.
type Removal struct {
	// Target is the removed target.
	Target Target `json:"target"`
	// Reason is one of the Removed* constants.
	Reason string `json:"reason"`
}

// Plan is the ordered attempts of one request. It is immutable once
// [Planner.Plan] returns it, so it may be read from several goroutines.
type Plan struct {
	route    string
	strategy string
	budget   int
	prompt   int

	order      []Target // members, then tail targets
	orderFits  []bool   // the target's window is unknown or holds the prompt; nil: every one does
	members    int      // len of the members' part of order
	restricted []Target // written order: the route's, then the tail's
	restrFits  []bool
	hasTail    bool
	tailOn     []string

	one [1]Target // the order of a Single plan, without a second allocation

	removed        []Removal
	keptOversized  bool
	allMembersCold bool
	tailCold       bool
}

// Plan orders the attempts of one request on the route. budget is the
// number of retries the request may spend (each successor costs one; the
// first attempt is free). promptTokens is the prompt's estimated size and
// window returns a model's context window in tokens (0: unknown); either
// may be zero/nil to skip window checks.
//
// The ordinary targets are ordered by the route's strategy; targets whose
// class the route forbids, whose window is smaller than the prompt, or that
// are cold are removed (see [Explanation]). Restricted targets (takes_over)
// are kept aside in written order: they are never first.
func (p *Planner) Plan(route *profiles.Route, budget int, promptTokens int, window func(model string) int) *Plan {
	pl := &Plan{route: route.Model, strategy: route.Strategy, budget: max(budget, 0), prompt: max(promptTokens, 0)}
	if pl.strategy == "" {
		pl.strategy = StrategyPriority
	}
	fits := func(t Target) bool {
		if pl.prompt == 0 || window == nil {
			return true
		}
		w := window(t.Model)
		return w <= 0 || w >= pl.prompt
	}

	var members, tail []Target
	add := func(ts []profiles.Target, isTail bool) {
		for i := range ts {
			t := toTarget(route, &ts[i], i, isTail)
			switch {
			case forbidden(route, t.Class):
				pl.removed = append(pl.removed, Removal{t, RemovedForbiddenClass})
			case t.Restricted():
				pl.restricted = append(pl.restricted, t)
				pl.restrFits = append(pl.restrFits, fits(t))
			case isTail:
				tail = append(tail, t)
			default:
				members = append(members, t)
			}
		}
	}
	add(route.Targets, false)
	if route.Then != nil {
		pl.hasTail = true
		pl.tailOn = route.Then.On
		if pl.tailOn == nil {
			pl.tailOn = []string{ClassOverflow}
		}
		add(route.Then.Targets, true)
	}

	// Window: remove what cannot hold the prompt, unless that would leave
	// nothing ordinary to dial; then the windows (declared, the prompt
	// estimated) are not trusted over the upstream's own answer.
	fitMembers, fitTail := keep(members, fits), keep(tail, fits)
	if len(fitMembers)+len(fitTail) > 0 {
		for _, t := range members {
			if !fits(t) {
				pl.removed = append(pl.removed, Removal{t, RemovedContextWindow})
			}
		}
		for _, t := range tail {
			if !fits(t) {
				pl.removed = append(pl.removed, Removal{t, RemovedContextWindow})
			}
		}
		members, tail = fitMembers, fitTail
	} else if len(members)+len(tail) > 0 && pl.prompt > 0 && window != nil {
		pl.keptOversized = true
	}

	members, tail = p.arrange(pl, route.Model, members, tail)

	pl.members = len(members)
	pl.order = append(members, tail...)
	for _, t := range pl.order {
		pl.orderFits = append(pl.orderFits, fits(t))
	}
	return pl
}

// arrange orders the members by the strategy and skips cold targets under
// p.mu. The unlock is deferred: a panic below (a health store's, a random
// source's) must not leave the planner locked, or every later request of
// every route would wait on it for good.
func (p *Planner) arrange(pl *Plan, route string, members, tail []Target) ([]Target, []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	members = p.order(pl.strategy, route, members)
	members, pl.allMembersCold = p.skipCold(route, members, &pl.removed)
	tail, pl.tailCold = p.skipCold(route, tail, &pl.removed)
	return members, tail
}

func toTarget(route *profiles.Route, t *profiles.Target, i int, isTail bool) Target {
	model := t.Model
	if model == "" {
		model = strings.ToLower(route.Model)
	}
	takes := t.TakesOver
	if takes == nil {
		takes = []string{}
	}
	return Target{Upstream: t.Upstream, Model: model, Class: t.Class, TakesOver: takes,
		Weight: t.Weight, Tail: isTail, Index: i}
}

func forbidden(route *profiles.Route, class string) bool {
	_, ok := route.Forbids(class)
	return ok
}

func keep(ts []Target, pred func(Target) bool) []Target {
	var out []Target
	for _, t := range ts {
		if pred(t) {
			out = append(out, t)
		}
	}
	return out
}

// order applies the strategy to the ordinary members. p.mu is held.
func (p *Planner) order(strategy, route string, ts []Target) []Target {
	if len(ts) < 2 {
		if strategy == StrategyRoundRobin {
			p.rr[route]++
		}
		return ts
	}
	switch strategy {
	case StrategyRoundRobin:
		start := int(p.rr[route] % uint64(len(ts)))
		p.rr[route]++
		return append(slices.Clone(ts[start:]), ts[:start]...)
	case StrategyWeighted:
		return p.weighted(ts)
	case StrategyFastest:
		// Unobserved members come first, in written order: a member nobody
		// has measured would otherwise never be tried while a measured one
		// answers, and one request is what it takes to measure it.
		type ranked struct {
			t        Target
			observed bool
			ewma     float64
		}
		rs := make([]ranked, len(ts))
		for i, t := range ts {
			rs[i].t = t
			if h := p.latency[HealthKey{route, t.Upstream, t.Model}]; h != nil && h.observed {
				rs[i].observed, rs[i].ewma = true, h.ewma
			}
		}
		slices.SortStableFunc(rs, func(a, b ranked) int {
			switch {
			case a.observed != b.observed:
				if !a.observed {
					return -1
				}
				return 1
			case a.ewma < b.ewma:
				return -1
			case a.ewma > b.ewma:
				return 1
			}
			return 0
		})
		out := make([]Target, len(rs))
		for i, r := range rs {
			out[i] = r.t
		}
		return out
	default:
		return ts
	}
}

// weighted draws the whole order without replacement, each pick with
// probability weight/remaining weight. Members of weight 0 or less come
// last, in written order. Weights are validated to at most
// [profiles.MaxWeight] at load and in the admin API; they are clamped to it
// here as well, so that no sum can overflow whatever reaches the planner.
func (p *Planner) weighted(ts []Target) []Target {
	rest := slices.Clone(ts)
	out := make([]Target, 0, len(ts))
	p.randMu.Lock()
	defer p.randMu.Unlock()
	w := func(t Target) int64 { return int64(min(max(t.Weight, 0), profiles.MaxWeight)) }
	for len(rest) > 0 {
		var total int64
		for _, t := range rest {
			total += w(t)
		}
		if total == 0 {
			return append(out, rest...)
		}
		n := p.rand.Int64N(total)
		for i, t := range rest {
			n -= w(t)
			if n < 0 {
				out = append(out, t)
				rest = slices.Delete(rest, i, i+1)
				break
			}
		}
	}
	return out
}

// skipCold removes cold targets unless every one is cold: health skipping
// must never push a request past a section it could still be served by.
// p.mu is held.
func (p *Planner) skipCold(route string, ts []Target, removed *[]Removal) ([]Target, bool) {
	now := p.now()
	var warm, cold []Target
	for _, t := range ts {
		if n, last := p.health.Failures(HealthKey{route, t.Upstream, t.Model}); n >= p.coldAfter && now.Sub(last) < p.coldFor {
			cold = append(cold, t)
		} else {
			warm = append(warm, t)
		}
	}
	if len(cold) == 0 {
		return ts, false
	}
	if len(warm) == 0 {
		return ts, true
	}
	for _, t := range cold {
		*removed = append(*removed, Removal{t, RemovedCold})
	}
	return warm, false
}

// Single is the plan of a request that names one target rather than a
// route: that target, and no successor whatever the failure.
func Single(t Target) *Plan {
	pl := new(Plan)
	pl.SetSingle(t)
	return pl
}

// SetSingle makes pl the plan [Single] returns for t, in pl's own storage
// (a request's plan kept beside the request's other state allocates
// nothing).
func (pl *Plan) SetSingle(t Target) {
	*pl = Plan{strategy: StrategyPriority, members: 1}
	pl.one[0] = t
	pl.order = pl.one[:]
}

// Find returns the first target of the plan's order (members, then the
// tail; never a restricted target) that keep accepts, as a plan of its
// own would name it; false when none does.
func (pl *Plan) Find(keep func(Target) bool) (Target, bool) {
	for _, t := range pl.order {
		if keep(t) {
			t.cur = cursor{}
			return t, true
		}
	}
	return Target{}, false
}

// First returns the request's first target; false when nothing may be
// dialled (every ordinary target forbidden, or a route without one, which
// configuration loading rejects).
func (pl *Plan) First() (Target, bool) {
	if len(pl.order) == 0 {
		return Target{}, false
	}
	t := pl.order[0]
	t.cur = cursor{next: 1}
	return t, true
}

// FirstReason returns the failure that sent the first attempt past the
// pool's members: a planning-time overflow when every member was removed
// for its window and the first target is in the tail. It is what the
// request log records as fallback_reason if the first attempt answers.
func (pl *Plan) FirstReason() (Failure, bool) {
	if len(pl.order) == 0 || !pl.order[0].Tail {
		return Failure{}, false
	}
	for _, r := range pl.removed {
		if r.Reason == RemovedContextWindow && !r.Target.Tail && !r.Target.Restricted() {
			return PlanningOverflow(), true
		}
	}
	return Failure{}, false
}

// Next returns the successor of failed, a target this plan returned, after
// its attempt failed with f; callerKey says the attempt used the caller's
// own provider key. When the request ends instead, Next returns false and
// why. Rules, in order:
//
//  1. An untried restricted target whose takes_over covers f comes next
//     (written order). After a refusal it must also cover that refusal; after
//     an overflow its window must hold the prompt.
//  2. Otherwise a request that met a refusal ends (StopRefusal): ordinary
//     targets, tail included, would send the same content to the same kind
//     of model. A failure [Retryable] rejects ends it too (StopFinal).
//  3. Otherwise the next untried target of the order comes next, skipping,
//     after an overflow, those whose window is known to be too small
//     (StopExhausted when none is left). Moving from the members into the
//     tail requires then.on to cover f (StopTailGuard).
//  4. Every successor costs one retry; with none left, StopBudget.
func (pl *Plan) Next(failed Target, f Failure, callerKey bool) (Target, bool, StopReason) {
	return pl.next(failed, f, callerKey, true)
}

// NextOrdinary is [Plan.Next] for a request that never uses a restricted
// target: a realtime session, whose candidates are ordered before any
// attempt fails (rule 1 does not apply, the rest do).
func (pl *Plan) NextOrdinary(failed Target, f Failure, callerKey bool) (Target, bool, StopReason) {
	return pl.next(failed, f, callerKey, false)
}

func (pl *Plan) next(failed Target, f Failure, callerKey, restricted bool) (Target, bool, StopReason) {
	c := failed.cur
	if f.Class == ClassRefusal {
		ff := f
		c.refusal = &ff
	}
	if f.Class == ClassOverflow {
		c.overflowed = true
	}

	for i, r := range pl.restricted {
		if !restricted || slices.Contains(c.tried, i) || !Covers(r.TakesOver, f) {
			continue
		}
		if c.refusal != nil && !Covers(r.TakesOver, *c.refusal) {
			continue
		}
		if c.overflowed && !pl.restrFits[i] {
			continue
		}
		if r.Tail && pl.guarded(c, f) {
			continue // a restricted tail target is behind the tail's guard too
		}
		if c.retries >= pl.budget {
			return Target{}, false, StopBudget
		}
		c.retries++
		c.tried = append(slices.Clip(c.tried), i)
		r.cur = c
		return r, true, StopNone
	}

	if c.refusal != nil {
		return Target{}, false, StopRefusal
	}
	if !Retryable(f, callerKey) {
		return Target{}, false, StopFinal
	}
	j := c.next
	for ; j < len(pl.order); j++ {
		if !c.overflowed || pl.orderFits == nil || pl.orderFits[j] {
			break
		}
	}
	if j >= len(pl.order) {
		return Target{}, false, StopExhausted
	}
	if j >= pl.members && pl.guarded(c, f) {
		return Target{}, false, StopTailGuard
	}
	if c.retries >= pl.budget {
		return Target{}, false, StopBudget
	}
	c.retries++
	c.next = j + 1
	t := pl.order[j]
	t.cur = c
	return t, true, StopNone
}

// guarded reports whether the tail's guard stops f from carrying a request
// at cursor c into the tail: the request has not entered the tail yet (its
// ordinary progress is still among the members) and then.on does not cover
// f. Without a detour through a restricted target, the failure stepping into
// the tail is always the last member's.
func (pl *Plan) guarded(c cursor, f Failure) bool {
	return pl.hasTail && pl.members > 0 && c.next <= pl.members && !Covers(pl.tailOn, f)
}

// Explanation is a plan as `sluice explain` shows it.
type Explanation struct {
	// Route is the route's alias.
	Route string `json:"route"`
	// Strategy is the strategy that ordered the members.
	Strategy string `json:"strategy"`
	// Budget is the retries the request may spend.
	Budget int `json:"budget"`
	// PromptTokens is the prompt size the plan was made for (0: unknown).
	PromptTokens int `json:"prompt_tokens"`
	// Members are the ordinary targets in this request's order.
	Members []Target `json:"members"`
	// Restricted are the targets reached only by taking over a failure they
	// name, in written order, with their takes_over classes.
	Restricted []Target `json:"restricted"`
	// Tail are the guarded tail's targets in written order.
	Tail []Target `json:"tail,omitempty"`
	// TailOn is the tail's guard: the failure classes of the last member that
	// reach the tail. Empty without a tail.
	TailOn []string `json:"tail_on,omitempty"`
	// Removed are the targets this request will not try, with why.
	Removed []Removal `json:"removed,omitempty"`
	// Notes explain choices that are not removals: all members cold and
	// tried anyway, no window holding the prompt.
	Notes []string `json:"notes,omitempty"`
}

// Explain describes the plan. The slices are copies.
func (pl *Plan) Explain() Explanation {
	e := Explanation{
		Route: pl.route, Strategy: pl.strategy, Budget: pl.budget, PromptTokens: pl.prompt,
		Members:    slices.Clone(pl.order[:pl.members]),
		Restricted: slices.Clone(pl.restricted),
		Removed:    slices.Clone(pl.removed),
	}
	if pl.hasTail {
		e.Tail = slices.Clone(pl.order[pl.members:])
		e.TailOn = slices.Clone(pl.tailOn)
	}
	if e.Members == nil {
		e.Members = []Target{}
	}
	if e.Restricted == nil {
		e.Restricted = []Target{}
	}
	if pl.allMembersCold {
		e.Notes = append(e.Notes, "every member is cold; they are tried anyway, before the tail")
	}
	if pl.tailCold {
		e.Notes = append(e.Notes, "every tail target is cold; they are tried anyway")
	}
	if pl.keptOversized {
		e.Notes = append(e.Notes, "no target's window holds the prompt; none removed, the upstream decides")
	}
	return e
}

// Without returns a copy of the route without the targets skip names (a
// target the request may not be sent to at all: a guardrail forbids its
// model, its upstream cannot express a restriction). Such a target is
// skipped, not failed over to. ok is false when no ordinary target is left.
func Without(rt *profiles.Route, skip func(profiles.Target) bool) (usable *profiles.Route, ok bool) {
	keep := func(ts []profiles.Target) []profiles.Target {
		out := make([]profiles.Target, 0, len(ts))
		for _, t := range ts {
			if !skip(t) {
				out = append(out, t)
			}
		}
		return out
	}
	u := *rt
	u.Targets = keep(rt.Targets)
	if rt.Then != nil {
		tail := *rt.Then
		tail.Targets = keep(rt.Then.Targets)
		u.Then = &tail
	}
	for _, t := range u.Targets {
		if !t.Restricted() {
			return &u, true
		}
	}
	return &u, false
}
