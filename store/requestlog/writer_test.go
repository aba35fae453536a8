package requestlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// memStore is an in-memory Store that records insertion order and can be
// made to fail or block.
type memStore struct {
	mu      sync.Mutex
	down    bool
	gate    chan struct{} // when non-nil, Insert waits for it to close
	ids     []string      // stored request_ids in insertion order
	seen    map[string]bool
	inserts []int // size of each successful Insert call
}

var errDown = errors.New("memstore: down")

func newMemStore() *memStore { return &memStore{seen: map[string]bool{}} }

func (m *memStore) setDown(down bool) {
	m.mu.Lock()
	m.down = down
	m.mu.Unlock()
}

func (m *memStore) Insert(ctx context.Context, rows []Row) error {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	for _, r := range rows {
		if !m.seen[r.RequestID] {
			m.seen[r.RequestID] = true
			m.ids = append(m.ids, r.RequestID)
		}
	}
	m.inserts = append(m.inserts, len(rows))
	return nil
}

func (m *memStore) Query(context.Context, Filter) (Page, error) { return Page{}, nil }
func (m *memStore) Traffic(context.Context, TrafficFilter) ([]TrafficCount, error) {
	return nil, nil
}
func (m *memStore) Ping(context.Context) error { return nil }
func (m *memStore) Close() error               { return nil }

func (m *memStore) stored() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.ids...)
}

func (m *memStore) insertSizes() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.inserts...)
}

func rowIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

func enqueueIDs(w *Writer, ids []string) {
	for _, id := range ids {
		w.Enqueue(&Row{RequestID: id, Org: "acme", RoutingDegraded: []string{"b", "a"}})
	}
}

func closeWriter(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Close(ctx))
}

const waitFor, tick = 10 * time.Second, 10 * time.Millisecond

func TestWriterBatchesBySize(t *testing.T) {
	m := newMemStore()
	w := NewWriter(m, WriterOptions{BatchSize: 10, FlushInterval: time.Hour})
	enqueueIDs(w, rowIDs("r", 35))
	require.Eventually(t, func() bool { return len(m.stored()) == 30 }, waitFor, tick)
	require.Equal(t, []int{10, 10, 10}, m.insertSizes())
	require.Eventually(t, func() bool { return w.Stats().QueueDepth == 5 }, waitFor, tick)
	closeWriter(t, w)
	require.Equal(t, rowIDs("r", 35), m.stored(), "Close flushes the partial batch")
	require.Equal(t, uint64(35), w.Stats().WrittenRows)
}

func TestWriterBatchesByInterval(t *testing.T) {
	m := newMemStore()
	w := NewWriter(m, WriterOptions{BatchSize: 1000, FlushInterval: 50 * time.Millisecond})
	defer closeWriter(t, w)
	enqueueIDs(w, rowIDs("r", 5))
	require.Eventually(t, func() bool { return len(m.stored()) == 5 }, waitFor, tick)
	require.Equal(t, []int{5}, m.insertSizes())
}

func TestWriterCloseFlushes(t *testing.T) {
	cases := []struct {
		name      string
		storeDown bool
	}{{"store up", false}, {"store down", true}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newMemStore()
			m.setDown(tc.storeDown)
			w := NewWriter(m, WriterOptions{BatchSize: 1000, FlushInterval: time.Hour, SpoolDir: dir})
			enqueueIDs(w, rowIDs("r", 10))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, w.Close(ctx))
			st := w.Stats()
			if !tc.storeDown {
				require.Equal(t, rowIDs("r", 10), m.stored())
				require.Zero(t, st.SpooledRows)
				// Without a spool, a row enqueued after Close is dropped
				// (counted), not blocked.
				nw := NewWriter(m, WriterOptions{})
				require.NoError(t, nw.Close(ctx))
				nw.Enqueue(&Row{RequestID: "late"})
				require.Equal(t, uint64(1), nw.Stats().DroppedRows)
				return
			}
			require.Empty(t, m.stored())
			require.Equal(t, uint64(10), st.SpooledRows)
			require.Positive(t, st.SpoolBytes)
			// Enqueue after Close is not blocked: the row goes to the
			// spool, and the next writer on it replays it.
			w.Enqueue(&Row{RequestID: "late"})
			require.Zero(t, w.Stats().DroppedRows)
			require.Equal(t, uint64(11), w.Stats().SpooledRows)
			m.setDown(false)
			w2 := NewWriter(m, WriterOptions{BatchSize: 1000, FlushInterval: time.Hour, SpoolDir: dir})
			require.NoError(t, w2.Close(ctx))
			require.Equal(t, append(rowIDs("r", 10), "late"), m.stored())
		})
	}
}

func TestWriterSpoolsWhileDownAndReplaysInOrder(t *testing.T) {
	dir := t.TempDir()
	m := newMemStore()
	m.setDown(true)
	// The queue holds every row: order is kept for rows that pass through
	// it (rows spilled from a full queue are only kept once each, as
	// TestWriterSpillsToSpoolWhenQueueFull checks).
	w := NewWriter(m, WriterOptions{BatchSize: 7, QueueSize: 100, FlushInterval: 20 * time.Millisecond, SpoolDir: dir,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	defer closeWriter(t, w)
	want := rowIDs("r", 60)
	enqueueIDs(w, want[:40])
	require.Eventually(t, func() bool { return w.Stats().SpooledRows == 40 }, waitFor, tick)
	require.Empty(t, m.stored())
	st := w.Stats()
	require.False(t, st.StoreUp)
	require.Positive(t, st.WriteErrors)
	require.Positive(t, st.SpoolBytes)

	m.setDown(false)
	enqueueIDs(w, want[40:]) // arrive while the spool drains: must queue behind it
	require.Eventually(t, func() bool { return len(m.stored()) == 60 }, waitFor, tick)
	require.Equal(t, want, m.stored(), "every row once, in enqueue order")
	require.Eventually(t, func() bool { return w.Stats().SpoolBytes == 0 }, waitFor, tick)
	st = w.Stats()
	require.True(t, st.StoreUp)
	require.GreaterOrEqual(t, st.ReplayedRows, uint64(40))
	require.Equal(t, uint64(60), st.WrittenRows)
	require.Zero(t, st.DroppedRows)
}

func TestWriterReplaysSpoolAfterRestart(t *testing.T) {
	dir := t.TempDir()
	down := newMemStore()
	down.setDown(true)
	w1 := NewWriter(down, WriterOptions{BatchSize: 5, QueueSize: 100, FlushInterval: time.Hour, SpoolDir: dir, RetryMin: time.Hour})
	want := rowIDs("r", 23)
	enqueueIDs(w1, want)
	closeWriter(t, w1)
	require.Equal(t, uint64(23), w1.Stats().SpooledRows)

	up := newMemStore()
	w2 := NewWriter(up, WriterOptions{BatchSize: 5, FlushInterval: 20 * time.Millisecond, SpoolDir: dir})
	defer closeWriter(t, w2)
	require.Eventually(t, func() bool { return len(up.stored()) == 23 }, waitFor, tick)
	require.Equal(t, want, up.stored())
	require.Equal(t, uint64(23), w2.Stats().ReplayedRows)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWriterSpoolBound(t *testing.T) {
	dir := t.TempDir()
	m := newMemStore()
	m.setDown(true)
	var logs syncBuffer
	w := NewWriter(m, WriterOptions{BatchSize: 10, FlushInterval: 10 * time.Millisecond, SpoolDir: dir,
		SpoolMaxBytes: 4 << 10, RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer closeWriter(t, w)
	enqueueIDs(w, rowIDs("a", 100))
	require.Eventually(t, func() bool {
		st := w.Stats()
		return st.SpooledRows+st.DroppedRows == 100
	}, waitFor, tick)
	st := w.Stats()
	require.Positive(t, st.DroppedRows)
	require.Positive(t, st.SpooledRows)
	require.LessOrEqual(t, st.SpoolBytes, int64(4<<10))
	fi, err := os.Stat(filepath.Join(dir, spoolDataFile))
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(4<<10))

	// Still accepting, never blocking.
	enqueueIDs(w, rowIDs("b", 50))
	require.Eventually(t, func() bool {
		st := w.Stats()
		return st.SpooledRows+st.DroppedRows == 150
	}, waitFor, tick)
	require.Equal(t, 1, strings.Count(logs.String(), "spool bound reached"), "one log line per episode")

	// The store comes back: what was spooled arrives, and new rows flow.
	m.setDown(false)
	spooled := int(w.Stats().SpooledRows)
	require.Eventually(t, func() bool { return len(m.stored()) == spooled }, waitFor, tick)
	enqueueIDs(w, rowIDs("c", 5))
	require.Eventually(t, func() bool { return len(m.stored()) == spooled+5 }, waitFor, tick)
}

func TestWriterSpillsToSpoolWhenQueueFull(t *testing.T) {
	dir := t.TempDir()
	m := newMemStore()
	gate := make(chan struct{})
	m.gate = gate
	w := NewWriter(m, WriterOptions{BatchSize: 2, QueueSize: 4, FlushInterval: 10 * time.Millisecond, SpoolDir: dir})
	defer closeWriter(t, w)
	want := rowIDs("r", 200)
	done := make(chan struct{})
	go func() {
		enqueueIDs(w, want) // the flusher is stuck in Insert: must not block
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Enqueue blocked on a full queue")
	}
	require.Positive(t, w.Stats().SpooledRows)
	close(gate)
	require.Eventually(t, func() bool { return len(m.stored()) == 200 }, waitFor, tick)
	require.ElementsMatch(t, want, m.stored(), "each row exactly once")
}

func TestWriterMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMemStore()
	w := NewWriter(m, WriterOptions{BatchSize: 3, FlushInterval: time.Hour, Registerer: reg})
	enqueueIDs(w, rowIDs("r", 7))
	require.Eventually(t, func() bool { return len(m.stored()) == 6 }, waitFor, tick)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if c := mt.GetCounter(); c != nil {
				got[mf.GetName()] = c.GetValue()
			} else {
				got[mf.GetName()] = mt.GetGauge().GetValue()
			}
		}
	}
	require.Equal(t, map[string]float64{
		"sluice_requestlog_queue_depth":         1,
		"sluice_requestlog_written_rows_total":  6,
		"sluice_requestlog_spooled_rows_total":  0,
		"sluice_requestlog_dropped_rows_total":  0,
		"sluice_requestlog_replayed_rows_total": 0,
		"sluice_requestlog_spool_bytes":         0,
		"sluice_requestlog_write_errors_total":  0,
	}, got)
	closeWriter(t, w)
	// Close unregisters, so a new writer can register on the same registry.
	w2 := NewWriter(m, WriterOptions{Registerer: reg})
	closeWriter(t, w2)
}

// TestWriterIdleHoldsNoRows: an idle writer keeps no row storage. Its
// queue's slots are pointers to pooled rows, so the default 4,000 slots cost
// kilobytes where 4,000 rows by value cost megabytes, and its batch, grown
// by a burst, is let go after an interval without rows.
func TestWriterIdleHoldsNoRows(t *testing.T) {
	live := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const writers, bound = 4, 256 << 10 // bytes a writer may hold idle
	base := live()
	ws := make([]*Writer, writers)
	for i := range ws {
		ws[i] = NewWriter(newMemStore(), WriterOptions{FlushInterval: 20 * time.Millisecond})
	}
	require.Less(t, (live()-base)/writers, int64(bound), "a new writer's idle heap")
	stores := make([]*memStore, writers)
	for i := range ws {
		closeWriter(t, ws[i])
		stores[i] = newMemStore()
		ws[i] = NewWriter(stores[i], WriterOptions{FlushInterval: 20 * time.Millisecond})
		enqueueIDs(ws[i], rowIDs(fmt.Sprint("w", i, "-"), 900)) // a batch that grows, then waits for the interval
	}
	for _, m := range stores {
		require.Eventually(t, func() bool { return len(m.stored()) == 900 }, waitFor, tick)
	}
	require.Eventually(t, func() bool { return (live()-base)/writers < bound }, waitFor, tick,
		"a writer idle for an interval after a burst still holds its batch")
	for _, w := range ws {
		closeWriter(t, w)
	}
}
