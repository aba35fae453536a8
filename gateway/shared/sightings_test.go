package shared_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// TestSightings: the admission rule's set of keys sighted once. Each case
// sights key a, then others distinct keys, then sights a again: a is
// remembered (its second sighting stores the answer) while at most the
// set's capacity of other keys came between, forgotten (one more sighting
// before its answer is stored) past twice the capacity.
func TestSightings(t *testing.T) {
	const capacity = 1024
	for _, tc := range []struct {
		name   string
		others int
		remote bool // a's first sighting came from another replica (Add)
		seen   bool // the second sighting of a finds the first
	}{
		{name: "first sighting then second", others: 0, seen: true},
		{name: "another replica's sighting counts", others: 0, remote: true, seen: true},
		{name: "remembered across the capacity", others: capacity + 64, seen: true},
		{name: "another replica's, across the capacity", others: capacity + 64, remote: true, seen: true},
		{name: "forgotten past twice the capacity", others: 2*capacity + 64, seen: false},
		{name: "another replica's, forgotten past twice the capacity", others: 2*capacity + 64, remote: true, seen: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shared.NewSightings(capacity)
			rng := rand.New(rand.NewPCG(1, 2))
			a := rng.Uint64()
			if tc.remote {
				s.Add(a)
			} else {
				require.False(t, s.Sight(a), "a first sighting is not a repeat")
			}
			for range tc.others {
				s.Sight(rng.Uint64())
			}
			require.Equal(t, tc.seen, s.Sight(a))
			require.True(t, s.Sight(a), "the sighting that missed recorded a: the next one is a repeat")
		})
	}
}

// TestSightingsBounded: the set's memory is fixed by its capacity, however
// many distinct keys go through it, and its false positives (a first
// sighting taken for a repeat: an answer stored that may not be hit) stay
// near the ~0.8 % of a full filter per filter tested.
func TestSightingsBounded(t *testing.T) {
	for _, capacity := range []int{10, 1024, 1 << 15} {
		s := shared.NewSightings(capacity)
		_, words := s.Len()
		require.Zero(t, words, "no filter before the first sighting")
		rng := rand.New(rand.NewPCG(3, uint64(capacity)))
		s.Sight(rng.Uint64())
		_, words = s.Len()
		capacity = max(capacity, 1024)
		require.Equal(t, 2*((capacity*10+63)/64), words, "10 bits a key, two filters")
		for range 20 * capacity {
			s.Sight(rng.Uint64())
		}
		keys, after := s.Len()
		require.Equal(t, words, after, "the memory did not grow")
		require.LessOrEqual(t, keys, capacity)
		fp := 0
		const probes = 100000
		for range probes {
			if s.Sight(rng.Uint64()) {
				fp++
			}
		}
		require.Less(t, float64(fp)/probes, 0.02, "capacity %d: %d false positives", capacity, fp)
	}
}

// TestSightingsAcrossReplicas: a key sighted first on one replica counts
// on another once the first's next sync published it and the other's next
// sync read it (the cache-key filter's bound); before the publishing sync
// nothing of it is known on the other.
func TestSightingsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	open := func() (*shared.Client, *shared.Sightings) {
		s := shared.NewSightings(1024)
		c, err := shared.Open(context.Background(), shared.Options{URL: srv.URL(), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Heartbeat: time.Hour, Timeout: 5 * time.Second, Leased: true, SyncInterval: time.Hour, Sightings: s})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.True(t, c.Up())
		// The filter exists from the first lookup: the stream is read from then.
		c.Admit(context.Background(), &shared.Admission{ID: "r", CacheKey: "k"})
		shared.Sync(c)
		return c, s
	}
	a, sa := open()
	b, sb := open()

	const fp = 0x5eed
	require.False(t, sa.Sight(fp))
	a.Sighted(fp)
	shared.Sync(b)
	require.False(t, sb.Sight(fp+1), "b's sync before a's: nothing of a's yet")
	shared.Sync(a)
	shared.Sync(b)
	require.True(t, sb.Sight(fp), "a's first sighting counts on b")

	// b's own sighting (fp+1) went out with b's sync; a reads it.
	b.Sighted(fp + 1)
	shared.Sync(b)
	shared.Sync(a)
	require.True(t, sa.Sight(fp+1), "b's first sighting counts on a")
}
