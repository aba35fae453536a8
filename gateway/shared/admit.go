package shared

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicegw/sluice/gateway/budget"
)

// Admission is everything a request asks of the shared state before its
// first attempt: its rate limits, its cached answer, its session's pin and
// its first budget reservation. [Client.Admit] sends it all in one round
// trip.
type Admission struct {
	// ID is the request id: it names the parallel slots and the reservation.
	ID string
	// Checks are the rate limits (none: no limit applies).
	Checks []Check
	// Lease bounds how long a parallel slot is held should the replica
	// never release it.
	Lease time.Duration
	// CacheKey is the response cache's key ("": no lookup).
	CacheKey string
	// PinKey is the session's key ("": no session).
	PinKey string
	// Budget is the first attempt's reservation (nil: none), made only when
	// every rate limit admits.
	Budget *BudgetAsk
}

// Admitted is what [Client.Admit] found.
type Admitted struct {
	// Refused is the index of the check that refused the request, -1 when
	// it was admitted; RetryAfter says when it would pass.
	Refused    int
	RetryAfter time.Duration
	// Cache is the cached answer (nil: a miss, or not asked).
	Cache []byte
	// Pin is the session's pin (nil: none, or not asked).
	Pin []byte
	// Hold is the first attempt's reservation (nil when not asked, or the
	// request was refused).
	Hold *Hold
	// Local: Redis did not answer and local state did (the cache and the
	// pin were not looked up: the caller looks in its own).
	Local bool
}

// Admit runs the admission in one round trip: one script checks every rate
// limit and, when all admit, commits them and reserves the budget; the
// cached answer and the pin are read in the same pipeline. When Redis does
// not answer, rate limits and the reservation are decided locally on this
// replica's share and Local is set.
//
// With [Options.Leased], checks and the reservation that this replica's
// leases cover are decided in memory, and a pin read lately comes from its
// cache: a request covered by leases whose pin is cached reads only the
// cached answer, and that only when the replica's cache-key filter says it
// may exist (no round trip at all otherwise: cachefilter.go).
func (c *Client) Admit(ctx context.Context, a *Admission) Admitted {
	if c.lz != nil {
		return c.admitLeased(ctx, a)
	}
	if !c.up.Load() {
		c.fallback("admit")
		return c.admitLocal(a)
	}
	ex, err := c.exact(ctx, a)
	if isDown(err) {
		c.failed("admit", err)
		return c.admitLocal(a)
	}
	out := Admitted{Refused: -1, Cache: ex.cache, Pin: ex.pin}
	if !ex.scripted {
		return out
	}
	if ex.refused >= 0 {
		out.Refused, out.RetryAfter = ex.refused, ex.retryAfter
		return out
	}
	if a.Budget != nil {
		out.Hold = c.holdFrom(a.ID, *a.Budget, ex.res)
	}
	return out
}

// exactAdmission is what one exact round trip read: the cached answer and
// the pin (nil for a miss or not asked), and the admission script's verdict
// when it ran (scripted): refused is the index of the check that refused
// (-1 when all admitted), res the script's result for the reservation.
type exactAdmission struct {
	cache, pin []byte
	pinRead    bool
	scripted   bool
	refused    int
	retryAfter time.Duration
	res        []any
}

// exact runs the exact admission in one pipeline: the admission script
// when a's checks or budget ask for it, and the reads of the cached answer
// and the pin. err is the pipeline's (isDown tells an outage).
func (c *Client) exact(ctx context.Context, a *Admission) (exactAdmission, error) {
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	var script *redis.Cmd
	var cache, pin *redis.StringCmd
	ex := exactAdmission{refused: -1, scripted: len(a.Checks) > 0 || a.Budget != nil}
	_, err := c.pipe(rctx, func(p redis.Pipeliner) {
		if ex.scripted {
			keys, args := c.admitArgs(a)
			script = admitScript.EvalSha(rctx, p, keys, args...)
		}
		if a.CacheKey != "" {
			cache = p.Get(rctx, c.key("c", a.CacheKey))
		}
		if a.PinKey != "" {
			pin = p.Get(rctx, c.key("p", a.PinKey))
		}
	})
	if isDown(err) {
		return ex, err
	}
	if cache != nil {
		if b, err := cache.Bytes(); err == nil {
			ex.cache = b
		}
	}
	if pin != nil {
		ex.pinRead = true
		if b, err := pin.Bytes(); err == nil {
			ex.pin = b
		}
	}
	if script == nil {
		ex.scripted = false
		return ex, nil
	}
	res, _ := script.Slice()
	if len(res) < 4 {
		ex.scripted = false
		return ex, nil
	}
	ex.res = res
	if ok, _ := res[0].(int64); ok == 0 {
		ms, _ := strconv.ParseInt(res[1].(string), 10, 64)
		idx, _ := res[2].(int64)
		ex.refused, ex.retryAfter = int(idx)-1, time.Duration(ms)*time.Millisecond
	}
	return ex, nil
}

// checkKey is a rate limit's key.
func (c *Client) checkKey(ch Check) string { return c.key("rl", ch.Scope, ch.Kind.String()) }

// admitLeased is Admit on leases: what they cover is decided here, the rest
// (and the reads that must go to Redis) in one pipeline.
func (c *Client) admitLeased(ctx context.Context, a *Admission) Admitted {
	now := time.Now()
	mask := c.lz.admitChecks(a.ID, a.Checks, c.checkKey)
	var hold *Hold
	if a.Budget != nil {
		hold = c.lz.reserve(a.ID, *a.Budget)
	}
	// What the leases did not cover goes to Redis, as without them.
	rest := *a
	rest.Checks, rest.Budget = nil, nil
	var index []int
	for i, ch := range a.Checks {
		if mask&(1<<i) == 0 {
			rest.Checks = append(rest.Checks, ch)
			index = append(index, i)
		}
	}
	if hold == nil {
		rest.Budget = a.Budget
	}
	var pinVal []byte
	pinHit := false
	if a.PinKey != "" {
		pinVal, pinHit = c.pins.get(a.PinKey, now)
		if pinHit {
			rest.PinKey = ""
		}
	}
	refuse := func(i int, after time.Duration) Admitted {
		c.lz.undo(a.ID, a.Checks, c.checkKey)
		if hold != nil {
			c.lz.release(hold)
		}
		return Admitted{Refused: index[i], RetryAfter: after}
	}
	if rest.CacheKey != "" && c.up.Load() {
		if f := c.keyFilter(); !f.mayHave(rest.CacheKey) {
			rest.CacheKey = "" // surely a miss: nothing to read
		}
	}
	scripted := len(rest.Checks) > 0 || rest.Budget != nil
	if !scripted && rest.CacheKey == "" && rest.PinKey == "" {
		return Admitted{Refused: -1, Hold: hold, Pin: pinVal}
	}
	local := func() Admitted {
		// A leased replica's local share of max_parallel counts the slots
		// it leases: in flight on it stays within ⌈limit / replicas⌉.
		n := max(c.replicas.Load(), 1)
		for i, ch := range rest.Checks {
			if ch.Kind != Parallel {
				continue
			}
			share := (int64(ch.Limit) + n - 1) / n
			left := share - int64(c.lz.slots(c.checkKey(ch)))
			if left <= 0 {
				return refuse(i, time.Second)
			}
			rest.Checks[i].Limit = int(left * n)
		}
		out := c.admitLocal(&rest)
		if out.Refused >= 0 {
			return refuse(out.Refused, out.RetryAfter)
		}
		if hold != nil {
			out.Hold = hold
		}
		return out
	}
	if !c.up.Load() {
		c.fallback("admit")
		return local()
	}
	if !scripted {
		// The common case on leases: only reads, coalesced with the other
		// requests' in flight.
		return c.readLeased(ctx, a, &rest, hold, pinVal, now, local)
	}
	ex, err := c.exact(ctx, &rest)
	if isDown(err) {
		c.failed("admit", err)
		return local()
	}
	out := Admitted{Refused: -1, Hold: hold, Pin: pinVal, Cache: ex.cache}
	if ex.pinRead {
		out.Pin = ex.pin
		c.pins.seen(a.PinKey, ex.pin, now)
	}
	if !ex.scripted {
		return out
	}
	if ex.refused >= 0 {
		return refuse(ex.refused, ex.retryAfter)
	}
	if rest.Budget != nil {
		out.Hold = c.holdFrom(a.ID, *rest.Budget, ex.res)
		if out.Hold.starved {
			// Leases elsewhere hold what it lacked: the caller reserves
			// again (Reserve waits for their return).
			c.Release(ctx, out.Hold)
			out.Hold = nil
		}
	}
	return out
}

// readLeased reads the cached answer and the pin (when not cached here)
// with the reader's batch.
func (c *Client) readLeased(ctx context.Context, a, rest *Admission, hold *Hold, pinVal []byte, now time.Time, local func() Admitted) Admitted {
	keys := make([]string, 0, 2)
	if rest.CacheKey != "" {
		keys = append(keys, c.key("c", rest.CacheKey))
	}
	if rest.PinKey != "" {
		keys = append(keys, c.key("p", rest.PinKey))
	}
	vals, err := c.reads.get(ctx, keys)
	if isDown(err) {
		c.failed("admit", err)
		return local()
	}
	out := Admitted{Refused: -1, Hold: hold, Pin: pinVal}
	i := 0
	if rest.CacheKey != "" {
		if s, ok := vals[i].(string); ok {
			out.Cache = []byte(s)
		}
		i++
	}
	if rest.PinKey != "" {
		var b []byte
		if s, ok := vals[i].(string); ok {
			b = []byte(s)
		}
		out.Pin = b
		c.pins.seen(a.PinKey, b, now)
	}
	return out
}

// admitArgs lays out the admit script's keys and arguments.
func (c *Client) admitArgs(a *Admission) ([]string, []any) {
	keys := make([]string, 0, len(a.Checks)+4)
	m, want := 0, "0"
	if a.Budget != nil {
		m, want = len(a.Budget.Limits), wantArg(a.Budget.Want)
	}
	lease := a.Lease
	if a.Budget != nil && a.Budget.Lease > lease {
		lease = a.Budget.Lease
	}
	args := []any{time.Now().UnixMilli(), len(a.Checks), m, a.ID, lease.Milliseconds(), want}
	for _, ch := range a.Checks {
		keys = append(keys, c.key("rl", ch.Scope, ch.Kind.String()))
		kind := "rate"
		if ch.Kind == Parallel {
			kind = "parallel"
		}
		args = append(args, kind, ch.Limit, ch.Cost)
	}
	if a.Budget != nil {
		keys, args = c.budgetArgs(keys, args, a.Budget)
	}
	return keys, args
}

// admitLocal decides an admission without Redis.
func (c *Client) admitLocal(a *Admission) Admitted {
	out := Admitted{Refused: -1, Local: true}
	if len(a.Checks) > 0 {
		i, after := c.limiter.Admit(a.ID, a.Checks, c.replicas.Load(), a.Lease)
		if i >= 0 {
			out.Refused, out.RetryAfter = i, after
			return out
		}
	}
	if a.Budget != nil {
		out.Hold = c.outage.reserve(a.ID, *a.Budget)
	}
	return out
}

// Writes are what a request leaves in the shared state once answered:
// its budget charge, its session's pin and its answer for the cache. They
// go in one round trip.
type Writes struct {
	// Hold is the answering attempt's reservation (nil: none); Cost is
	// charged to Scopes and the hold released in one step.
	Hold   *Hold
	Month  string
	Cost   float64
	Scopes []budget.Scope
	// PinKey and Pin store the session's pin for PinTTL.
	PinKey string
	Pin    []byte
	PinTTL time.Duration
	// CacheKey and Cache store the answer for CacheTTL, the cache kept
	// within CacheMaxBytes.
	CacheKey      string
	Cache         []byte
	CacheTTL      time.Duration
	CacheMaxBytes int64
	// Depart, when set, gives back what admission held in the same round
	// trip (the request is answered; nothing is left to wait for).
	Depart *Departure
	// HolderID and Holder record, for HolderTTL, where a stored Responses
	// API response is (see [Client.Holder]). Written before the answer
	// goes out, on leases too, so that a continuation on any replica finds
	// it.
	HolderID  string
	Holder    string
	HolderTTL time.Duration
}

// Write applies the writes in one round trip. It reports false when Redis
// did not take them (the budget charge is then kept to be pushed later;
// the caller keeps the pin and the answer locally).
//
// With [Options.Leased] nothing waits: a leased hold is settled on its
// lease, and the rest joins the next batched pipeline (true: queued while
// Redis answers).
func (c *Client) Write(ctx context.Context, w *Writes) bool {
	if c.lz != nil {
		return c.writeBehind(w)
	}
	charge := w.Cost > 0 || w.Hold != nil
	if w.Hold != nil {
		done := false
		w.Hold.once.Do(func() { done = true })
		if !done {
			charge = false
		} else if w.Hold.local {
			c.outage.add(w.Month, w.Cost, w.Scopes)
			w.Hold.release()
			charge = false
		}
	}
	if !c.up.Load() {
		c.fallback("write")
		if charge {
			c.outage.add(w.Month, w.Cost, w.Scopes)
		}
		if w.Depart != nil {
			c.limiter.Depart(w.Depart.ID, w.Depart.Checks, w.Depart.Delta)
		}
		return false
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	now := time.Now().UnixMilli()
	_, err := c.pipe(rctx, func(p redis.Pipeliner) {
		if charge {
			id, scopes := "", w.Scopes
			if w.Hold != nil {
				id, scopes = w.Hold.id, union(w.Hold.scopes, w.Scopes)
			}
			settleScript.EvalSha(rctx, p, c.budgetKeys(w.Month, scopes), id, strconv.FormatFloat(w.Cost, 'g', -1, 64))
		}
		if w.PinKey != "" {
			p.Set(rctx, c.key("p", w.PinKey), w.Pin, w.PinTTL)
		}
		if w.HolderID != "" {
			p.Set(rctx, c.key("resp", w.HolderID), w.Holder, w.HolderTTL)
		}
		if w.CacheKey != "" {
			c.fillCaches(rctx, p, []cacheWrite{{key: w.CacheKey, val: w.Cache, ttl: w.CacheTTL, max: w.CacheMaxBytes}}, nil, now, true)
		}
		if d := w.Depart; d != nil && !d.Local {
			if keys, args := c.departArgs(d); len(keys) > 0 {
				departScript.EvalSha(rctx, p, keys, args...)
			}
		}
	})
	if w.Depart != nil && (w.Depart.Local || isDown(err)) {
		c.limiter.Depart(w.Depart.ID, w.Depart.Checks, w.Depart.Delta)
	}
	if isDown(err) {
		c.failed("write", err)
		if charge {
			c.outage.add(w.Month, w.Cost, w.Scopes)
		}
		return false
	}
	return true
}

// writeBehind is Write with leases: settled locally or queued.
func (c *Client) writeBehind(w *Writes) bool {
	up := c.up.Load()
	if !up {
		c.fallback("write")
	}
	switch {
	case w.Hold != nil:
		c.settleHold(context.Background(), w.Hold, w.Cost, w.Scopes)
	case w.Cost > 0:
		if up {
			keys, usd, month, cost, scopes := c.budgetKeys(w.Month, w.Scopes), strconv.FormatFloat(w.Cost, 'g', -1, 64), w.Month, w.Cost, w.Scopes
			c.lz.enqueue(queued{
				fill: func(ctx context.Context, p redis.Pipeliner) { settleScript.EvalSha(ctx, p, keys, "", usd) },
				fail: func() { c.outage.add(month, cost, scopes) },
			}, false)
		} else {
			c.outage.add(w.Month, w.Cost, w.Scopes)
		}
	}
	if w.Depart != nil {
		c.Depart(*w.Depart)
	}
	if !up {
		return false
	}
	now := time.Now()
	if w.CacheKey != "" {
		c.lz.enqueueCache(cacheWrite{key: w.CacheKey, val: w.Cache, ttl: w.CacheTTL, max: w.CacheMaxBytes})
	}
	if w.HolderID != "" {
		// Like a new pin, before the answer goes out: the client's next
		// request may continue the response on another replica at once.
		c.PutHolder(context.Background(), w.HolderID, w.Holder, w.HolderTTL)
	}
	if w.PinKey == "" {
		return true
	}
	key, val, ttl := c.key("p", w.PinKey), w.Pin, w.PinTTL
	switch changed, stale := c.pins.put(w.PinKey, w.Pin, w.PinTTL, now); {
	case changed:
		// A new pin is written before the answer goes out, so that the
		// session's next turn finds it on any replica: a round trip on a
		// session's first turn (or a switch), none on the turns that keep
		// their pin.
		ctx, cancel := c.ctx(context.Background())
		defer cancel()
		if err := c.rdb.Set(ctx, key, val, ttl).Err(); err != nil {
			c.pins.forget(w.PinKey)
			c.failed("write", err)
			return false
		}
	case stale:
		c.lz.enqueue(queued{fill: func(ctx context.Context, p redis.Pipeliner) { p.Set(ctx, key, val, ttl) }}, false)
	}
	return true
}

// Departure is what a request gives back when it ends: its parallel slots,
// and the tokens charged at admission that its answer did not use (or
// used beyond them).
type Departure struct {
	ID     string
	Checks []Check
	// Delta is used tokens minus the tokens charged at admission.
	Delta int64
	// Local: the admission was decided locally (Redis was down).
	Local bool
}

// Depart gives back what the request held, in the background: the caller
// does not wait for it.
func (c *Client) Depart(d Departure) {
	if c.lz != nil {
		mask := c.lz.depart(d.ID, d.Checks, d.Delta, c.checkKey)
		if mask != 0 {
			var rest []Check
			for i, ch := range d.Checks {
				if mask&(1<<i) == 0 {
					rest = append(rest, ch)
				}
			}
			d.Checks = rest
		}
		if len(d.Checks) == 0 {
			return
		}
		if !d.Local && c.up.Load() {
			keys, args := c.departArgs(&d)
			if len(keys) > 0 {
				c.lz.enqueue(queued{fill: func(ctx context.Context, p redis.Pipeliner) { departScript.EvalSha(ctx, p, keys, args...) }}, false)
			}
			return
		}
	}
	if d.Local || !c.up.Load() {
		c.limiter.Depart(d.ID, d.Checks, d.Delta)
		return
	}
	keys, args := c.departArgs(&d)
	if len(keys) == 0 {
		return
	}
	go func() {
		ctx, cancel := c.ctx(context.Background())
		defer cancel()
		if err := departScript.Run(ctx, c.rdb, keys, args...).Err(); isDown(err) {
			c.failed("depart", err)
		}
	}()
}

// departArgs lays out the depart script's keys and arguments.
func (c *Client) departArgs(d *Departure) ([]string, []any) {
	var keys []string
	args := []any{d.ID, 0}
	np := 0
	for _, ch := range d.Checks {
		if ch.Kind == Parallel {
			keys = append(keys, c.key("rl", ch.Scope, ch.Kind.String()))
			np++
		}
	}
	args[1] = np
	if d.Delta != 0 {
		for _, ch := range d.Checks {
			if ch.Kind == TPM {
				keys = append(keys, c.key("rl", ch.Scope, ch.Kind.String()))
				args = append(args, ch.Limit, d.Delta)
			}
		}
	}
	return keys, args
}

// scripts are loaded into a Redis that lost them (a restart) before a
// pipeline retries.
var scripts = []*redis.Script{admitScript, settleScript, departScript, cacheEvictScript, healthScript,
	budgetLeaseScript, rateLeaseScript, parallelLeaseScript}

// pipe runs a pipeline; when a script is missing from the server's cache
// (NOSCRIPT: Redis restarted), it loads every script and runs it again.
func (c *Client) pipe(ctx context.Context, fill func(redis.Pipeliner)) ([]redis.Cmder, error) {
	run := func() ([]redis.Cmder, error) {
		return c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p); return nil })
	}
	cmds, err := run()
	if !noScript(cmds) {
		return cmds, pipeErr(cmds, err)
	}
	for _, s := range scripts {
		if err := s.Load(ctx, c.rdb).Err(); err != nil {
			return nil, err
		}
	}
	cmds, err = run()
	return cmds, pipeErr(cmds, err)
}

// pipeErr is the pipeline's error that means Redis did not answer: a
// missing key (redis.Nil) is an answer.
func pipeErr(cmds []redis.Cmder, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		for _, c := range cmds {
			if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
				return e
			}
		}
		return nil
	}
	return err
}

func noScript(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if e := c.Err(); e != nil && redis.HasErrorPrefix(e, "NOSCRIPT") {
			return true
		}
	}
	return false
}
