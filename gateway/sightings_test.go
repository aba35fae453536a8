package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// TestResponseCacheSecondSighting: with [cache] store_after = 2 (the
// default) an answer is stored on its key's second sighting: a request
// sent three times reaches the upstream twice and is a hit the third time;
// with store_after = 1 the second is a hit.
func TestResponseCacheSecondSighting(t *testing.T) {
	for _, tc := range []struct {
		storeAfter string
		hits       []bool // per request: served from the cache
	}{
		{storeAfter: "2", hits: []bool{false, false, true, true}},
		{storeAfter: "1", hits: []bool{false, true, true, true}},
	} {
		t.Run("store_after="+tc.storeAfter, func(t *testing.T) {
			h := newHarness(t, [2]string{"store_after = 1", "store_after = " + tc.storeAfter})
			body := chatBody("openai/gpt-4o", `,"temperature":0.5`)
			calls := 0
			for i, hit := range tc.hits {
				resp, raw := h.post(secretChat, body)
				require.Equal(t, 200, resp.StatusCode, string(raw))
				require.Equal(t, hit, resp.Header.Get(gateway.HeaderCache) == "hit", "request %d", i+1)
				if !hit {
					calls++
				}
			}
			require.Len(t, h.sim.Calls(), calls)
		})
	}
}

// TestResponseCacheSecondSightingFleet: on a fleet the sightings count
// fleet-wide: a request seen once on replica a and once on replica b is
// stored by b (a's first sighting reached b with a's batch), and a third
// time, on a, it is a hit. Counted per replica, neither would have stored it.
func TestResponseCacheSecondSightingFleet(t *testing.T) {
	rd := redistest.Start(t)
	edits := [][2]string{{"store_after = 1\n", ""}, {"[retry]\n", fmt.Sprintf("[shared]\nredis_url = %q\n\n[retry]\n", rd.URL())}}
	a, b := newHarness(t, edits...), newHarness(t, edits...)
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	post := func(h *harness, body string) bool {
		t.Helper()
		resp, raw := h.post(secretChat, body)
		require.Equal(t, 200, resp.StatusCode, string(raw))
		return resp.Header.Get(gateway.HeaderCache) == "hit"
	}
	entries := func() int64 { n, _ := rdb.XLen(ctx, "sluice:cf").Result(); return n }

	// b's first lookup makes its filter, which reads the stream from its
	// first sync on.
	require.False(t, post(b, chatBody("openai/gpt-4o", `,"user":"warm"`)))
	within(t, 2*time.Second, "b's filter is loaded", func() bool {
		f := readiness(t, b).Shared.CacheFilter
		return f != nil && f.Ready
	})
	published := entries()

	body := chatBody("openai/gpt-4o", `,"user":"twice"`)
	require.False(t, post(a, body), "first sighting, on a")
	within(t, 2*time.Second, "a published its sighting", func() bool { return entries() > published })
	filtersRead(t, rdb, []*harness{b})
	require.False(t, post(b, body), "second sighting, on b: a miss, stored")
	within(t, 2*time.Second, "b's answer lands in the shared cache", func() bool {
		n, _ := rdb.ZCard(ctx, "sluice:cx").Result()
		return n == 1
	})
	filtersRead(t, rdb, []*harness{a, b})
	require.True(t, post(a, body), "third, on a: a hit")
	require.Len(t, a.sim.Calls(), 1)
	require.Len(t, b.sim.Calls(), 2, "the warm-up and the second sighting")
}
