package state_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/state"
	"github.com/sluicegw/sluice/store/state/pgtest"
)

// TestPostgresStore: migrations apply once (two stores opening together),
// changes serialise and are audited, and every store listening hears a
// change another made.
func TestPostgresStore(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	var a, b state.Store
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a, errA = state.OpenPostgres(ctx, pg.URL(), "") }()
	go func() { defer wg.Done(); b, errB = state.OpenPostgres(ctx, pg.URL(), "") }()
	wg.Wait()
	require.NoError(t, errA)
	require.NoError(t, errB)
	defer a.Close()
	defer b.Close()

	heard := make(chan struct{}, 10)
	listening := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.(state.Notifier).Watch(wctx, func() { close(listening) }, func() { heard <- struct{}{} })
	select { // a change made from now on is heard
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the store did not listen")
	}

	seeded, err := a.Seeded(ctx)
	require.NoError(t, err)
	require.False(t, seeded)
	routes := []profiles.Route{{Model: "assistant", Targets: []profiles.Target{{Upstream: "market", Model: "x/y"}}}}
	require.NoError(t, a.Replace(ctx, routes, state.AuditEntry{Actor: "import", Action: "import"}))
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("the other store did not hear the change")
	}
	got, err := b.Routes(ctx)
	require.NoError(t, err)
	require.Equal(t, "assistant", got[0].Model)

	// Concurrent read-modify-write changes serialise: none is lost.
	wg.Add(10)
	for i := range 10 {
		go func() {
			defer wg.Done()
			st := a
			if i%2 == 1 {
				st = b
			}
			require.NoError(t, st.Update(ctx, func(cur []profiles.Route) ([]profiles.Route, state.AuditEntry, error) {
				cur[0].Targets = append(cur[0].Targets, profiles.Target{Upstream: "market", Model: "m"})
				return cur, state.AuditEntry{Actor: "t", Action: "target.add", RouteID: "assistant"}, nil
			}))
		}()
	}
	wg.Wait()
	got, err = a.Routes(ctx)
	require.NoError(t, err)
	require.Len(t, got[0].Targets, 11)
	entries, next, err := b.Audit(ctx, 5, "")
	require.NoError(t, err)
	require.Len(t, entries, 5)
	require.NotEmpty(t, next)
	require.Equal(t, "target.add", entries[0].Action)

	// An entry keeps where it came from; one appended alone changes no
	// route and is not announced as a change.
	require.NoError(t, a.Update(ctx, func(cur []profiles.Route) ([]profiles.Route, state.AuditEntry, error) {
		return cur, state.AuditEntry{Actor: "admin:0123456789ab", Client: "192.0.2.7", RequestID: "r-1", Action: "route.put", RouteID: "assistant"}, nil
	}))
	require.NoError(t, a.Append(ctx, state.AuditEntry{Actor: "file-watch", Action: "config.reload", After: []byte(`{"outcome":"refused"}`)}))
	entries, _, err = b.Audit(ctx, 2, "")
	require.NoError(t, err)
	require.Equal(t, [4]string{"file-watch", "", "", "config.reload"}, [4]string{entries[0].Actor, entries[0].Client, entries[0].RequestID, entries[0].Action})
	require.JSONEq(t, `{"outcome":"refused"}`, string(entries[0].After))
	require.Equal(t, [4]string{"admin:0123456789ab", "192.0.2.7", "r-1", "route.put"}, [4]string{entries[1].Actor, entries[1].Client, entries[1].RequestID, entries[1].Action})
	got, err = b.Routes(ctx)
	require.NoError(t, err)
	require.Len(t, got[0].Targets, 11)

	// Down: changes fail (the gateway answers 503); back: they work again.
	pg.Stop()
	require.Error(t, a.Update(ctx, func(cur []profiles.Route) ([]profiles.Route, state.AuditEntry, error) {
		return cur, state.AuditEntry{Action: "x"}, nil
	}))
	require.Error(t, a.Ping(ctx))
	require.NoError(t, pg.Restart())
	require.Eventually(t, func() bool { return a.Ping(ctx) == nil }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, a.Replace(ctx, routes, state.AuditEntry{Actor: "import", Action: "import"}))
}

// TestPostgresToReadNeverMigrates: a store opened to read (sluice check)
// leaves an unmigrated database as it found it, and reads a migrated one.
func TestPostgresToReadNeverMigrates(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	ro, err := state.OpenPostgresToRead(ctx, pg.URL(), "")
	require.NoError(t, err)
	_, err = ro.Seeded(ctx)
	require.Error(t, err, "nothing was migrated, so there is nothing to read")
	require.NoError(t, ro.Close())
	rw, err := state.OpenPostgres(ctx, pg.URL(), "")
	require.NoError(t, err)
	defer rw.Close()
	ro, err = state.OpenPostgresToRead(ctx, pg.URL(), "")
	require.NoError(t, err)
	defer ro.Close()
	seeded, err := ro.Seeded(ctx)
	require.NoError(t, err)
	require.False(t, seeded)
}
