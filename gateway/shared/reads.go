package shared

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// What a replica reads from Redis on a request's path, beside its leases:
// the session pins it keeps ([pinCache]) and the batched reader that
// coalesces the reads of requests in flight ([reader]).

// pinCache keeps the session pins this replica read or wrote, served for
// pinFresh without reading Redis again (a pin another replica changed is
// seen within that), and remembers when each was last written so that an
// unchanged pin is written again only as its ttl requires.
type pinCache struct {
	mu sync.Mutex
	m  map[string]pinEntry
}

type pinEntry struct {
	val   []byte // nil: no pin
	read  time.Time
	wrote time.Time
}

func newPinCache() *pinCache { return &pinCache{m: map[string]pinEntry{}} }

// get returns the pin when it is fresh (ok false: read Redis).
func (p *pinCache) get(key string, now time.Time) (val []byte, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, found := p.m[key]
	if !found || now.Sub(e.read) > pinFresh {
		return nil, false
	}
	return e.val, true
}

// seen records a pin read from Redis.
func (p *pinCache) seen(key string, val []byte, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= pinMax {
		clear(p.m)
	}
	e := p.m[key]
	e.val, e.read = val, now
	p.m[key] = e
}

// put records a pin written and reports whether Redis needs the write:
// changed (a new pin, or another value than this replica knew), or stale
// (it was last written more than a quarter of its ttl, and at most a
// minute, ago: the write keeps the session's ttl sliding).
func (p *pinCache) put(key string, val []byte, ttl time.Duration, now time.Time) (changed, stale bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= pinMax {
		clear(p.m)
	}
	e := p.m[key]
	changed = e.val == nil || string(e.val) != string(val)
	stale = !changed && now.Sub(e.wrote) > min(ttl/4, time.Minute)
	e.val, e.read = val, now
	if changed || stale {
		e.wrote = now
	}
	p.m[key] = e
	return changed, stale
}

// forget drops a pin whose write Redis did not take.
func (p *pinCache) forget(key string) {
	p.mu.Lock()
	delete(p.m, key)
	p.mu.Unlock()
}

// reader coalesces the reads of requests in flight together (the cache's
// answer, a pin missing from the local cache) into one MGET: one round
// trip, one write and one read on each side, for every request that
// arrived while the previous batch was out. At most readers batches are in
// flight; a request that finds fewer runs its batch itself, so an idle
// replica's read waits for nothing but its own round trip.
type reader struct {
	c        *Client
	mu       sync.Mutex
	q        []*readReq
	inflight int
}

// readers bounds the batches in flight (two keep Redis busy while the
// replica prepares the next).
const readers = 2

type readReq struct {
	keys []string
	vals []any
	err  error
	done chan struct{}
}

// get reads keys (nil values: missing) with the batch.
func (r *reader) get(ctx context.Context, keys []string) ([]any, error) {
	req := &readReq{keys: keys, done: make(chan struct{})}
	r.mu.Lock()
	r.q = append(r.q, req)
	run := r.inflight < readers
	if run {
		r.inflight++
	}
	r.mu.Unlock()
	if run {
		r.flush(ctx)
	}
	select {
	case <-req.done:
		return req.vals, req.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flush sends what is queued as one MGET and hands the answers out; what
// queued meanwhile goes in a batch of its own goroutine.
func (r *reader) flush(ctx context.Context) {
	// Let the requests already running reach their reads first: the batch
	// grows, the syscalls a request fall.
	runtime.Gosched()
	r.mu.Lock()
	batch := r.q
	r.q = nil
	r.mu.Unlock()
	if len(batch) > 0 {
		var keys []string
		for _, q := range batch {
			keys = append(keys, q.keys...)
		}
		rctx, cancel := r.c.ctx(ctx)
		vals, err := r.c.rdb.MGet(rctx, keys...).Result()
		cancel()
		i := 0
		for _, q := range batch {
			if err != nil {
				q.err = err
			} else {
				q.vals = vals[i : i+len(q.keys)]
			}
			i += len(q.keys)
			close(q.done)
		}
	}
	r.mu.Lock()
	more := len(r.q) > 0
	if !more {
		r.inflight--
	}
	r.mu.Unlock()
	if more {
		go r.flush(context.Background())
	}
}
