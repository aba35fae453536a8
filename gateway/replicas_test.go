package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// balancer is a load balancer on loopback in front of gateway replicas: a
// reverse proxy that picks a replica per request, round robin or, with
// affinity, by hashing X-Session-Id (docs/scaling.md's advice for sessions).
type balancer struct {
	ts       *httptest.Server
	mu       sync.Mutex
	next     int
	affinity bool
	served   map[string]int // request id → index of the replica that answered
}

func newBalancer(t *testing.T, replicas []*harness) *balancer {
	t.Helper()
	targets := make([]*url.URL, len(replicas))
	for i, h := range replicas {
		u, err := url.Parse(h.ts.URL)
		require.NoError(t, err)
		targets[i] = u
	}
	lb := &balancer{served: map[string]int{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := lb.pick(pr.In.Header.Get("X-Session-Id"), len(targets))
			pr.SetURL(targets[i])
			pr.Out.Header.Set("X-Test-Replica", fmt.Sprint(i))
		},
		ModifyResponse: func(resp *http.Response) error {
			var i int
			_, _ = fmt.Sscan(resp.Request.Header.Get("X-Test-Replica"), &i)
			lb.mu.Lock()
			lb.served[resp.Header.Get(gateway.HeaderRequestID)] = i
			lb.mu.Unlock()
			return nil
		},
		FlushInterval: -1,
	}
	lb.ts = httptest.NewServer(proxy)
	t.Cleanup(lb.ts.Close)
	return lb
}

func (lb *balancer) pick(session string, n int) int {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.affinity && session != "" {
		f := fnv.New32a()
		_, _ = f.Write([]byte(session))
		return int(f.Sum32() % uint32(n))
	}
	i := lb.next % n
	lb.next++
	return i
}

// post sends a chat completion through the balancer and reads the answer.
func (lb *balancer) post(t *testing.T, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	return fleetPost(t, lb, secretChat, body, headers...)
}

// allRows reads every row of a replica's request log through its analytics
// API (what a compliance reviewer uses), page by page.
func allRows(t *testing.T, h *harness) map[string]requestlog.Row {
	t.Helper()
	got := map[string]requestlog.Row{}
	q := url.Values{"limit": {fmt.Sprint(requestlog.MaxLimit)}}
	for {
		resp, b := h.get("/api/v1/analytics/invocations?"+q.Encode(), adminToken)
		require.Equal(t, 200, resp.StatusCode, string(b))
		var page gateway.Invocations
		require.NoError(t, json.Unmarshal(b, &page))
		for _, r := range page.Data {
			_, dup := got[r.RequestID]
			require.False(t, dup, "row %s listed twice", r.RequestID)
			got[r.RequestID] = r
		}
		if page.NextCursor == "" {
			return got
		}
		q.Set("cursor", page.NextCursor)
	}
}

// TestReplicasBehindABalancer tests what docs/scaling.md says N replicas
// need and get. Three replicas, each with its own copy of the configuration
// directory and its own data_dir, log to one ClickHouse database behind a
// round-robin balancer (a real reverse proxy on loopback):
//   - every replica serves the same configuration revision and decides the
//     same request the same way (the request path is stateless);
//   - every row reaches the shared log exactly once, and each replica's
//     analytics see the rows the others served;
//   - session pins are per replica: round robin loses them, affinity on
//     X-Session-Id keeps them.
func TestReplicasBehindABalancer(t *testing.T) {
	ch := chtest.Start(t)
	db := chtest.NewDatabaseName("replicas")
	store := [2]string{"kind = \"sqlite\"\n", fmt.Sprintf("kind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\n", ch.Addr(), db)}
	noCache := [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"}
	const n = 3
	replicas := make([]*harness, n)
	for i := range replicas {
		replicas[i] = newHarness(t, store, noCache)
	}
	lb := newBalancer(t, replicas)

	// One revision everywhere, though each replica reads its own copy.
	var revision string
	for i, h := range replicas {
		resp, b := h.get("/readyz", "")
		require.Equal(t, 200, resp.StatusCode, string(b))
		var rd gateway.Readiness
		require.NoError(t, json.Unmarshal(b, &rd))
		require.NotEmpty(t, rd.Config.Revision)
		if i == 0 {
			revision = rd.Config.Revision
		}
		require.Equal(t, revision, rd.Config.Revision, "replica %d", i)
	}

	// Round robin: each body goes to every replica once (rounds of n).
	const rounds = 4
	bodyOf := map[string]string{} // request id → body
	for r := 0; r < rounds; r++ {
		stream := r%2 == 1
		body := chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"round-%d","stream":%t`, r, stream))
		for i := 0; i < n; i++ {
			resp, b := lb.post(t, body)
			require.Equal(t, 200, resp.StatusCode, b)
			if stream {
				require.Contains(t, b, "data: [DONE]")
			}
			bodyOf[resp.Header.Get(gateway.HeaderRequestID)] = body
		}
	}
	require.Len(t, bodyOf, rounds*n, "a distinct request id per request")
	perReplica := make([]int, n)
	for id := range bodyOf {
		perReplica[lb.served[id]]++
	}
	require.Equal(t, []int{rounds, rounds, rounds}, perReplica)

	// The shared log: every replica lists every row once, whichever replica
	// served it.
	var rows map[string]requestlog.Row
	for i, h := range replicas {
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			rows = allRows(t, h)
			if len(rows) >= len(bodyOf) || time.Now().After(end) {
				break
			}
		}
		require.Len(t, rows, len(bodyOf), "replica %d's view of the shared log", i)
		for id := range bodyOf {
			row, ok := rows[id]
			require.True(t, ok, "replica %d does not list %s, served by replica %d", i, id, lb.served[id])
			require.Equal(t, 200, row.Status)
			require.Equal(t, "k-chat", row.KeyID)
		}
	}
	// Each replica's summary (ClickHouse aggregates it) counts them all.
	for i, h := range replicas {
		sums, err := requestlog.Summarize(context.Background(), h.srv.Store(), requestlog.Filter{}, requestlog.BucketDay)
		require.NoError(t, err)
		var total int64
		for _, d := range sums {
			total += d.Total
		}
		require.Equal(t, int64(len(bodyOf)), total, "replica %d's summary", i)
	}
	// Every replica decided and routed the same body the same way.
	type decided struct{ decided, upstream, model, provider string }
	want := map[string]decided{}
	for id, body := range bodyOf {
		r := rows[id]
		got := decided{r.DecidedModel, r.Upstream, r.ServedModel, r.ServedProvider}
		require.NotEmpty(t, got.model)
		if w, ok := want[body]; ok {
			require.Equal(t, w, got, "replica %d served %s differently", lb.served[id], body)
		}
		want[body] = got
	}
	require.Len(t, want, rounds)

	// Sessions. Turn 1 fails over from openai to azure and pins azure;
	// turn 2 keeps azure only on the replica that holds the pin.
	turns := func(session string) (first, second requestlog.Row, sameReplica bool) {
		t.Helper()
		r1, b := lb.post(t, chatBody("openai/gpt-4o", ""), "X-Session-Id", session, "X-Sim-Fault", "status=503;provider=openai")
		require.Equal(t, 200, r1.StatusCode, b)
		r2, b := lb.post(t, chatBody("openai/gpt-4o", ""), "X-Session-Id", session)
		require.Equal(t, 200, r2.StatusCode, b)
		id1, id2 := r1.Header.Get(gateway.HeaderRequestID), r2.Header.Get(gateway.HeaderRequestID)
		return replicas[0].row(id1), replicas[0].row(id2), lb.served[id1] == lb.served[id2]
	}
	// Round robin moves turn 2 to the next replica, which has no pin: it
	// is served as a first turn, by the team's preferred provider.
	first, second, same := turns("sess-round-robin")
	require.False(t, same)
	require.Equal(t, "azure", first.ServedProvider)
	require.Equal(t, "openai", second.ServedProvider)
	// Affinity on X-Session-Id keeps the session on one replica and its pin.
	lb.mu.Lock()
	lb.affinity = true
	lb.mu.Unlock()
	first, second, same = turns("sess-affinity")
	require.True(t, same)
	require.Equal(t, "azure", first.ServedProvider)
	require.Equal(t, "azure", second.ServedProvider)
	require.Equal(t, "pin", second.SessionAffinity)
}
