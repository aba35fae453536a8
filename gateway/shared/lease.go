package shared

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicegw/sluice/gateway/budget"
)

// Leases (with [Options.Leased]): instead of a script per request, a
// replica takes a slice of every budget and rate limit it serves from
// Redis, decides requests on it in memory, and a single background syncer
// settles what it spent, tops the slice up and gives back what it does not
// use, in one pipeline every [Options.SyncInterval] (or at once when a
// slice falls below its low-water mark). The same pipeline carries the
// write-behind queue: settlements of exact reservations, pins, cached
// answers (with their keys for every replica's cache-key filter) and exact
// departures, and reads the keys the other replicas stored.
const (
	// leaseSeconds sizes a lease: about this many seconds of the replica's
	// own recent rate, at least twice its largest single reservation.
	leaseSeconds = 2.0
	// leaseIdle: a lease unused this long goes back to Redis.
	leaseIdle = 5 * time.Second
	// leaseRenew: a held lease's expiry is pushed on at least this often
	// (and so an idle replica hears within it that a budget went exact).
	leaseRenew = 500 * time.Millisecond
	// pinFresh is how long a pin read from (or written to) Redis is served
	// from the replica's memory without reading it again.
	pinFresh = 2 * time.Second
	// pinMax bounds the local pin cache (it is emptied past it).
	pinMax = 100_000
)

// LeaseStats is what a replica's leases did, for tests and /readyz.
type LeaseStats struct {
	// Local counts decisions (a budget reservation or a rate limit's check)
	// served from a lease without a round trip; Exact those sent to Redis.
	Local int64 `json:"local"`
	Exact int64 `json:"exact"`
	// MaxBudget is the largest budget lease (USD) this replica held,
	// MaxTokens the largest rpm or tpm lease (requests or tokens), MaxSlots
	// the largest max_parallel lease: the L of the overrun bound
	// (docs/scaling.md).
	MaxBudget float64 `json:"max_budget_usd"`
	MaxTokens int64   `json:"max_tokens"`
	MaxSlots  int     `json:"max_slots"`
	// Syncs counts the syncer's pipelines.
	Syncs int64 `json:"syncs"`
}

// leases is one replica's leased capacity and its write-behind queue.
type leases struct {
	c     *Client
	ttl   time.Duration
	every time.Duration

	mu      sync.Mutex
	budgets map[scopeMonth]*budgetLease
	rates   map[string]*rateLease
	pars    map[string]*parLease
	taken   map[string]uint64      // request id → the checks its admission took from leases
	spend   map[scopeMonth]float64 // leased holds' spend on scopes without a lease of their own
	queue   []queued
	caches  []cacheWrite
	sighted []uint64 // keys this replica sighted first, for the others
	stats   LeaseStats

	// The cache's total after the last batch, and when it was last kept
	// within its bound (syncer only).
	cacheSum   *redis.IntCmd
	cacheTotal int64
	evicted    time.Time

	wake  chan struct{} // a write to land now
	lwake chan struct{} // a lease below its low-water mark
	stop  chan struct{}
	done  chan struct{}
}

// queued is one write-behind operation: fill adds it to a pipeline, fail
// runs when Redis did not take it.
type queued struct {
	fill func(ctx context.Context, p redis.Pipeliner)
	fail func()
}

type cacheWrite struct {
	key   string
	val   []byte
	ttl   time.Duration
	max   int64
	queue time.Time
}

// budgetLease is this replica's lease on one budget. free = lease −
// pending − inflight is what it may still reserve without Redis.
type budgetLease struct {
	limit    float64
	lease    float64 // held in Redis for this replica, as far as it knows
	pending  float64 // spent of it, not yet settled in Redis
	inflight float64 // reserved by requests in flight
	exact    bool    // Redis said too little remains: reserve exactly
	demand   float64 // reserved (or asked for) since the rate was last measured
	rate     float64 // USD a second, smoothed
	maxw     float64 // the largest single reservation
	last     time.Time
	synced   time.Time
	rated    time.Time
}

func (b *budgetLease) free() float64 { return b.lease - b.pending - b.inflight }

func (b *budgetLease) size() float64 { return math.Max(leaseSeconds*b.rate, 2*b.maxw) }

// rateLease is this replica's tokens of an rpm or tpm limit.
type rateLease struct {
	limit  int
	tokens int64 // leased, not yet used (negative: used beyond the lease)
	exact  bool
	demand int64
	rate   float64 // tokens a second, smoothed
	maxc   int64
	last   time.Time
	synced time.Time
	rated  time.Time
}

func (r *rateLease) size() int64 {
	return max(int64(math.Ceil(leaseSeconds*r.rate)), 2*r.maxc)
}

// parLease is this replica's slots of a max_parallel limit.
type parLease struct {
	limit  int
	slots  int // leased
	used   int // held by requests in flight
	peak   int // the most used since the last sync
	exact  bool
	last   time.Time
	synced time.Time
}

func (p *parLease) size() int { return max(2, p.peak) }

func newLeases(c *Client, ttl, every time.Duration) *leases {
	return &leases{c: c, ttl: ttl, every: every,
		budgets: map[scopeMonth]*budgetLease{}, rates: map[string]*rateLease{}, pars: map[string]*parLease{},
		taken: map[string]uint64{}, spend: map[scopeMonth]float64{},
		wake: make(chan struct{}, 1), lwake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// poke wakes the syncer for a lease below its low-water mark (or one that
// could not serve a request): its leases are synced at once.
func (l *leases) poke() {
	select {
	case l.lwake <- struct{}{}:
	default:
	}
}

// flushSoon wakes the syncer for a write that should land now (an exact
// reservation's release): the queue goes at once, the leases wait for
// their tick.
func (l *leases) flushSoon() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Stats returns what the leases did so far.
func (l *leases) Stats() LeaseStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// reserve reserves ask.Want on every limit's lease, or on none (nil: the
// caller reserves exactly). Demand is recorded either way, so that the
// leases grow to the replica's rate.
func (l *leases) reserve(id string, ask BudgetAsk) *Hold {
	want := ask.Want
	if len(ask.Limits) == 0 || want <= 0 || math.IsInf(want, 0) || math.IsNaN(want) {
		return nil
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := true
	ls := make([]*budgetLease, len(ask.Limits))
	for i, lim := range ask.Limits {
		sm := scopeMonth{lim.Scope, ask.Month}
		b := l.budgets[sm]
		if b == nil {
			b = &budgetLease{rated: now, synced: now}
			l.budgets[sm] = b
		}
		b.limit, b.last = lim.USD, now
		b.demand += want
		b.maxw = math.Max(b.maxw, want)
		ls[i] = b
		if b.exact || b.free() < want {
			ok = false
		}
	}
	if !ok {
		l.stats.Exact++
		l.poke()
		return nil
	}
	h := &Hold{id: id, month: ask.Month, grant: want, leased: true}
	for i, b := range ls {
		b.inflight += want
		h.scopes = append(h.scopes, ask.Limits[i].Scope)
		if b.free() < b.size()/2 {
			l.poke()
		}
	}
	l.stats.Local++
	return h
}

// settle charges a leased hold's cost (on its leases, and to be added on
// the other scopes) and frees its reservation.
func (l *leases) settle(h *Hold, cost float64, scopes []budget.Scope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range h.scopes {
		if b := l.budgets[scopeMonth{s, h.month}]; b != nil {
			b.inflight -= h.grant
			if cost > 0 {
				b.pending += cost
			}
		}
	}
	if cost <= 0 {
		return
	}
	for _, s := range scopes {
		if !containsScope(h.scopes, s) {
			l.spend[scopeMonth{s, h.month}] += cost
		}
	}
}

func containsScope(ss []budget.Scope, s budget.Scope) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// free is what this replica's leases on the limits leave it to reserve
// without Redis, per limit (0 without a lease).
func (l *leases) free(month string, s budget.Scope) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.budgets[scopeMonth{s, month}]; b != nil {
		return math.Max(b.free(), 0)
	}
	return 0
}

// admitChecks admits the request on every check a lease covers and
// returns those checks (a bit per index); the others are decided exactly.
func (l *leases) admitChecks(id string, checks []Check, key func(Check) string) uint64 {
	if len(checks) == 0 || len(checks) > 64 {
		return 0
	}
	now := time.Now()
	var mask uint64
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ch := range checks {
		if ch.Limit <= 0 {
			continue
		}
		k := key(ch)
		if ch.Kind == Parallel {
			p := l.pars[k]
			if p == nil {
				p = &parLease{synced: now}
				l.pars[k] = p
			}
			p.limit, p.last = ch.Limit, now
			if !p.exact && p.used < p.slots {
				p.used++
				p.peak = max(p.peak, p.used)
				mask |= 1 << i
				if p.slots-p.used < p.size()/2 {
					l.poke()
				}
			} else {
				p.peak = max(p.peak, p.used+1)
				l.poke()
			}
			continue
		}
		r := l.rates[k]
		if r == nil {
			r = &rateLease{synced: now, rated: now}
			l.rates[k] = r
		}
		cost := min(max(ch.Cost, 1), int64(ch.Limit))
		r.limit, r.last = ch.Limit, now
		r.demand += cost
		r.maxc = max(r.maxc, cost)
		if !r.exact && r.tokens >= cost {
			r.tokens -= cost
			mask |= 1 << i
			if r.tokens < r.size()/2 {
				l.poke()
			}
		} else {
			l.poke()
		}
	}
	for i := range checks {
		if mask&(1<<i) != 0 {
			l.stats.Local++
		} else {
			l.stats.Exact++
		}
	}
	if mask != 0 {
		l.taken[id] = mask
	}
	return mask
}

// depart gives back what a request took from leases (its slots; its token
// charge corrected by delta) and returns which checks it took from them.
func (l *leases) depart(id string, checks []Check, delta int64, key func(Check) string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	mask, ok := l.taken[id]
	if !ok {
		return 0
	}
	delete(l.taken, id)
	for i, ch := range checks {
		if mask&(1<<i) == 0 {
			continue
		}
		switch ch.Kind {
		case Parallel:
			if p := l.pars[key(ch)]; p != nil && p.used > 0 {
				p.used--
			}
		case TPM:
			if r := l.rates[key(ch)]; r != nil {
				r.tokens -= delta
			}
		}
	}
	return mask
}

// undo gives back what admitChecks took for a request that another check
// refused.
func (l *leases) undo(id string, checks []Check, key func(Check) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mask := l.taken[id]
	delete(l.taken, id)
	for i, ch := range checks {
		if mask&(1<<i) == 0 {
			continue
		}
		if ch.Kind == Parallel {
			if p := l.pars[key(ch)]; p != nil && p.used > 0 {
				p.used--
			}
			continue
		}
		if r := l.rates[key(ch)]; r != nil {
			r.tokens += min(max(ch.Cost, 1), int64(ch.Limit))
		}
	}
}

// slots is the max_parallel slots this replica leases on a limit.
func (l *leases) slots(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pars[key]; p != nil {
		return p.slots
	}
	return 0
}

// release frees a leased hold whose attempt cost nothing.
func (l *leases) release(h *Hold) { l.settle(h, 0, nil) }

// enqueue adds a write to the next pipeline; soon wakes the syncer now.
func (l *leases) enqueue(q queued, soon bool) {
	l.mu.Lock()
	l.queue = append(l.queue, q)
	l.mu.Unlock()
	if soon {
		l.flushSoon()
	}
}

// sightingsMax bounds the keys sighted first that wait for one sync (past
// it they are not published: the others see them one sighting later).
const sightingsMax = 1 << 16

// enqueueSighted queues a key sighted first here, for the next batch.
func (l *leases) enqueueSighted(fp uint64) {
	l.mu.Lock()
	if len(l.sighted) < sightingsMax {
		l.sighted = append(l.sighted, fp)
	}
	l.mu.Unlock()
}

// enqueueCache queues an answer for the cache: answers go at the next
// tick, many in one script call.
func (l *leases) enqueueCache(w cacheWrite) {
	if w.max <= 0 || w.ttl <= 0 {
		return
	}
	l.mu.Lock()
	l.caches = append(l.caches, w)
	l.mu.Unlock()
}

// run is the syncer: a pipeline every interval, or at once when poked.
func (l *leases) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		leases := true
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.lwake:
		case <-l.wake:
			leases = false
		}
		l.sync(leases, false)
	}
}

// close stops the syncer and gives every lease back, with what is queued.
func (l *leases) close() {
	close(l.stop)
	<-l.done
	l.sync(true, true)
}

// leaseOp is one lease's part of a sync: its command, and what to do with
// the answer or without one.
type leaseOp struct {
	cmd  *redis.Cmd
	fill func(ctx context.Context, p redis.Pipeliner) *redis.Cmd
	done func(res []any) // under l.mu
	fail func()          // under l.mu
}

// sync sends one pipeline: the write-behind queue and, with leases, every
// lease's settlement, top-up or return that is due. final returns every
// lease.
func (l *leases) sync(leases, final bool) {
	c := l.c
	if !c.up.Load() {
		// The queue's writes fail over to local state; the leases keep
		// serving what they hold and sync once Redis is back.
		l.mu.Lock()
		q := l.queue
		l.queue, l.caches, l.sighted = nil, nil, nil
		l.mu.Unlock()
		for _, w := range q {
			if w.fail != nil {
				w.fail()
			}
		}
		return
	}
	now := time.Now()
	l.mu.Lock()
	q, caches, sighted := l.queue, l.caches, l.sighted
	l.queue, l.caches, l.sighted = nil, nil, nil
	var ops []*leaseOp
	if leases {
		ops = l.plan(now, final)
	} else {
		caches, l.caches = nil, caches // they wait for the tick
		sighted, l.sighted = nil, sighted
	}
	l.mu.Unlock()
	f := c.filter.Load()
	if len(q) == 0 && len(caches) == 0 && len(sighted) == 0 && len(ops) == 0 && f == nil {
		return
	}
	ctx, cancel := c.ctx(context.Background())
	defer cancel()
	ms := now.UnixMilli()
	evict := len(caches) > 0 && now.Sub(l.evicted) > time.Second
	if evict {
		l.evicted = now
	}
	var fs *filterSync
	_, err := c.pipe(ctx, func(p redis.Pipeliner) {
		for _, w := range q {
			w.fill(ctx, p)
		}
		c.fillCaches(ctx, p, caches, sighted, ms, evict)
		if f != nil {
			fs = c.fillFilter(ctx, p, f, now)
		}
		for _, op := range ops {
			op.cmd = op.fill(ctx, p)
		}
	})
	l.mu.Lock()
	l.stats.Syncs++
	if isDown(err) {
		for _, op := range ops {
			op.fail()
		}
		l.mu.Unlock()
		c.failed("sync", err)
		for _, w := range q {
			if w.fail != nil {
				w.fail()
			}
		}
		return
	}
	if l.cacheSum != nil {
		l.cacheTotal, l.cacheSum = l.cacheSum.Val(), nil
	}
	if fs != nil {
		c.applyFilter(f, fs, now)
	}
	for _, op := range ops {
		res, err := op.cmd.Slice()
		if err != nil {
			op.fail()
			continue
		}
		op.done(res)
	}
	l.mu.Unlock()
}

// fillCaches adds the queued answers with plain commands (one SET each,
// one ZADD and one INCRBY for the batch) and, when evict is set, the
// script that keeps the cache within its bytes; the batch's keys and the
// keys sighted first since the last batch are published in one XADD.
func (c *Client) fillCaches(ctx context.Context, p redis.Pipeliner, caches []cacheWrite, sighted []uint64, now int64, evict bool) {
	if len(caches) == 0 {
		if len(sighted) > 0 {
			c.publishKeys(ctx, p, nil, sighted, 0, 0, now)
		}
		return
	}
	// cx and cb, not the ci, cs and ct of the per-answer script before
	// them: an upgraded fleet starts the books afresh (the old entries
	// expire with their ttl) instead of counting bytes it cannot evict.
	idx, total := c.key("cx"), c.key("cb")
	members := make([]redis.Z, 0, len(caches))
	var add int64
	ttl, bound := caches[0].ttl, caches[0].max
	for _, w := range caches {
		k := c.key("c", w.key)
		p.Set(ctx, k, w.val, w.ttl)
		members = append(members, redis.Z{Score: float64(now), Member: k + "|" + strconv.Itoa(len(w.val))})
		add += int64(len(w.val))
		ttl, bound = min(ttl, w.ttl), min(bound, w.max)
	}
	p.ZAdd(ctx, idx, members...)
	sum := p.IncrBy(ctx, total, add)
	c.publishKeys(ctx, p, caches, sighted, ttl, bound, now)
	if evict || len(caches) > 0 && c.lz != nil && c.lz.cacheOver(bound) {
		cacheEvictScript.EvalSha(ctx, p, []string{idx, total}, ttl.Milliseconds(), bound, now)
	}
	if c.lz != nil {
		c.lz.cacheSum = sum
	}
}

// cacheOver reports whether the cache was past its bound after the last
// batch (syncer only).
func (l *leases) cacheOver(bound int64) bool { return l.cacheTotal > bound }

// plan decides every lease's sync and applies locally what it gives back
// before Redis takes it (so the replica never spends what it returns).
// l.mu is held.
func (l *leases) plan(now time.Time, final bool) []*leaseOp {
	c := l.c
	n := max(c.replicas.Load(), 1)
	var ops []*leaseOp
	ms := now.UnixMilli()
	ttl := l.ttl.Milliseconds()
	for sm, usd := range l.spend {
		delete(l.spend, sm)
		keys := c.budgetKeys(sm.month, []budget.Scope{sm.scope})
		cost := strconv.FormatFloat(usd, 'g', -1, 64)
		ops = append(ops, &leaseOp{
			fill: func(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
				return settleScript.EvalSha(ctx, p, keys, "", cost)
			},
			done: func([]any) {},
			fail: func() { l.spend[sm] += usd },
		})
	}
	for sm, b := range l.budgets {
		if dt := now.Sub(b.rated).Seconds(); dt >= 0.05 {
			b.rate = 0.5*b.rate + 0.5*b.demand/dt
			b.demand, b.rated = 0, now
		}
		idle := now.Sub(b.last) > leaseIdle
		if idle && b.lease == 0 && b.pending == 0 && b.inflight == 0 {
			delete(l.budgets, sm)
			continue
		}
		size, free := b.size(), b.free()
		d := b.pending
		var ret, ask float64
		switch {
		case final || idle:
			ret = math.Max(free, 0)
		case b.exact:
			ret, ask = math.Max(free, 0), size
		case free > 2*size:
			ret = free - size
		case free < size:
			ask = size - free
		}
		if d == 0 && ret == 0 && ask == 0 && (b.lease == 0 || now.Sub(b.synced) < leaseRenew) {
			continue
		}
		if b.exact && d == 0 && ret == 0 && now.Sub(b.synced) < 10*l.every {
			// Exact mode: ask again now and then, not every tick.
			continue
		}
		b.lease -= d + ret
		b.pending -= d
		b.synced = now
		keys := c.budgetKeys(sm.month, []budget.Scope{sm.scope})
		args := []any{ms, c.id, strconv.FormatFloat(b.limit, 'g', -1, 64), strconv.FormatFloat(d, 'g', -1, 64),
			strconv.FormatFloat(ret, 'g', -1, 64), strconv.FormatFloat(ask, 'g', -1, 64), n,
			strconv.FormatFloat(b.maxw, 'g', -1, 64), ttl}
		ops = append(ops, &leaseOp{
			fill: func(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
				return budgetLeaseScript.EvalSha(ctx, p, keys, args...)
			},
			done: func(res []any) {
				if len(res) < 3 {
					return
				}
				b.lease = parseFloat(res[0])
				b.exact = res[1] == int64(1)
				c.outage.remember(sm.scope, sm.month, parseFloat(res[2]))
				l.stats.MaxBudget = math.Max(l.stats.MaxBudget, b.lease)
			},
			fail: func() { b.lease += d + ret; b.pending += d },
		})
	}
	for k, r := range l.rates {
		if dt := now.Sub(r.rated).Seconds(); dt >= 0.05 {
			r.rate = 0.5*r.rate + 0.5*float64(r.demand)/dt
			r.demand, r.rated = 0, now
		}
		idle := now.Sub(r.last) > leaseIdle
		if idle && r.tokens == 0 {
			delete(l.rates, k)
			continue
		}
		size := r.size()
		var ret, ask int64
		switch {
		case final || idle:
			ret = r.tokens
		case r.exact:
			ret, ask = r.tokens, size
		case r.tokens > 2*size:
			ret = r.tokens - size
		case r.tokens < size:
			if r.tokens < 0 {
				ret = r.tokens
			}
			ask = size - max(r.tokens, 0)
		}
		if ret == 0 && ask == 0 {
			continue
		}
		if r.exact && ret == 0 && now.Sub(r.synced) < 10*l.every {
			continue
		}
		r.tokens -= ret
		r.synced = now
		key := k
		args := []any{ms, r.limit, ret, ask, n, r.maxc}
		ops = append(ops, &leaseOp{
			fill: func(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
				return rateLeaseScript.EvalSha(ctx, p, []string{key}, args...)
			},
			done: func(res []any) {
				if len(res) < 2 {
					return
				}
				g, _ := res[0].(int64)
				r.tokens += g
				r.exact = res[1] == int64(1)
				l.stats.MaxTokens = max(l.stats.MaxTokens, r.tokens)
			},
			fail: func() { r.tokens += ret },
		})
	}
	for k, p := range l.pars {
		idle := now.Sub(p.last) > leaseIdle
		if idle && p.slots == 0 && p.used == 0 {
			delete(l.pars, k)
			continue
		}
		size, free := p.size(), p.slots-p.used
		p.peak = p.used
		var ret, ask int
		switch {
		case final || idle:
			ret = max(free, 0)
		case p.exact:
			ret, ask = max(free, 0), size
		case free > 2*size:
			ret = free - size
		case free < size:
			ask = size - free
		}
		if ret == 0 && ask == 0 && (p.slots == 0 || now.Sub(p.synced) < leaseRenew) {
			continue
		}
		if p.exact && ret == 0 && now.Sub(p.synced) < 10*l.every {
			continue
		}
		p.slots -= ret
		p.synced = now
		key := k
		args := []any{ms, c.id, p.limit, ret, ask, n, ttl}
		ops = append(ops, &leaseOp{
			fill: func(ctx context.Context, pp redis.Pipeliner) *redis.Cmd {
				return parallelLeaseScript.EvalSha(ctx, pp, []string{key}, args...)
			},
			done: func(res []any) {
				if len(res) < 2 {
					return
				}
				own, _ := res[0].(int64)
				p.slots = int(own)
				p.exact = res[1] == int64(1)
				l.stats.MaxSlots = max(l.stats.MaxSlots, p.slots)
			},
			fail: func() { p.slots += ret },
		})
	}
	return ops
}
