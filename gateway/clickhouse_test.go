package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestClickHouseRequestLogSurvivesAnOutage runs the gateway on the
// ClickHouse request log, kills the server (SIGKILL) while a bounded load is
// running, restarts it, and checks that every request's row arrives exactly
// once. The request path never waits on the database meanwhile.
func TestClickHouseRequestLogSurvivesAnOutage(t *testing.T) {
	ch := chtest.Start(t)
	db := chtest.NewDatabaseName("gw")
	h := newHarness(t, [2]string{"kind = \"sqlite\"\n", fmt.Sprintf("kind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\n", ch.Addr(), db)})

	const total, workers = 240, 4
	var mu sync.Mutex
	ids := map[string]bool{}
	var sent sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		sent.Add(1)
		go func() {
			defer sent.Done()
			for i := range next {
				resp, b := h.post(secretChat, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"u%d"`, i)))
				require.Equal(t, 200, resp.StatusCode, string(b))
				mu.Lock()
				ids[resp.Header.Get(gateway.HeaderRequestID)] = true
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < total && time.Now().Before(deadline); i++ {
		switch i {
		case total / 4:
			ch.Kill()
		case 3 * total / 4:
			ch.Restart()
		}
		next <- i
	}
	close(next)
	sent.Wait()
	require.Len(t, ids, total)
	st := h.srv.WriterStats()
	require.Greater(t, st.WriteErrors+st.SpooledRows, uint64(0), "the outage was seen by the writer")

	// Every row arrives once the server is back: compare the request_id set.
	var got map[string]int
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		got = map[string]int{}
		f := requestlog.Filter{Limit: requestlog.MaxLimit}
		for {
			page, err := h.srv.Store().Query(context.Background(), f)
			if err != nil {
				break
			}
			for _, r := range page.Rows {
				got[r.RequestID]++
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
		if len(got) == total {
			break
		}
	}
	require.Len(t, got, total)
	for id := range ids {
		require.Equal(t, 1, got[id], "row %s exactly once", id)
	}
	require.Zero(t, h.srv.WriterStats().DroppedRows)
}
