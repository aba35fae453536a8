package shared

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// gateHook holds the first pipelines at the wire until released, and counts
// every pipeline sent.
type gateHook struct {
	sent    atomic.Int32
	held    atomic.Int32
	release chan struct{}
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.sent.Add(1) <= flushers {
			h.held.Add(1)
			<-h.release
		}
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*gateHook)(nil)

func openBatchClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := Open(context.Background(), Options{URL: url, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Heartbeat: time.Hour, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.True(t, c.Up())
	return c
}

// TestPipelinesShareRoundTrips: the pipelines of requests in flight
// together leave in a few round trips, not one each, and each request reads
// back its own commands' results.
func TestPipelinesShareRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	c := openBatchClient(t, srv.URL())
	const n = 40
	ctx := context.Background()
	for i := range n {
		require.NoError(t, c.rdb.Set(ctx, c.key("t", strconv.Itoa(i)), "v"+strconv.Itoa(i), 0).Err())
	}
	hook := &gateHook{release: make(chan struct{})}
	c.rdb.AddHook(hook)

	var filled atomic.Int32
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var get *redis.StringCmd
			cmds, err := c.pipe(ctx, func(p redis.Pipeliner) {
				filled.Add(1)
				get = p.Get(ctx, c.key("t", strconv.Itoa(i)))
			})
			if err == nil && len(cmds) != 1 {
				err = fmt.Errorf("%d commands returned, want its own 1", len(cmds))
			}
			if err == nil {
				got[i], err = get.Result()
			}
			errs[i] = err
		})
	}
	// The flushers hold their batches at the wire (both, unless one took
	// every call) and every other call waits in the queue: released now,
	// the queue leaves in a batch or two.
	deadline := time.Now().Add(10 * time.Second)
	settled := func() bool {
		queued := len(c.q.calls)
		return int(filled.Load())+queued == n && hook.held.Load() >= 1 && (hook.held.Load() == flushers || queued == 0)
	}
	for !settled() {
		require.True(t, time.Now().Before(deadline), "calls never all queued: held %d, filled %d, queued %d",
			hook.held.Load(), filled.Load(), len(c.q.calls))
		time.Sleep(time.Millisecond)
	}
	close(hook.release)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "call %d", i)
		require.Equal(t, "v"+strconv.Itoa(i), got[i], "call %d read another's result", i)
	}
	require.LessOrEqual(t, int(hook.sent.Load()), 2*flushers, "%d calls took %d round trips", n, hook.sent.Load())
}

// TestPipelineNoScriptRetried: a batch that meets scripts Redis forgot
// (SCRIPT FLUSH) loads them and sends again only the calls whose script
// failed; a call without a script in the same batches is sent once.
func TestPipelineNoScriptRetried(t *testing.T) {
	srv := redistest.Start(t)
	c := openBatchClient(t, srv.URL())
	ctx := context.Background()
	require.NoError(t, c.rdb.ScriptFlush(ctx).Err())
	var wg sync.WaitGroup
	var scriptFills, getFills atomic.Int32
	for range 8 {
		wg.Go(func() {
			var cmd *redis.Cmd
			_, err := c.pipe(ctx, func(p redis.Pipeliner) {
				scriptFills.Add(1)
				cmd = departScript.EvalSha(ctx, p, nil, "id", 0) // no keys: returns 1
			})
			if err == nil {
				var v int64
				v, err = cmd.Int64()
				if err == nil && v != 1 {
					err = fmt.Errorf("script returned %d", v)
				}
			}
			if err != nil {
				t.Errorf("script call: %v", err)
			}
		})
		wg.Go(func() {
			var get *redis.StringCmd
			_, err := c.pipe(ctx, func(p redis.Pipeliner) {
				getFills.Add(1)
				get = p.Get(ctx, c.key("t", "absent"))
			})
			if err != nil || get.Err() != redis.Nil {
				t.Errorf("get: %v, %v", err, get.Err())
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 8, getFills.Load(), "a call without a script was sent again")
	require.Greater(t, scriptFills.Load(), int32(8), "the flushed scripts never failed: nothing was retried")
	require.LessOrEqual(t, scriptFills.Load(), int32(16), "a script call was sent more than twice")
}

// TestPipeAfterClose: a pipeline sent after Close is refused at once, not
// left waiting for a flusher that has stopped.
func TestPipeAfterClose(t *testing.T) {
	srv := redistest.Start(t)
	c := openBatchClient(t, srv.URL())
	require.NoError(t, c.Close())
	done := make(chan error, 1)
	go func() {
		_, err := c.pipe(context.Background(), func(p redis.Pipeliner) { p.Ping(context.Background()) })
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, errClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("pipe after Close never returned")
	}
}
