package shared

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/redis/go-redis/v9"
)

// The cache-key filter (with [Options.Leased]): each replica keeps a Bloom
// filter of the response cache's keys that exist fleet-wide, so that a
// request whose key is surely absent reads nothing from Redis (a miss
// costs no round trip). It is kept current from the writes every replica
// already batches: the syncer's pipeline that stores a batch of answers
// also appends their keys to a stream (one XADD a batch), and every
// replica's syncer reads what the others appended since its last read
// (one XREAD a sync, pipelined with the rest). So a key stored on one
// replica is in another's filter within two sync intervals plus two round
// trips (docs/scaling.md). A false positive costs one read (a miss, as
// without the filter); a key not yet seen costs one upstream call the
// cache might have saved.
//
// The filter cannot forget a key, so it is kept in generations: a
// generation takes keys until it holds filterGenKeys of them or is a cache
// ttl old, and is dropped once every key in it expired (its last key is a
// ttl old) or the newer generations alone hold the cache's bound in bytes
// (Redis evicted the oldest answers first). A lookup tests every
// generation: the false-positive rate is at most filterGenFP per
// generation.
const (
	// filterGenKeys is a generation's capacity.
	filterGenKeys = 1 << 15
	// filterGenFP is a full generation's false-positive rate.
	filterGenFP = 0.001
	// deltaKeep is how long the stream keeps a batch of keys (trimmed by
	// age as batches are added). A replica that did not read it for half
	// of that (an outage, a stalled syncer) reloads its filter from the
	// cache's index instead.
	deltaKeep = time.Minute
)

// keyFilter is one replica's approximate set of the cache's keys. Lookups
// come from the requests; every change from the syncer (one goroutine).
type keyFilter struct {
	mu    sync.RWMutex
	gens  []*keyGen // oldest first
	ready bool      // loaded and kept current; false: every lookup is a maybe
	last  string    // the stream's last id read
	read  time.Time // when it was last read
	ttl   time.Duration
	max   int64

	skipped atomic.Int64 // lookups answered "absent": no read
	asked   atomic.Int64 // lookups answered "maybe": read from Redis
}

type keyGen struct {
	f          *bloom.BloomFilter
	n          int
	bytes      int64
	born, last time.Time
}

// FilterStats is what the cache-key filter did (/readyz shows it).
type FilterStats struct {
	// Ready: the filter is loaded and current (else every lookup reads).
	Ready bool `json:"ready"`
	// Skipped counts lookups the filter answered (a sure miss, no read);
	// Asked those it sent to Redis (a probable hit, or not ready).
	Skipped int64 `json:"skipped"`
	Asked   int64 `json:"asked"`
	// Generations and Keys are its generations and the keys they hold.
	Generations int `json:"generations"`
	Keys        int `json:"keys"`
	// ReadID is the last batch of keys it read (the stream's entry id).
	ReadID string `json:"read_id,omitempty"`
}

// mayHave reports whether key may be in the cache fleet-wide: false only
// when the filter is current and key is surely absent.
func (f *keyFilter) mayHave(key string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.ready {
		f.asked.Add(1)
		return true
	}
	if len(f.gens) > 0 {
		locs := bloom.Locations([]byte(key), f.gens[0].f.K())
		for _, g := range f.gens {
			if g.f.TestLocations(locs) {
				f.asked.Add(1)
				return true
			}
		}
	}
	f.skipped.Add(1)
	return false
}

// add records a key stored with size bytes, under a cache of ttl and max
// bytes (the latest given apply).
func (f *keyFilter) add(key string, size int64, ttl time.Duration, max int64, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addLocked(key, size, ttl, max, now)
}

func (f *keyFilter) addLocked(key string, size int64, ttl time.Duration, max int64, now time.Time) {
	if ttl > 0 {
		f.ttl = ttl
	}
	if max > 0 {
		f.max = max
	}
	var cur *keyGen
	if n := len(f.gens); n > 0 {
		cur = f.gens[n-1]
	}
	if cur == nil || cur.n >= filterGenKeys || f.ttl > 0 && now.Sub(cur.born) >= f.ttl {
		cur = &keyGen{f: bloom.NewWithEstimates(filterGenKeys, filterGenFP), born: now}
		f.gens = append(f.gens, cur)
	}
	cur.f.AddString(key)
	cur.n++
	cur.bytes += size
	cur.last = now
	f.prune(now)
}

// prune drops the generations whose keys all expired, and those older
// than the cache's bound in bytes of newer ones (evicted).
func (f *keyFilter) prune(now time.Time) {
	drop := 0
	var newer int64
	for i := len(f.gens) - 1; i >= 0; i-- {
		g := f.gens[i]
		if f.ttl > 0 && now.Sub(g.last) > f.ttl || f.max > 0 && newer >= f.max {
			drop = i + 1
			break
		}
		newer += g.bytes
	}
	if drop > 0 {
		clear(f.gens[:drop])
		f.gens = f.gens[drop:]
	}
}

// stale marks the filter behind (Redis did not answer: batches may be
// lost): lookups read Redis until the syncer reloads it.
func (f *keyFilter) stale() {
	f.mu.Lock()
	f.ready = false
	f.mu.Unlock()
}

// needsReload reports whether the next sync reloads the filter from the
// index rather than reading the stream.
func (f *keyFilter) needsReload(now time.Time) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return !f.ready || now.Sub(f.read) > deltaKeep/2
}

func (f *keyFilter) stats() FilterStats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := FilterStats{Ready: f.ready, Skipped: f.skipped.Load(), Asked: f.asked.Load(), Generations: len(f.gens), ReadID: f.last}
	for _, g := range f.gens {
		st.Keys += g.n
	}
	return st
}

// filterSync is the filter's part of a sync: the stream read since the
// last id, or a reload (the stream's last id, then the whole index).
type filterSync struct {
	xread  *redis.XStreamSliceCmd
	lastID *redis.XMessageSliceCmd
	index  *redis.StringSliceCmd
}

// fillFilter adds the filter's commands to the syncer's pipeline.
func (c *Client) fillFilter(ctx context.Context, p redis.Pipeliner, f *keyFilter, now time.Time) *filterSync {
	stream := c.key("cf")
	if f.needsReload(now) {
		// The last id first: a batch appended after it is read by the next
		// sync; one appended before it is in the index already (its
		// answers' ZADD precedes its XADD in the writer's pipeline).
		return &filterSync{lastID: p.XRevRangeN(ctx, stream, "+", "-", 1), index: p.ZRange(ctx, c.key("cx"), 0, -1)}
	}
	f.mu.RLock()
	last := f.last
	f.mu.RUnlock()
	return &filterSync{xread: p.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Block: -1})}
}

// applyFilter applies what the pipeline read to the filter.
func (c *Client) applyFilter(f *keyFilter, fs *filterSync, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fs.index != nil {
		members, err := fs.index.Result()
		msgs, err2 := fs.lastID.Result()
		if err != nil || err2 != nil && err2 != redis.Nil {
			return
		}
		f.gens, f.last = nil, "0-0"
		if len(msgs) > 0 {
			f.last = msgs[0].ID
		}
		prefix := c.key("c") + ":"
		for _, m := range members {
			k, size, _ := strings.Cut(m, "|")
			n, _ := strconv.ParseInt(size, 10, 64)
			f.addLocked(strings.TrimPrefix(k, prefix), n, 0, 0, now)
		}
		f.ready, f.read = true, now
		return
	}
	streams, err := fs.xread.Result()
	if err != nil && err != redis.Nil {
		return
	}
	for _, s := range streams {
		for _, m := range s.Messages {
			f.last = m.ID
			if m.Values["r"] == c.id {
				continue // added when it was stored (or sighted)
			}
			if sv := str(m.Values["s"]); sv != "" && c.seen != nil {
				for i := 0; i+8 <= len(sv); i += 8 {
					c.seen.Add(binary.LittleEndian.Uint64([]byte(sv[i : i+8])))
				}
			}
			ttl, _ := strconv.ParseInt(str(m.Values["t"]), 10, 64)
			max, _ := strconv.ParseInt(str(m.Values["m"]), 10, 64)
			for line := range strings.SplitSeq(str(m.Values["k"]), "\n") {
				k, size, ok := strings.Cut(line, " ")
				if !ok {
					continue
				}
				n, _ := strconv.ParseInt(size, 10, 64)
				f.addLocked(k, n, time.Duration(ttl)*time.Millisecond, max, now)
			}
		}
	}
	f.read = now
}

func str(v any) string { s, _ := v.(string); return s }

// publishKeys appends a batch's keys (after their SETs and ZADD in the
// same pipeline) and the keys this replica sighted first since the last
// batch to the stream, in one entry, and adds the batch's keys to this
// replica's own filter. Sightings go as 8 bytes each ("s"): 2,700 misses a
// second on a replica are ~2 KiB a batch.
func (c *Client) publishKeys(ctx context.Context, p redis.Pipeliner, caches []cacheWrite, sighted []uint64, ttl time.Duration, bound, now int64) {
	values := make([]string, 0, 10)
	values = append(values, "r", c.id)
	if len(caches) > 0 {
		var b strings.Builder
		for _, w := range caches {
			b.Grow(len(w.key) + 12)
			b.WriteString(w.key)
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(len(w.val)))
			b.WriteByte('\n')
		}
		values = append(values, "t", strconv.FormatInt(ttl.Milliseconds(), 10), "m", strconv.FormatInt(bound, 10), "k", b.String())
	}
	if len(sighted) > 0 {
		b := make([]byte, 0, 8*len(sighted))
		for _, fp := range sighted {
			b = binary.LittleEndian.AppendUint64(b, fp)
		}
		values = append(values, "s", string(b))
	}
	p.XAdd(ctx, &redis.XAddArgs{Stream: c.key("cf"), MinID: strconv.FormatInt(now-deltaKeep.Milliseconds(), 10), Approx: true, Values: values})
	if f := c.filter.Load(); f != nil {
		t := time.UnixMilli(now)
		for _, w := range caches {
			f.add(w.key, int64(len(w.val)), w.ttl, w.max, t)
		}
	}
}

// Sighted queues a response-cache key this replica sighted first (its
// [Fingerprint]) for the others' [Options.Sightings]: it goes with the
// next batch, in the XADD that publishes the batch's keys, and each
// replica's next pipeline reads it, so a key counts its sightings
// fleet-wide within two sync intervals plus two round trips, and no
// request waits for it. Without leases, or while Redis is down, the
// sighting stays on this replica.
func (c *Client) Sighted(fp uint64) {
	if c.lz != nil && c.up.Load() {
		c.lz.enqueueSighted(fp)
	}
}

// keyFilter returns the replica's filter, made at the first lookup of a
// replica whose cache is on (nil without leases).
func (c *Client) keyFilter() *keyFilter {
	if c.lz == nil {
		return nil
	}
	if f := c.filter.Load(); f != nil {
		return f
	}
	c.filter.CompareAndSwap(nil, &keyFilter{})
	return c.filter.Load()
}

// FilterStats returns what the cache-key filter did (zero before the
// first lookup, and without [Options.Leased]).
func (c *Client) FilterStats() FilterStats {
	if f := c.filter.Load(); f != nil {
		return f.stats()
	}
	return FilterStats{}
}
