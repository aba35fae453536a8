package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
	"github.com/sluicegw/sluice/store/state/pgtest"
)

// Keys the fleet test adds: one under a budget, one under a rate limit.
const (
	secretBudget = "sk-fleet-budget"
	secretLimit  = "sk-fleet-limited"
	fleetBudget  = 0.005 // USD a month for k-budget
	fleetRPM     = 5
)

func sha(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

// fleetEdits points a replica at the shared Redis, PostgreSQL and
// ClickHouse, and adds the budgeted and the rate-limited keys.
func fleetEdits(rd *redistest.Server, pg *pgtest.Server, ch *chtest.Server, db string) [][2]string {
	return [][2]string{
		{"kind = \"sqlite\"\n", fmt.Sprintf("kind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\n", ch.Addr(), db)},
		{"[retry]\n", fmt.Sprintf("[shared]\nredis_url = %q\n\n[state]\nkind = \"postgres\"\npostgres_url = %q\n\n[retry]\n", rd.URL(), pg.URL())},
		{"[[keys]]\nid = \"k-analyst\"", fmt.Sprintf("[[keys]]\nid = \"k-budget\"\nsha256 = %q\norg = \"acme\"\nteam = \"ops\"\nproject = \"p\"\nupstream = \"openai\"\nmonthly_budget_usd = %g\n\n"+
			"[[keys]]\nid = \"k-limited\"\nsha256 = %q\norg = \"acme\"\nteam = \"ops\"\nproject = \"p\"\nrate_limit = { rpm = %d }\n\n[[keys]]\nid = \"k-analyst\"",
			sha(secretBudget), fleetBudget, sha(secretLimit), fleetRPM)},
	}
}

// fleetPost sends a chat completion through the balancer with a key.
func fleetPost(t *testing.T, lb *balancer, secret, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, lb.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := lb.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// within polls cond every 20 ms and fails past bound: a functional bound,
// not a timing assertion.
func within(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(bound); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, bound)
		}
	}
}

func readiness(t *testing.T, h *harness) gateway.Readiness {
	t.Helper()
	_, b := h.get("/readyz", "")
	var rd gateway.Readiness
	require.NoError(t, json.Unmarshal(b, &rd), string(b))
	return rd
}

// filtersRead waits until every replica's cache-key filter read the keys
// published so far (the stream's last entry): an answer that landed is
// then a hit on any replica. A replica whose filter is not loaded reads
// Redis for every lookup anyway.
func filtersRead(t *testing.T, rdb *redis.Client, replicas []*harness) {
	t.Helper()
	last, err := rdb.XRevRangeN(context.Background(), "sluice:cf", "+", "-", 1).Result()
	require.NoError(t, err)
	require.Len(t, last, 1, "the batch of keys was published")
	after := func(id, than string) bool {
		ms, seq, _ := strings.Cut(id, "-")
		tms, tseq, _ := strings.Cut(than, "-")
		a, _ := strconv.ParseInt(ms, 10, 64)
		b, _ := strconv.ParseInt(tms, 10, 64)
		x, _ := strconv.ParseInt(seq, 10, 64)
		y, _ := strconv.ParseInt(tseq, 10, 64)
		return a > b || a == b && x >= y
	}
	for i, h := range replicas {
		within(t, 2*time.Second, fmt.Sprintf("replica %d's filter read the keys", i), func() bool {
			f := readiness(t, h).Shared.CacheFilter
			return f == nil || !f.Ready || after(f.ReadID, last[0].ID)
		})
	}
}

// TestFleet runs three replicas behind a round-robin balancer on one Redis,
// one PostgreSQL and one ClickHouse, and checks that they behave as one
// gateway: budgets, routes, pins, cache, health and rate limits; and that
// losing Redis fails no request and its return resumes sharing.
func TestFleet(t *testing.T) {
	rd, pg, ch := redistest.Start(t), pgtest.Start(t), chtest.Start(t)
	db := chtest.NewDatabaseName("fleet")
	const n = 3
	replicas := make([]*harness, n)
	for i := range replicas {
		replicas[i] = newHarness(t, fleetEdits(rd, pg, ch, db)...)
	}
	lb := newBalancer(t, replicas)
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	for i, h := range replicas {
		r := readiness(t, h)
		require.NotNil(t, r.Shared, "replica %d", i)
		require.True(t, r.Shared.Up, "replica %d", i)
		require.Equal(t, "postgres", r.State.Kind)
		require.True(t, r.State.Reachable)
	}

	t.Run("a stored response is placed from any replica", func(t *testing.T) {
		resp, b := replicas[0].do(http.MethodPost, "/v1/responses", secretBatch, `{"model": "openai/gpt-4o", "input": "Remember 7."}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		var stored struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(b, &stored))
		require.NotEmpty(t, stored.ID)
		// In Redis before the answer went out, with the key that stored it.
		v, err := rdb.Get(context.Background(), "sluice:resp:"+stored.ID).Result()
		require.NoError(t, err)
		require.Equal(t, "openai\x00k-batch", v)
		// Another replica knows it: another key on the same upstream is
		// told it does not exist, in the same words as for an id nobody
		// stored; a key whose upstream stores no responses is told that,
		// whatever the id.
		for _, id := range []string{stored.ID, "resp_never_stored"} {
			resp, b = replicas[1].do(http.MethodPost, "/v1/responses", secretBudget,
				`{"model": "openai/gpt-4o", "input": "Which?", "previous_response_id": "`+id+`"}`, "Content-Type", "application/json")
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", b)
			require.Contains(t, string(b), `"code":"not_found"`)
			resp, b = replicas[1].do(http.MethodPost, "/v1/responses", secretChat,
				`{"model": "openai/gpt-4o", "input": "Which?", "previous_response_id": "`+id+`"}`, "Content-Type", "application/json")
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s", b)
		}
	})

	t.Run("one budget across the fleet", func(t *testing.T) {
		const workers, each, maxTokens = 9, 6, 50
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					resp, b := fleetPost(t, lb, secretBudget, chatBody("openai/gpt-4o", fmt.Sprintf(`,"max_tokens":%d,"user":"b-%d-%d"`, maxTokens, w, i)))
					switch resp.StatusCode {
					case 200:
						ok.Add(1)
					case 402:
						refused.Add(1)
					default:
						t.Errorf("status %d: %s", resp.StatusCode, b)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%d answered, %d refused", ok.Load(), refused.Load())
		require.Positive(t, ok.Load())
		require.Positive(t, refused.Load(), "the budget bound the fleet")
		// Replicas settle their leases behind the answers (within a sync
		// interval, 100 ms): wait for the spend to land.
		var spent float64
		within(t, 3*time.Second, "the spend is settled in Redis", func() bool {
			spent, _ = rdb.HGet(context.Background(), "sluice:b:key:k-budget:"+budget.Month(time.Now()), "spent").Float64()
			return spent > fleetBudget/2
		})
		time.Sleep(300 * time.Millisecond) // every replica's pending spend
		spent, err := rdb.HGet(context.Background(), "sluice:b:key:k-budget:"+budget.Month(time.Now()), "spent").Float64()
		require.NoError(t, err)
		// One attempt's worst case: the prompt and max_tokens at the
		// highest prices of openai/gpt-4o (2.5 and 10 USD per million).
		prompt := float64(len(`[{"role":"user","content":"Hello there"}]`)+3) / 4
		worst := (prompt*2.5 + maxTokens*10) / 1e6
		require.LessOrEqual(t, spent, fleetBudget+worst, "spent %.6f of %.6f from %d answers", spent, fleetBudget, ok.Load())
		require.Greater(t, spent, fleetBudget/2, "the fleet spent the budget, not a replica's share of it")
	})

	t.Run("a route edit on one replica serves on all within 1s", func(t *testing.T) {
		status, b := replicas[0].admin("PUT", "/api/v1/routes/fleet-notes", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`)
		require.Equal(t, 201, status, string(b))
		for i, h := range replicas[1:] {
			within(t, time.Second, fmt.Sprintf("replica %d sees the new route", i+1), func() bool {
				return h.srv.Snapshot().Config.Route("fleet-notes") != nil
			})
			resp, body := h.post(secretChat, chatBody("fleet-notes", noChain))
			require.Equal(t, 200, resp.StatusCode, body)
			require.Equal(t, "openai/gpt-4o-mini", resp.Header.Get(gateway.HeaderServedModel))
		}
		// One audit trail for the fleet.
		status, b = replicas[2].admin("GET", "/api/v1/audit?limit=1", adminToken, "")
		require.Equal(t, 200, status)
		require.Contains(t, string(b), `"route_id":"fleet-notes"`)
	})

	t.Run("a session pin holds under round robin", func(t *testing.T) {
		r1, b := fleetPost(t, lb, secretChat, chatBody("openai/gpt-4o", `,"user":"pin"`), "X-Session-Id", "fleet-sess", "X-Sim-Fault", "status=503;provider=openai")
		require.Equal(t, 200, r1.StatusCode, b)
		r2, b := fleetPost(t, lb, secretChat, chatBody("openai/gpt-4o", `,"user":"pin-2"`), "X-Session-Id", "fleet-sess")
		require.Equal(t, 200, r2.StatusCode, b)
		id1, id2 := r1.Header.Get(gateway.HeaderRequestID), r2.Header.Get(gateway.HeaderRequestID)
		require.NotEqual(t, lb.served[id1], lb.served[id2], "round robin moved the session")
		first, second := replicas[0].row(id1), replicas[0].row(id2)
		require.Equal(t, "azure", first.ServedProvider)
		require.Equal(t, "azure", second.ServedProvider, "the pin held on another replica")
	})

	t.Run("a cached answer on one replica is a hit on another", func(t *testing.T) {
		body := chatBody("openai/gpt-4o", `,"user":"cache-across"`)
		entries := func() int64 { n, _ := rdb.ZCard(context.Background(), "sluice:cx").Result(); return n }
		before := entries()
		first, _ := fleetPost(t, lb, secretChat, body)
		require.Equal(t, 200, first.StatusCode)
		require.Empty(t, first.Header.Get(gateway.HeaderCache))
		// The answer is cached behind it (the next sync, 100 ms at most).
		within(t, 2*time.Second, "the answer lands in the shared cache", func() bool { return entries() > before })
		filtersRead(t, rdb, replicas)
		again, _ := fleetPost(t, lb, secretChat, body)
		require.Equal(t, "hit", again.Header.Get(gateway.HeaderCache))
		require.NotEqual(t, lb.served[first.Header.Get(gateway.HeaderRequestID)], lb.served[again.Header.Get(gateway.HeaderRequestID)])
	})

	t.Run("a target made cold by one replica is skipped by the others", func(t *testing.T) {
		for i := range 3 {
			resp, b := replicas[0].post(secretChat, chatBody("free-pool", noChain+fmt.Sprintf(`,"user":"cold-%d"`, i)), "X-Sim-Fault", "status=503;model=a/free-1")
			require.Equal(t, 200, resp.StatusCode, b)
			require.Equal(t, "b/free-2", resp.Header.Get(gateway.HeaderServedModel))
		}
		for i, h := range replicas[1:] {
			within(t, 2*time.Second, fmt.Sprintf("replica %d hears of the failures", i+1), func() bool {
				return h.srv.TargetFailures("free-pool", "market", "a/free-1") >= 3
			})
			resp, b := h.post(secretChat, chatBody("free-pool", noChain+fmt.Sprintf(`,"user":"skip-%d"`, i)))
			require.Equal(t, 200, resp.StatusCode, b)
			require.Equal(t, "b/free-2", resp.Header.Get(gateway.HeaderServedModel), "replica %d dialled the cold member", i+1)
			require.Equal(t, 1, h.row(resp.Header.Get(gateway.HeaderRequestID)).Attempts)
		}
	})

	t.Run("a rate limit of N per minute admits N across the fleet", func(t *testing.T) {
		var admitted, limited int
		var limitedID string
		for i := range 3 * n * 2 {
			resp, b := fleetPost(t, lb, secretLimit, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"rl-%d"`, i)))
			switch resp.StatusCode {
			case 200:
				admitted++
			case 429:
				limited++
				require.Contains(t, b, `"rate_limited"`)
				require.NotEmpty(t, resp.Header.Get("Retry-After"))
				limitedID = resp.Header.Get(gateway.HeaderRequestID)
			default:
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
		}
		require.Equal(t, fleetRPM, admitted, "N across the fleet, not N per replica")
		require.Equal(t, 3*n*2-fleetRPM, limited)
		row := replicas[1].row(limitedID)
		require.Equal(t, 429, row.Status)
		require.Equal(t, "rate_limited", row.RefusedCode)
	})

	t.Run("Redis killed mid-load fails no request; restarted, sharing resumes", func(t *testing.T) {
		var failed, served atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					select {
					case <-stop:
						return
					default:
					}
					resp, b := fleetPost(t, lb, secretChat, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"outage-%d-%d"`, w, i)),
						"X-Session-Id", fmt.Sprintf("outage-%d", w))
					if resp.StatusCode != 200 {
						failed.Add(1)
						t.Errorf("status %d during the outage: %s", resp.StatusCode, b)
					}
					served.Add(1)
				}
			}()
		}
		within(t, 10*time.Second, "load before the kill", func() bool { return served.Load() >= 20 })
		rd.Kill()
		within(t, 10*time.Second, "load after the kill", func() bool { return served.Load() >= 80 })
		// A replica learns Redis is down at its next call to it: a request's
		// read, or its pipeline's sync at the latest (a miss the cache-key
		// filter answers makes no call), so readiness says so within a sync.
		for i, h := range replicas {
			within(t, 10*time.Second, fmt.Sprintf("replica %d shows Redis down", i), func() bool { return !readiness(t, h).Shared.Up })
			require.True(t, readiness(t, h).Ready, "replica %d stays ready", i)
		}
		close(stop)
		wg.Wait()
		require.Zero(t, failed.Load())

		require.NoError(t, rd.Restart())
		for i, h := range replicas {
			within(t, 10*time.Second, fmt.Sprintf("replica %d back on Redis", i), func() bool { return readiness(t, h).Shared.Up })
		}
		body := chatBody("openai/gpt-4o", `,"user":"after-the-outage"`)
		entries := func() int64 { n, _ := rdb.ZCard(context.Background(), "sluice:cx").Result(); return n }
		before := entries()
		first, _ := fleetPost(t, lb, secretChat, body)
		require.Equal(t, 200, first.StatusCode)
		within(t, 2*time.Second, "the answer lands in the shared cache", func() bool { return entries() > before })
		filtersRead(t, rdb, replicas)
		again, _ := fleetPost(t, lb, secretChat, body)
		require.Equal(t, "hit", again.Header.Get(gateway.HeaderCache), "the cache is shared again")
	})

	t.Run("PostgreSQL down: route edits answer 503, serving goes on", func(t *testing.T) {
		pg.Stop()
		status, b := replicas[1].admin("PUT", "/api/v1/routes/fleet-notes", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`)
		require.Equal(t, 503, status, string(b))
		require.Contains(t, string(b), `"service_unavailable"`)
		for i, h := range replicas {
			resp, body := h.post(secretChat, chatBody("fleet-notes", noChain+`,"user":"pg-down"`))
			require.Equal(t, 200, resp.StatusCode, "replica %d: %s", i, body)
			require.Equal(t, "openai/gpt-4o-mini", resp.Header.Get(gateway.HeaderServedModel), "the routes loaded last")
			r := readiness(t, h)
			require.True(t, r.Ready)
			require.False(t, r.State.Reachable)
		}
		require.NoError(t, pg.Restart())
		within(t, 10*time.Second, "route edits work again", func() bool {
			status, _ := replicas[1].admin("PUT", "/api/v1/routes/fleet-notes", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`)
			return status == 200
		})
		within(t, 5*time.Second, "the other replicas serve the edit", func() bool {
			for _, h := range replicas {
				if rt := h.srv.Snapshot().Config.Route("fleet-notes"); rt == nil || rt.Targets[0].Model != "openai/gpt-4o" {
					return false
				}
			}
			return true
		})
	})
}
