package shared

import (
	"encoding/binary"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
)

// Sightings is the response cache's set of keys seen once ([cache]
// store_after = 2): a request's answer is stored only when its key was
// sighted before, so a workload whose requests never repeat stores
// nothing. It is bounded and approximate: two Bloom filters (bits-and-blooms/bloom, as the
// cache-key filter's) of a fixed size, the newer taking keys until it holds its capacity, when the older
// is cleared and becomes the newer. So it remembers at least the last
// capacity distinct keys and at most twice as many; a key it forgot costs
// one more sighting (one more upstream call before its answer is stored),
// and a false positive (at most ~1 % a full filter) stores an answer on
// its key's first sighting, as store_after = 1 would. Its memory is fixed
// at 10 bits a key of capacity, twice.
//
// A key is its fingerprint: 64 bits of the cache key's SHA-256. On a fleet
// the keys a replica sights first are published with its cache's batch
// ([Client.Sighted]) and every replica adds the others' ([Options.Sightings]).
// It is safe for concurrent use.
type Sightings struct {
	mu       sync.Mutex
	cur, old *bloom.BloomFilter // old is the older
	n        int                // keys added to cur
	capacity int
}

const (
	// sightingBits is the bits a key of capacity; with sightingProbes it
	// makes a full filter's false-positive rate ~0.8 %.
	sightingBits   = 10
	sightingProbes = 7
)

// NewSightings makes a set that remembers at least the last capacity
// distinct keys (at least 1024).
func NewSightings(capacity int) *Sightings {
	s := &Sightings{}
	s.Configure(capacity)
	return s
}

// Configure sizes the set for capacity keys (at least 1024); a new size
// forgets every key. The filters are made at the first sighting, so a
// gateway whose cache is off, or stores on the first sighting, holds none.
func (s *Sightings) Configure(capacity int) {
	capacity = max(capacity, 1024)
	s.mu.Lock()
	defer s.mu.Unlock()
	if capacity == s.capacity {
		return
	}
	s.cur, s.old, s.n, s.capacity = nil, nil, 0, capacity
}

// filtersLocked makes the filters at their first use.
func (s *Sightings) filtersLocked() {
	if s.cur == nil {
		m := uint(s.capacity * sightingBits)
		s.cur, s.old = bloom.New(m, sightingProbes), bloom.New(m, sightingProbes)
	}
}

// Fingerprint is the 64 bits of a cache key's digest that name it here.
func Fingerprint(digest []byte) uint64 { return binary.LittleEndian.Uint64(digest) }

// Sight records a sighting of fp and reports whether fp was sighted before.
func (s *Sightings) Sight(fp uint64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], fp)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.filtersLocked()
	if s.cur.Test(b[:]) {
		return true
	}
	seen := s.old.Test(b[:])
	s.addLocked(b[:])
	return seen
}

// Add records a sighting of fp (another replica's) without asking.
func (s *Sightings) Add(fp uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], fp)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.filtersLocked()
	if !s.cur.Test(b[:]) {
		s.addLocked(b[:])
	}
}

// Len is the keys the newer filter holds (at most the capacity) and words
// the 64-bit words both hold (fixed by the capacity; none before the first
// sighting).
func (s *Sightings) Len() (keys, words int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0, 0
	}
	return s.n, len(s.cur.BitSet().Words()) + len(s.old.BitSet().Words())
}

// addLocked adds a key to the newer filter, first making the newer filter
// the older, cleared, when it holds its capacity.
func (s *Sightings) addLocked(key []byte) {
	if s.n >= s.capacity {
		s.cur, s.old = s.old, s.cur
		s.cur.ClearAll()
		s.n = 0
	}
	s.cur.Add(key)
	s.n++
}
