package shared

import (
	"math"
	"sync"
	"time"
)

// Kind is what a rate limit counts.
type Kind uint8

// Kinds of [Check].
const (
	// RPM counts requests per minute.
	RPM Kind = iota
	// TPM counts tokens per minute.
	TPM
	// Parallel counts requests in flight.
	Parallel
)

// String names the kind as sluice.toml does.
func (k Kind) String() string {
	switch k {
	case RPM:
		return "rpm"
	case TPM:
		return "tpm"
	default:
		return "max_parallel"
	}
}

// Check is one rate limit a request must pass.
type Check struct {
	// Scope is whose limit it is: "key:<id>" or "team:<org>/<team>".
	Scope string
	// Kind is what it counts.
	Kind Kind
	// Limit is the most per minute (RPM, TPM) or at once (Parallel).
	Limit int
	// Cost is what this request counts: 1 for RPM and Parallel, its tokens
	// for TPM.
	Cost int64
}

// Limiter is the rate limiter in one process: the algorithms of the shared
// one (GCRA for rpm and tpm; a set of leases for max_parallel) in memory.
// The gateway uses it without Redis, and the [Client] while Redis is down.
// It is safe for concurrent use.
type Limiter struct {
	mu   sync.Mutex
	tat  map[string]float64              // scope/kind → theoretical arrival time, ms
	busy map[string]map[string]time.Time // scope → request id → lease expiry
	now  func() time.Time
}

// NewLimiter returns an empty limiter.
func NewLimiter() *Limiter {
	return &Limiter{tat: map[string]float64{}, busy: map[string]map[string]time.Time{}, now: time.Now}
}

// Admit admits the request under every check, or none: it returns the
// first check refused and how long until it would pass. divisor (≥ 1)
// splits every limit, for a replica serving its share of a fleet's limits
// while Redis is away. lease bounds how long a parallel slot is held
// should Release never come.
func (l *Limiter) Admit(id string, checks []Check, divisor int64, lease time.Duration) (refused int, retryAfter time.Duration) {
	if divisor < 1 {
		divisor = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ms := float64(now.UnixNano()) / 1e6
	news := make([]float64, len(checks))
	for i, c := range checks {
		limit := int64(math.Ceil(float64(c.Limit) / float64(divisor)))
		switch c.Kind {
		case Parallel:
			set := l.busy[c.Scope]
			for rid, exp := range set {
				if !now.Before(exp) {
					delete(set, rid)
				}
			}
			if int64(len(set)) >= limit {
				return i, time.Second
			}
		default:
			cost := min(c.Cost, limit)
			tat := max(l.tat[rateKey(c)], ms)
			next := tat + float64(cost)*60000/float64(limit)
			if allow := next - 60000; allow > ms {
				return i, time.Duration((allow - ms) * 1e6)
			}
			news[i] = next
		}
	}
	for i, c := range checks {
		if c.Kind == Parallel {
			if l.busy[c.Scope] == nil {
				l.busy[c.Scope] = map[string]time.Time{}
			}
			l.busy[c.Scope][id] = now.Add(lease)
			continue
		}
		l.tat[rateKey(c)] = news[i]
	}
	return -1, 0
}

// Depart frees the request's parallel slots and moves its token charge by
// delta (negative: tokens charged at admission that the answer did not
// use).
func (l *Limiter) Depart(id string, checks []Check, delta int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range checks {
		switch c.Kind {
		case Parallel:
			delete(l.busy[c.Scope], id)
		case TPM:
			if delta != 0 && c.Limit > 0 {
				l.tat[rateKey(c)] += float64(delta) * 60000 / float64(c.Limit)
			}
		}
	}
}

func rateKey(c Check) string { return c.Scope + "|" + c.Kind.String() }
