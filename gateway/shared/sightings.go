package shared

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// Sightings is the response cache's set of keys seen once ([cache]
// store_after = 2): a request's answer is stored only when its key was
// sighted before, so a workload whose requests never repeat stores
// nothing. It is bounded and approximate: two Bloom filters of a fixed
// size, the newer taking keys until it holds its capacity, when the older
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
	cur, old []uint64 // the filters' bits; old is the older
	n        int      // keys added to cur
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
// forgets every key.
func (s *Sightings) Configure(capacity int) {
	capacity = max(capacity, 1024)
	s.mu.Lock()
	defer s.mu.Unlock()
	if capacity == s.capacity {
		return
	}
	words := (capacity*sightingBits + 63) / 64
	s.cur, s.old, s.n, s.capacity = make([]uint64, words), make([]uint64, words), 0, capacity
}

// Fingerprint is the 64 bits of a cache key's digest that name it here.
func Fingerprint(digest []byte) uint64 { return binary.LittleEndian.Uint64(digest) }

// Sight records a sighting of fp and reports whether fp was sighted before.
func (s *Sightings) Sight(fp uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has(s.cur, fp) {
		return true
	}
	seen := s.has(s.old, fp)
	s.addLocked(fp)
	return seen
}

// Add records a sighting of fp (another replica's) without asking.
func (s *Sightings) Add(fp uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.has(s.cur, fp) {
		s.addLocked(fp)
	}
}

// Len is the keys the newer filter holds (at most the capacity) and Words
// the 64-bit words both hold (fixed by the capacity).
func (s *Sightings) Len() (keys, words int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, len(s.cur) + len(s.old)
}

func (s *Sightings) addLocked(fp uint64) {
	if s.n >= s.capacity {
		s.cur, s.old = s.old, s.cur
		clear(s.cur)
		s.n = 0
	}
	m := uint64(len(s.cur)) * 64
	h1, h2 := fp, mix(fp)
	for i := range uint64(sightingProbes) {
		b, _ := bits.Mul64(h1+i*h2, m)
		s.cur[b/64] |= 1 << (b % 64)
	}
	s.n++
}

func (s *Sightings) has(f []uint64, fp uint64) bool {
	m := uint64(len(f)) * 64
	h1, h2 := fp, mix(fp)
	for i := range uint64(sightingProbes) {
		b, _ := bits.Mul64(h1+i*h2, m)
		if f[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// mix is the second hash of a fingerprint (SplitMix64's finaliser), odd so
// that the probes step through the filter.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x | 1
}
