package budget

import (
	"context"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSpendSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	l, err := Open(path)
	require.NoError(t, err)
	month := Month(time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC))
	require.Equal(t, "2026-11", month)
	k, team := KeyScope("k-chat"), TeamScope("acme", "ml")
	l.Add(month, 0.25, k, team)
	l.Add(month, 0.5, k, team)
	l.Add("2026-10", 9, k)
	l.Add(month, -3, k) // ignored
	require.InDelta(t, 0.75, l.Spent(k, month), 1e-9)
	require.NoError(t, l.Close(context.Background()))

	l, err = Open(path)
	require.NoError(t, err)
	defer l.Close(context.Background())
	require.InDelta(t, 0.75, l.Spent(k, month), 1e-9)
	require.InDelta(t, 0.75, l.Spent(team, month), 1e-9)
	require.InDelta(t, 9, l.Spent(k, "2026-10"), 1e-9)
	require.Zero(t, l.Spent(KeyScope("other"), month))
}

func TestConcurrentAdds(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	defer l.Close(context.Background())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				l.Add("2026-11", 0.01, KeyScope("k"))
				if i%50 == 0 {
					require.NoError(t, l.Flush(context.Background()))
				}
			}
		}()
	}
	wg.Wait()
	require.InDelta(t, 16, l.Spent(KeyScope("k"), "2026-11"), 1e-6)
}

// TestReserve: a reservation grants what every limit can still pay, holds
// it until released, and attempts reserving together never hold more than
// the tightest budget.
func TestReserve(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	defer l.Close(context.Background())
	const month = "2026-11"
	k, team := KeyScope("k-batch"), TeamScope("acme", "ml")
	limits := []Limit{{k, 1.0}, {team, 3.0}}
	l.Add(month, 0.25, k, team)
	require.InDelta(t, 0.75, l.Available(month, limits...), 1e-9, "the key's budget binds")

	g1, r1 := l.Reserve(month, 0.5, limits...)
	require.InDelta(t, 0.5, g1, 1e-9)
	g2, r2 := l.Reserve(month, math.Inf(1), limits...) // "as much as there is"
	require.InDelta(t, 0.25, g2, 1e-9)
	g3, r3 := l.Reserve(month, 0.1, limits...)
	require.LessOrEqual(t, g3, 0.0, "nothing is left to hold")
	r3()
	require.InDelta(t, 0.0, l.Available(month, limits...), 1e-9)
	require.InDelta(t, 0.25, l.Spent(k, month), 1e-9, "a hold is not spend")

	// The first attempt cost 0.3 of its 0.5: recorded, then released.
	l.Add(month, 0.3, k, team)
	r1()
	r1() // idempotent
	require.InDelta(t, 0.2, l.Available(month, limits...), 1e-9)
	r2()
	require.InDelta(t, 0.45, l.Available(month, limits...), 1e-9)
	require.InDelta(t, 3.0-0.55, l.Available(month, Limit{team, 3.0}), 1e-9, "holds are per scope")

	// Concurrent reservations never grant more than the budget in total.
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := 0.0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, _ := l.Reserve(month, 0.02, limits...)
			if g > 0 {
				mu.Lock()
				total += g
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.InDelta(t, 0.45, total, 1e-9)
	require.LessOrEqual(t, l.Available(month, limits...), 1e-9)
}
