package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/state"
	"github.com/sluicegw/sluice/store/state/pgtest"
)

// startingStore is a shared state store whose Watch lets the test change
// the routes while a replica starts: before its LISTEN, and once the LISTEN
// is in place but before the replica is told so.
type startingStore struct {
	state.Store
	n                         state.Notifier
	beforeListen, afterListen func()
}

// Watch implements [state.Notifier.Watch].
func (s startingStore) Watch(ctx context.Context, listening, changed func()) {
	s.beforeListen()
	s.n.Watch(ctx, func() { s.afterListen(); listening() }, changed)
}

// TestStateChangeWhileStarting: a replica listens to the shared state store
// before it loads the routes, so a route another replica changes while it
// starts is served as soon as it is up, whether the change came before its
// LISTEN (then it is in what it loads) or after (then it is heard too).
//
// It fails on a replica that loads before it listens: with New
// (gateway/server.go) changed to call listenState after withStoredRoutes,
// the route added before the LISTEN was missing from what the replica
// served (until the next change would have been heard).
func TestStateChangeWhileStarting(t *testing.T) {
	pg := pgtest.Start(t)
	edits := [2]string{"[retry]\n", fmt.Sprintf("[state]\nkind = \"postgres\"\npostgres_url = %q\n\n[retry]\n", pg.URL())}
	// The first replica seeds the store with the file's routes.
	first := newHarness(t, edits)
	ctx := context.Background()
	other, err := state.OpenPostgres(ctx, pg.URL(), "")
	require.NoError(t, err)
	defer other.Close()
	addRoute := func(alias string) func() {
		return func() {
			require.NoError(t, other.Update(ctx, func(cur []profiles.Route) ([]profiles.Route, state.AuditEntry, error) {
				r := cur[0]
				r.Model = alias
				r.Targets = append([]profiles.Target(nil), r.Targets...)
				return append(cur, r), state.AuditEntry{Actor: "t", Action: "route.add", RouteID: alias}, nil
			}))
		}
	}
	st, err := state.OpenPostgres(ctx, pg.URL(), "")
	require.NoError(t, err)
	wrapped := startingStore{Store: st, n: st.(state.Notifier),
		beforeListen: addRoute("added-before-listen"), afterListen: addRoute("added-after-listen")}
	second := newHarnessOpts(t, nil, nil, func(o *gateway.Options) { o.State = wrapped }, edits)
	var served []string
	for _, r := range second.srv.Snapshot().Config.Routes {
		served = append(served, r.Model)
	}
	require.Contains(t, served, "added-before-listen", "a change made before the replica listened")
	require.Contains(t, served, "added-after-listen", "a change made once it listened, before it loaded")
	// The replica that was up all along heard both.
	within(t, 10*time.Second, "the first replica hears the changes", func() bool {
		n := 0
		for _, r := range first.srv.Snapshot().Config.Routes {
			if r.Model == "added-before-listen" || r.Model == "added-after-listen" {
				n++
			}
		}
		return n == 2
	})
}
