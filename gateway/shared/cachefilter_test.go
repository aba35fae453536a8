package shared_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// openDriven opens a leased replica whose syncer never ticks by itself:
// the test runs each sync (shared.Sync), so the cadence is the test's.
func openDriven(t *testing.T, srv *redistest.Server) *shared.Client {
	t.Helper()
	c, err := shared.Open(context.Background(), shared.Options{URL: srv.URL(), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Heartbeat: time.Hour, Timeout: 5 * time.Second, Leased: true, SyncInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.True(t, c.Up())
	return c
}

// TestCacheFilterAcrossReplicas: a replica reads the cache only for a key
// its filter may hold; an answer stored on one replica is found by another
// once the writer's sync published it and the reader's sync read it (the
// bound docs/scaling.md states: two sync intervals plus their round
// trips); a replica started later loads the filter from the cache's index.
func TestCacheFilterAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a, b := openDriven(t, srv), openDriven(t, srv)
	ctx := context.Background()
	admit := func(c *shared.Client, key string) []byte {
		t.Helper()
		res := c.Admit(ctx, &shared.Admission{ID: "r", CacheKey: key})
		require.False(t, res.Local)
		return res.Cache
	}
	stats := func(c *shared.Client) shared.FilterStats { return c.FilterStats() }

	// Before its first sync the filter is not loaded: every lookup reads.
	require.Nil(t, admit(b, "k1"))
	require.Equal(t, shared.FilterStats{Asked: 1}, stats(b))
	require.Equal(t, &shared.FilterStats{Asked: 1}, b.Status().CacheFilter)
	shared.Sync(a)
	shared.Sync(b)
	require.True(t, stats(b).Ready)
	require.Nil(t, admit(b, "k1"))
	require.Equal(t, int64(1), stats(b).Skipped, "a sure miss reads nothing")

	// a stores an answer: queued until a's sync, then published.
	require.True(t, a.Write(ctx, &shared.Writes{CacheKey: "k1", Cache: []byte("answer one"), CacheTTL: time.Minute, CacheMaxBytes: 1 << 20}))
	shared.Sync(a)
	require.Nil(t, admit(b, "k1"), "b has not read the batch yet: a stale negative")
	shared.Sync(b)
	require.Equal(t, []byte("answer one"), admit(b, "k1"), "found once b's sync read a's batch")
	require.Equal(t, []byte("answer one"), admit(a, "k1"), "the writer's own filter holds its keys")
	skipped := stats(b).Skipped
	require.Nil(t, admit(b, "k2"))
	require.Equal(t, skipped+1, stats(b).Skipped)

	// A replica started later: its first sync loads the filter from the
	// index, and later batches come from the stream.
	c := openDriven(t, srv)
	require.Nil(t, admit(c, "k3"))
	shared.Sync(c)
	require.True(t, stats(c).Ready)
	require.Equal(t, 1, stats(c).Keys)
	require.Equal(t, []byte("answer one"), admit(c, "k1"))
	require.True(t, b.Write(ctx, &shared.Writes{CacheKey: "k3", Cache: []byte("answer three"), CacheTTL: time.Minute, CacheMaxBytes: 1 << 20}))
	shared.Sync(b)
	shared.Sync(c)
	shared.Sync(a)
	require.Equal(t, []byte("answer three"), admit(c, "k3"))
	require.Equal(t, []byte("answer three"), admit(a, "k3"))
	skipped = stats(c).Skipped
	require.Nil(t, admit(c, "k4"))
	require.Equal(t, skipped+1, stats(c).Skipped)
}

// TestCacheFilterAfterAnOutage: batches published while a replica could
// not read are not lost to it: after Redis answers again its filter is
// reloaded (every lookup reads meanwhile).
func TestCacheFilterAfterAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	a, b := openDriven(t, srv), openDriven(t, srv)
	ctx := context.Background()
	b.Admit(ctx, &shared.Admission{ID: "r", CacheKey: "k0"})
	shared.Sync(b)
	require.True(t, b.FilterStats().Ready)
	srv.Kill()
	shared.Sync(b) // its pipeline fails
	require.False(t, b.FilterStats().Ready, "a replica that lost Redis stops trusting its filter")
	require.NoError(t, srv.Restart())
	eventually(t, 10*time.Second, func() bool { shared.Beat(a); return a.Up() }, "a sees Redis again")
	require.True(t, a.Write(ctx, &shared.Writes{CacheKey: "k1", Cache: []byte("answer"), CacheTTL: time.Minute, CacheMaxBytes: 1 << 20}))
	shared.Sync(a)
	eventually(t, 10*time.Second, func() bool { shared.Beat(b); return b.Up() }, "b sees Redis again")
	require.Equal(t, []byte("answer"), b.Admit(ctx, &shared.Admission{ID: "r", CacheKey: "k1"}).Cache, "not loaded: read")
	shared.Sync(b)
	require.True(t, b.FilterStats().Ready)
	require.Equal(t, []byte("answer"), b.Admit(ctx, &shared.Admission{ID: "r", CacheKey: "k1"}).Cache)
}
