package shared_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

func open(t *testing.T, srv *redistest.Server) *shared.Client {
	t.Helper()
	c, err := shared.Open(context.Background(), shared.Options{URL: srv.URL(), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Heartbeat: 100 * time.Millisecond, Timeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.True(t, c.Up())
	return c
}

// eventually polls cond every 10 ms up to bound.
func eventually(t *testing.T, bound time.Duration, cond func() bool, msg string) {
	t.Helper()
	for end := time.Now().Add(bound); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", bound, msg)
		}
	}
}

// TestBudgetAcrossClients: reservations made concurrently by two replicas
// never hold more than the budget, and settling charges the cost and frees
// the rest.
func TestBudgetAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	limits := []budget.Limit{{Scope: budget.KeyScope("k"), USD: 1}, {Scope: budget.TeamScope("o", "t"), USD: 5}}
	var mu sync.Mutex
	var held float64
	var holds []*shared.Hold
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a
			if i%2 == 1 {
				c = b
			}
			h := c.Reserve(context.Background(), fmt.Sprint("r", i), shared.BudgetAsk{Month: "2026-12", Want: 0.1, Limits: limits, Lease: time.Minute})
			mu.Lock()
			defer mu.Unlock()
			if h.Grant() > 0 {
				held += h.Grant()
				holds = append(holds, h)
			}
		}()
	}
	wg.Wait()
	require.InDelta(t, 1.0, held, 1e-9, "the reservations fill the budget exactly, never more")
	require.LessOrEqual(t, a.Available(context.Background(), "2026-12", limits), 1e-9)
	// Settle one at 0.04 (charging key and team), release the rest.
	require.True(t, a.Write(context.Background(), &shared.Writes{Hold: holds[0], Month: "2026-12", Cost: 0.04,
		Scopes: []budget.Scope{budget.KeyScope("k"), budget.TeamScope("o", "t")}}))
	for _, h := range holds[1:] {
		b.Release(context.Background(), h)
	}
	require.InDelta(t, 0.96, b.Available(context.Background(), "2026-12", limits), 1e-9)
	require.InDelta(t, 0.96, a.Available(context.Background(), "2026-12", limits[:1]), 1e-9)
	require.InDelta(t, 4.96, a.Available(context.Background(), "2026-12", limits[1:]), 1e-9)
	// Unbounded want takes all that remains.
	h := a.Reserve(context.Background(), "all", shared.BudgetAsk{Month: "2026-12", Want: math.Inf(1), Limits: limits, Lease: time.Minute})
	require.InDelta(t, 0.96, h.Grant(), 1e-9)
}

// TestRateLimitAcrossClients: N requests per minute across the fleet, not N
// per replica; a parallel slot is freed on departure.
func TestRateLimitAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	rpm := []shared.Check{{Scope: "key:k", Kind: shared.RPM, Limit: 5, Cost: 1}}
	admitted := 0
	var retry time.Duration
	for i := range 12 {
		c := a
		if i%2 == 1 {
			c = b
		}
		r := c.Admit(context.Background(), &shared.Admission{ID: fmt.Sprint("q", i), Checks: rpm, Lease: time.Minute})
		require.False(t, r.Local)
		if r.Refused < 0 {
			admitted++
		} else {
			retry = r.RetryAfter
		}
	}
	require.Equal(t, 5, admitted)
	require.Greater(t, retry, time.Duration(0))
	require.LessOrEqual(t, retry, 12*time.Second)

	par := []shared.Check{{Scope: "team:o/t", Kind: shared.Parallel, Limit: 2, Cost: 1}}
	require.Equal(t, -1, a.Admit(context.Background(), &shared.Admission{ID: "p1", Checks: par, Lease: time.Minute}).Refused)
	require.Equal(t, -1, b.Admit(context.Background(), &shared.Admission{ID: "p2", Checks: par, Lease: time.Minute}).Refused)
	require.Equal(t, 0, a.Admit(context.Background(), &shared.Admission{ID: "p3", Checks: par, Lease: time.Minute}).Refused)
	b.Depart(shared.Departure{ID: "p2", Checks: par})
	eventually(t, 2*time.Second, func() bool {
		return a.Admit(context.Background(), &shared.Admission{ID: "p4", Checks: par, Lease: time.Minute}).Refused < 0
	}, "a departed slot frees")
}

// TestCacheAndPinsShared: what one replica writes, another reads in its
// admission; the cache stays within its bytes, oldest out first.
func TestCacheAndPinsShared(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	big := make([]byte, 600)
	for i := range 4 {
		require.True(t, a.Write(context.Background(), &shared.Writes{CacheKey: fmt.Sprint("k", i), Cache: big, CacheTTL: time.Minute, CacheMaxBytes: 2000,
			PinKey: "s1", Pin: []byte("m\x00p"), PinTTL: time.Minute}))
	}
	r := b.Admit(context.Background(), &shared.Admission{ID: "x", CacheKey: "k3", PinKey: "s1"})
	require.Equal(t, big, r.Cache)
	require.Equal(t, "m\x00p", string(r.Pin))
	require.Nil(t, b.Admit(context.Background(), &shared.Admission{ID: "y", CacheKey: "k0"}).Cache, "the oldest answer was evicted")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	total, err := rdb.Get(context.Background(), "sluice:cb").Int64()
	require.NoError(t, err)
	require.LessOrEqual(t, total, int64(2000))
}

// TestHealthMirrored: a target that failed on one replica is cold on
// another's mirror, and an answer clears it on both.
func TestHealthMirrored(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	k := failover.HealthKey{Route: "pool", Upstream: "u", Model: "m"}
	now := time.Now()
	for range 3 {
		a.Health().Failed(k, now)
	}
	eventually(t, 2*time.Second, func() bool { n, _ := b.Health().Failures(k); return n == 3 }, "b sees a's failures")
	a.Health().Answered(k)
	eventually(t, 2*time.Second, func() bool { n, _ := b.Health().Failures(k); return n == 0 }, "b sees the recovery")
}

// TestRedisDownAndBack: while Redis is down admissions are decided locally
// on a share of what remained, and the spend metered meanwhile reaches
// Redis once it is back.
func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	limits := []budget.Limit{{Scope: budget.KeyScope("k"), USD: 1}}
	scopes := []budget.Scope{budget.KeyScope("k")}
	h := c.Reserve(context.Background(), "r0", shared.BudgetAsk{Month: "2026-12", Want: 0.2, Limits: limits, Lease: time.Minute})
	require.True(t, c.Write(context.Background(), &shared.Writes{Hold: h, Month: "2026-12", Cost: 0.2, Scopes: scopes}))
	require.InDelta(t, 0.8, c.Available(context.Background(), "2026-12", limits), 1e-9)

	srv.Kill()
	r := c.Admit(context.Background(), &shared.Admission{ID: "d1", Budget: &shared.BudgetAsk{Month: "2026-12", Want: 0.5, Limits: limits, Lease: time.Minute}})
	require.True(t, r.Local)
	require.False(t, c.Up())
	require.False(t, c.Status().Up)
	require.NotEmpty(t, c.Status().Error)
	require.InDelta(t, 0.5, r.Hold.Grant(), 1e-9)
	require.False(t, c.Write(context.Background(), &shared.Writes{Hold: r.Hold, Month: "2026-12", Cost: 0.3, Scopes: scopes}))
	// One replica: its share is all that remained, less what it spent.
	require.InDelta(t, 0.5, c.Available(context.Background(), "2026-12", limits), 1e-9)

	require.NoError(t, srv.Restart())
	eventually(t, 5*time.Second, c.Up, "the client goes back to Redis")
	// Redis lost everything (no persistence in the test); the outage's
	// spend was pushed.
	require.InDelta(t, 0.7, c.Available(context.Background(), "2026-12", limits), 1e-9)
}
