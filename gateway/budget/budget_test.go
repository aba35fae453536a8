package budget

import (
	"context"
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
