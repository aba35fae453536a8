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

// Hold is the budget reserved for one attempt: [Writes] settles it (its
// cost charged and the reservation released in one step) and
// [Client.Release] frees it for an attempt that cost nothing.
type Hold struct {
	id     string
	month  string
	scopes []budget.Scope
	grant  float64
	// local: held in the outage ledger (Redis was down when it was made).
	local bool
	// leased: reserved on this replica's leases (see lease.go).
	leased bool
	// starved: Redis granted less than asked while replicas held leases on
	// a budget (they give them back at their next sync).
	starved bool
	release func() // the outage ledger's release
	once    sync.Once
}

// Grant is what the hold reserved (0 or less: nothing).
func (h *Hold) Grant() float64 {
	if h == nil {
		return 0
	}
	return h.grant
}

// budgetKeys returns each scope's hash and reservation index.
func (c *Client) budgetKeys(month string, scopes []budget.Scope) []string {
	keys := make([]string, 0, 2*len(scopes))
	for _, s := range scopes {
		keys = append(keys, c.key("b", string(s), month), c.key("bx", string(s), month))
	}
	return keys
}

// BudgetAsk is a reservation asked for with an admission.
type BudgetAsk struct {
	Month  string
	Want   float64 // +Inf: as much as remains
	Limits []budget.Limit
	// Lease bounds how long the reservation is held should the replica
	// never settle it (it died).
	Lease time.Duration
}

// admitArgs appends the budget part of the admit script's keys and args.
func (c *Client) budgetArgs(keys []string, args []any, ask *BudgetAsk) ([]string, []any) {
	scopes := make([]budget.Scope, len(ask.Limits))
	for i, l := range ask.Limits {
		scopes[i] = l.Scope
	}
	keys = append(keys, c.budgetKeys(ask.Month, scopes)...)
	for _, l := range ask.Limits {
		args = append(args, strconv.FormatFloat(l.USD, 'g', -1, 64))
	}
	return keys, args
}

func wantArg(want float64) string {
	if math.IsInf(want, 1) {
		return "-1"
	}
	return strconv.FormatFloat(want, 'g', -1, 64)
}

// Reserve holds budget for one attempt: the smaller of want (+Inf for all
// that remains) and what the limits have left across the fleet, on every
// limit's scope, in one round trip. id names the reservation (unique per
// attempt). Without Redis it holds on this replica's share.
//
// With [Options.Leased] the hold is made on this replica's leases when they
// cover it, with no round trip.
func (c *Client) Reserve(ctx context.Context, id string, ask BudgetAsk) *Hold {
	if c.lz != nil {
		if h := c.lz.reserve(id, ask); h != nil {
			return h
		}
		return c.reserveExact(ctx, id, ask)
	}
	return c.reserve(ctx, id, ask)
}

// reserveExact reserves in Redis; while what it lacks is held by other
// replicas' leases, it asks again after their next sync (which gives their
// rest back: every replica syncs a lease at least every leaseRenew), up to
// five times: a budget's last dollars are not stranded in a lease while a
// request is refused.
func (c *Client) reserveExact(ctx context.Context, id string, ask BudgetAsk) *Hold {
	for try := 0; ; try++ {
		h := c.reserve(ctx, id, ask)
		if !h.starved || try == 5 {
			return h
		}
		c.Release(ctx, h)
		select {
		case <-ctx.Done():
			return c.reserve(ctx, id, ask)
		case <-time.After(2 * c.lz.every):
		}
		id += "'"
	}
}

// reserve is Reserve in Redis (or on the outage's local share).
func (c *Client) reserve(ctx context.Context, id string, ask BudgetAsk) *Hold {
	if !c.up.Load() {
		c.fallback("budget")
		return c.outage.reserve(id, ask)
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	keys, args := c.budgetArgs(nil, []any{time.Now().UnixMilli(), 0, len(ask.Limits), id, ask.Lease.Milliseconds(), wantArg(ask.Want)}, &ask)
	res, err := admitScript.Run(rctx, c.rdb, keys, args...).Slice()
	if err != nil {
		c.failed("budget", err)
		return c.outage.reserve(id, ask)
	}
	return c.holdFrom(id, ask, res)
}

// holdFrom reads the admit script's budget answer.
func (c *Client) holdFrom(id string, ask BudgetAsk, res []any) *Hold {
	grant := parseFloat(res[3])
	for j, l := range ask.Limits {
		if 4+j < len(res) {
			c.outage.remember(l.Scope, ask.Month, parseFloat(res[4+j]))
		}
	}
	h := &Hold{id: id, month: ask.Month, grant: grant}
	if k := 4 + len(ask.Limits); k < len(res) {
		h.starved = res[k] == int64(1)
	}
	for _, l := range ask.Limits {
		h.scopes = append(h.scopes, l.Scope)
	}
	return h
}

// Available returns the least of the limits' remaining budgets across the
// fleet (limit minus spend minus what attempts in flight hold).
func (c *Client) Available(ctx context.Context, month string, limits []budget.Limit) float64 {
	if len(limits) == 0 {
		return math.Inf(1)
	}
	if c.up.Load() {
		rctx, cancel := c.ctx(ctx)
		defer cancel()
		ask := BudgetAsk{Month: month, Limits: limits}
		keys, args := c.budgetArgs(nil, []any{time.Now().UnixMilli(), 0, len(limits), "", 0, "0"}, &ask)
		res, err := admitScript.Run(rctx, c.rdb, keys, args...).Slice()
		if err == nil {
			avail := math.Inf(1)
			for j, l := range limits {
				a := parseFloat(res[4+j])
				c.outage.remember(l.Scope, month, a)
				if c.lz != nil {
					a += c.lz.free(month, l.Scope) // this replica's own to spend
				}
				avail = math.Min(avail, a)
			}
			return avail
		}
		c.failed("budget", err)
	}
	c.fallback("budget")
	avail := c.outage.available(month, limits)
	if c.lz != nil {
		for _, l := range limits {
			avail = math.Min(avail, c.outage.available(month, []budget.Limit{l})+c.lz.free(month, l.Scope))
		}
	}
	return avail
}

// Release frees a hold whose attempt cost nothing (it failed). Safe on nil
// and more than once.
func (c *Client) Release(ctx context.Context, h *Hold) {
	if h == nil {
		return
	}
	c.settleHold(ctx, h, 0, nil)
}

// settleHold charges cost to scopes and releases the hold, once.
func (c *Client) settleHold(ctx context.Context, h *Hold, cost float64, scopes []budget.Scope) {
	done := false
	h.once.Do(func() { done = true })
	if !done {
		return
	}
	if h.leased {
		c.lz.settle(h, cost, scopes)
		return
	}
	if h.local {
		c.outage.add(h.month, cost, scopes)
		h.release()
		return
	}
	if !c.up.Load() {
		// The reservation in Redis expires with its lease; the spend is
		// pushed when Redis is back.
		c.fallback("budget")
		c.outage.add(h.month, cost, scopes)
		return
	}
	if c.lz != nil {
		// Write-behind: the reservation is released in the next pipeline.
		keys, id, usd, month := c.budgetKeys(h.month, union(h.scopes, scopes)), h.id, strconv.FormatFloat(cost, 'g', -1, 64), h.month
		c.lz.enqueue(queued{
			fill: func(ctx context.Context, p redis.Pipeliner) { settleScript.EvalSha(ctx, p, keys, id, usd) },
			fail: func() { c.outage.add(month, cost, scopes) },
		}, true)
		return
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	if err := c.settleCmd(rctx, c.rdb, h.id, h.month, cost, union(h.scopes, scopes)).Err(); err != nil {
		c.failed("budget", err)
		c.outage.add(h.month, cost, scopes)
	}
}

func (c *Client) settleCmd(ctx context.Context, r redis.Scripter, id, month string, cost float64, scopes []budget.Scope) *redis.Cmd {
	return settleScript.Run(ctx, r, c.budgetKeys(month, scopes), id, strconv.FormatFloat(cost, 'g', -1, 64))
}

func union(a, b []budget.Scope) []budget.Scope {
	out := append([]budget.Scope(nil), a...)
	for _, s := range b {
		found := false
		for _, x := range out {
			if x == s {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

func parseFloat(v any) float64 {
	switch x := v.(type) {
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	case int64:
		return float64(x)
	}
	return 0
}

// outageLedger meters budgets on one replica while Redis is away: each
// limit is what Redis last said remained of it, divided by the number of
// live replicas then (the replica's conservative share; the whole limit
// divided so when it never heard), and the spend is kept to be added to
// the shared budgets when Redis answers again.
type outageLedger struct {
	mu        sync.Mutex
	remaining map[scopeMonth]float64 // as Redis last reported
	replicas  int64                  // live replicas when the outage began
	spent     map[scopeMonth]float64 // metered during the outage
	held      map[scopeMonth]float64
}

type scopeMonth struct {
	scope budget.Scope
	month string
}

func newOutageLedger() *outageLedger {
	return &outageLedger{remaining: map[scopeMonth]float64{}, spent: map[scopeMonth]float64{}, held: map[scopeMonth]float64{}, replicas: 1}
}

// remember keeps what Redis said remains of a budget.
func (o *outageLedger) remember(s budget.Scope, month string, remaining float64) {
	o.mu.Lock()
	o.remaining[scopeMonth{s, month}] = remaining
	o.mu.Unlock()
}

// begin starts an outage with the live replica count.
func (o *outageLedger) begin(replicas int64) {
	o.mu.Lock()
	o.replicas = max(replicas, 1)
	o.mu.Unlock()
}

// share is what this replica may spend of a limit during the outage. o.mu
// is held.
func (o *outageLedger) share(l budget.Limit, month string) float64 {
	sm := scopeMonth{l.Scope, month}
	base, ok := o.remaining[sm]
	if !ok {
		base = l.USD
	}
	return math.Max(base, 0)/float64(o.replicas) - o.spent[sm] - o.held[sm]
}

func (o *outageLedger) available(month string, limits []budget.Limit) float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	avail := math.Inf(1)
	for _, l := range limits {
		avail = math.Min(avail, o.share(l, month))
	}
	return avail
}

func (o *outageLedger) reserve(id string, ask BudgetAsk) *Hold {
	o.mu.Lock()
	defer o.mu.Unlock()
	grant := ask.Want
	for _, l := range ask.Limits {
		grant = math.Min(grant, o.share(l, ask.Month))
	}
	h := &Hold{id: id, month: ask.Month, grant: grant, local: true, release: func() {}}
	if grant <= 0 || math.IsInf(grant, 0) {
		return h
	}
	for _, l := range ask.Limits {
		o.held[scopeMonth{l.Scope, ask.Month}] += grant
		h.scopes = append(h.scopes, l.Scope)
	}
	h.release = func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, l := range ask.Limits {
			o.held[scopeMonth{l.Scope, ask.Month}] -= grant
		}
	}
	return h
}

// add counts spend metered without Redis.
func (o *outageLedger) add(month string, usd float64, scopes []budget.Scope) {
	if usd <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range scopes {
		o.spent[scopeMonth{s, month}] += usd
	}
}

// flush adds the outage's spend to the shared budgets.
func (o *outageLedger) flush(ctx context.Context, c *Client) error {
	o.mu.Lock()
	batch := o.spent
	o.spent = map[scopeMonth]float64{}
	o.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	_, err := c.pipe(ctx, func(p redis.Pipeliner) {
		for sm, usd := range batch {
			settleScript.EvalSha(ctx, p, c.budgetKeys(sm.month, []budget.Scope{sm.scope}), "", strconv.FormatFloat(usd, 'g', -1, 64))
		}
	})
	if err != nil {
		o.mu.Lock()
		for sm, usd := range batch {
			o.spent[sm] += usd
		}
		o.mu.Unlock()
	}
	return err
}
