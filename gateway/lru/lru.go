// Package lru is a bounded, concurrency-safe map with least-recently-used
// eviction and a time to live, used for the response cache and session pins.
// Expired entries are dropped when touched; nothing runs in the background.
package lru

import (
	"container/list"
	"sync"
	"time"
)

// Cache holds at most Max entries, each for at most TTL.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	ll    *list.List
	items map[K]*list.Element
	max   int
	ttl   time.Duration
	now   func() time.Time
}

type entry[K comparable, V any] struct {
	key   K
	value V
	// stored is when the value was put; it expires TTL later, with the TTL
	// in force when it is read.
	stored time.Time
}

// New returns a cache of at most max entries (at least 1) kept for ttl.
func New[K comparable, V any](max int, ttl time.Duration) *Cache[K, V] {
	if max < 1 {
		max = 1
	}
	return &Cache[K, V]{ll: list.New(), items: map[K]*list.Element{}, max: max, ttl: ttl, now: time.Now}
}

// Configure changes the bound and the time to live, keeping the entries:
// the new TTL applies to them too (it counts from when each was stored), and
// the least recently used beyond the new bound are evicted at once.
func (c *Cache[K, V]) Configure(max int, ttl time.Duration) {
	if max < 1 {
		max = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.ttl = max, ttl
	c.evict()
}

func (c *Cache[K, V]) evict() {
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*entry[K, V]).key)
	}
}

// SetClock replaces the clock (tests).
func (c *Cache[K, V]) SetClock(now func() time.Time) { c.mu.Lock(); c.now = now; c.mu.Unlock() }

// Get returns the value and true when present and not expired.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[K, V])
	if !c.now().Before(e.stored.Add(c.ttl)) {
		c.ll.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.ll.MoveToFront(el)
	return e.value, true
}

// Put stores the value, refreshing its time to live and evicting the least
// recently used entry when full.
func (c *Cache[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if el, ok := c.items[k]; ok {
		e := el.Value.(*entry[K, V])
		e.value, e.stored = v, now
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&entry[K, V]{key: k, value: v, stored: now})
	c.evict()
}

// Len returns the number of entries, expired ones not yet touched included.
func (c *Cache[K, V]) Len() int { c.mu.Lock(); defer c.mu.Unlock(); return c.ll.Len() }

// Delete removes the entry of k, if any.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.Remove(el)
		delete(c.items, k)
	}
}
