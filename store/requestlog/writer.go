package requestlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WriterOptions configures a Writer. Zero values select the defaults.
type WriterOptions struct {
	// BatchSize is the number of rows that triggers a flush. Default 1000.
	BatchSize int
	// FlushInterval flushes a partial batch this often. Default 1 s.
	// Whichever of BatchSize and FlushInterval comes first wins.
	FlushInterval time.Duration
	// QueueSize bounds the in-memory queue between Enqueue and the flusher.
	// When it is full, Enqueue appends the row to the spool instead of
	// blocking; such a row may reach the store before older rows still in
	// the queue (each row still arrives once). The queue only has to absorb
	// what arrives while a batch is being written. Default 4 × BatchSize,
	// at most maxDefaultQueue.
	QueueSize int
	// SpoolDir holds the spool: rows the store could not take, kept on disk
	// until it answers again and replayed in order, also across restarts.
	// Default "": no spool, such rows are dropped (and counted).
	SpoolDir string
	// SpoolMaxBytes bounds the spool file. Rows beyond it are dropped,
	// counted in sluice_requestlog_dropped_rows_total, and one warning is
	// logged per episode. Default 256 MiB.
	SpoolMaxBytes int64
	// WriteTimeout bounds each store Insert. Default 10 s.
	WriteTimeout time.Duration
	// RetryMin is the first wait before retrying a failed store; waits double
	// up to RetryMax. Defaults 500 ms and 30 s.
	RetryMin time.Duration
	// RetryMax caps the retry wait. Default 30 s.
	RetryMax time.Duration
	// Registerer receives the writer's metrics when non-nil. Default nil:
	// no registration (Stats still works).
	Registerer prometheus.Registerer
	// Logger receives warnings. Default slog.Default().
	Logger *slog.Logger
}

// maxDefaultQueue caps the default queue. The queue holds pointers to
// pooled rows (queuedRows), so a slot costs 8 bytes while it is empty and a
// row (~0.7 KB) only while one waits in it: an idle gateway does not keep
// QueueSize rows of storage it is not using.
const maxDefaultQueue = 4096

// queuedRows holds the copies of rows between Enqueue and the flusher, which
// copies each into its batch and puts it back.
var queuedRows = sync.Pool{New: func() any { return new(Row) }}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = min(4*o.BatchSize, maxDefaultQueue)
	}
	if o.SpoolMaxBytes <= 0 {
		o.SpoolMaxBytes = 256 << 20
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 500 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = o.RetryMin
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Stats is a snapshot of a Writer's counters, for /readyz and tests. The
// same numbers are exported as Prometheus metrics.
type Stats struct {
	// QueueDepth is the number of rows in memory, not yet flushed.
	QueueDepth int
	// WrittenRows counts rows the store accepted, replayed ones included.
	WrittenRows uint64
	// SpooledRows counts rows appended to the spool.
	SpooledRows uint64
	// DroppedRows counts rows lost: spool full, or no spool (a row
	// enqueued after Close without one included).
	DroppedRows uint64
	// ReplayedRows counts spooled rows later written to the store.
	ReplayedRows uint64
	// SpoolBytes is the spool file size.
	SpoolBytes int64
	// WriteErrors counts failed store inserts.
	WriteErrors uint64
	// StoreUp is false from a failed insert until the next successful one.
	StoreUp bool
}

// maxReplayBatchesPerTurn bounds how long the flusher spends replaying
// before it looks at the queue again.
const maxReplayBatchesPerTurn = 8

// Writer batches rows in front of a Store so that the request path never
// waits on the database. Create it with NewWriter and stop it with Close.
type Writer struct {
	store Store
	opts  WriterOptions
	log   *slog.Logger

	// mu guards closed against Enqueue racing Close: once closed is set no
	// row enters the queue, so the final drain sees every row.
	mu     sync.RWMutex
	closed bool
	queue  chan *Row // rows from queuedRows

	spoolMu      sync.Mutex
	spool        *spool // nil when disabled or unusable
	spoolFull    bool   // a drop was logged; reset when an append fits again
	closing      chan struct{}
	done         chan struct{}
	closeCtx     context.Context
	closeCtxMu   sync.Mutex
	batchLen     atomic.Int64
	storeDown    atomic.Bool
	written      atomic.Uint64
	spooled      atomic.Uint64
	dropped      atomic.Uint64
	replayed     atomic.Uint64
	writeErrors  atomic.Uint64
	spoolBytes   atomic.Int64
	backoff      time.Duration // flusher goroutine only
	closeOnce    sync.Once
	collectorSet []prometheus.Collector
}

// NewWriter starts a Writer in front of store. If opts.SpoolDir is set and
// holds rows from an earlier process, they are replayed once the store
// answers. If the spool cannot be opened the error is logged and the writer
// runs without one (Stats.DroppedRows then counts what a failing store loses).
// It panics if opts.Registerer rejects the metrics, a wiring mistake.
func NewWriter(store Store, opts WriterOptions) *Writer {
	o := opts.withDefaults()
	w := &Writer{
		store:   store,
		opts:    o,
		log:     o.Logger,
		queue:   make(chan *Row, o.QueueSize),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if o.SpoolDir != "" {
		sp, err := openSpool(o.SpoolDir, o.SpoolMaxBytes)
		if err != nil {
			w.log.Error("request log spool unavailable; rows the store refuses will be dropped", "err", err)
		} else {
			w.spool = sp
			w.spoolBytes.Store(sp.bytes())
		}
	}
	w.registerMetrics()
	go w.run()
	return w
}

func (w *Writer) registerMetrics() {
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	w.collectorSet = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_requestlog_queue_depth", Help: "Request-log rows in memory, not yet flushed.",
		}, func() float64 { return float64(w.queueDepth()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_requestlog_spool_bytes", Help: "Size of the request-log spool file.",
		}, func() float64 { return float64(w.spoolBytes.Load()) }),
		counter("sluice_requestlog_written_rows_total", "Request-log rows written to the store.", &w.written),
		counter("sluice_requestlog_spooled_rows_total", "Request-log rows appended to the spool.", &w.spooled),
		counter("sluice_requestlog_dropped_rows_total", "Request-log rows lost (spool full or unavailable).", &w.dropped),
		counter("sluice_requestlog_replayed_rows_total", "Spooled request-log rows replayed into the store.", &w.replayed),
		counter("sluice_requestlog_write_errors_total", "Failed request-log store inserts.", &w.writeErrors),
	}
	if w.opts.Registerer != nil {
		w.opts.Registerer.MustRegister(w.collectorSet...)
	}
}

func (w *Writer) queueDepth() int { return len(w.queue) + int(w.batchLen.Load()) }

// Stats returns the writer's current counters.
func (w *Writer) Stats() Stats {
	return Stats{
		QueueDepth:   w.queueDepth(),
		WrittenRows:  w.written.Load(),
		SpooledRows:  w.spooled.Load(),
		DroppedRows:  w.dropped.Load(),
		ReplayedRows: w.replayed.Load(),
		SpoolBytes:   w.spoolBytes.Load(),
		WriteErrors:  w.writeErrors.Load(),
		StoreUp:      !w.storeDown.Load(),
	}
}

// Enqueue records r without blocking on the store: it normalizes r in place
// (a zero TS becomes now) and queues a copy; when the queue is full it
// appends r to the spool (a local file write) instead. After Close, a row
// is appended to the spool directly (the next Writer on the same SpoolDir
// replays it); without a spool it is dropped.
func (w *Writer) Enqueue(r *Row) {
	r.normalize()
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		w.late(r)
		return
	}
	q := queuedRows.Get().(*Row)
	*q = *r
	select {
	case w.queue <- q:
		w.mu.RUnlock()
		return
	default:
	}
	w.mu.RUnlock()
	*q = Row{}
	queuedRows.Put(q)
	w.spill(r)
}

// spill sends a row the full queue has no room for to the spool: the
// flusher is behind (usually a slow store), and rows spilled here reach the
// store through the spool's replay.
//
//go:noinline
func (w *Writer) spill(r *Row) {
	w.toSpool([]Row{*r}, false)
}

// late spools a row enqueued after Close: a request the server cut at
// shutdown may record after the final flush, and its row is kept on disk
// for the next process rather than lost. The spool is opened, appended to
// (synced) and closed again for each such row; they are rare.
//
//go:noinline
func (w *Writer) late(r *Row) {
	w.spoolMu.Lock()
	defer w.spoolMu.Unlock()
	if w.opts.SpoolDir == "" {
		w.dropped.Add(1)
		return
	}
	sp, err := openSpool(w.opts.SpoolDir, w.opts.SpoolMaxBytes)
	if err != nil {
		w.dropped.Add(1)
		w.log.Error("request log: a row recorded after close could not be spooled", "request_id", r.RequestID, "err", err)
		return
	}
	n, err := sp.append([]Row{*r}, true)
	w.spooled.Add(uint64(n))
	if n == 0 {
		w.dropped.Add(1)
		if err == nil {
			err = errors.New("spool full")
		}
		w.log.Error("request log: a row recorded after close could not be spooled", "request_id", r.RequestID, "err", err)
	}
	_ = sp.close()
}

// Close stops accepting rows and flushes everything queued: to the store
// if it answers before ctx ends, otherwise to the spool. It also replays
// spooled rows while the store answers and ctx allows. Rows left in the
// spool are replayed by the next Writer on the same SpoolDir, and so are
// rows enqueued after Close, which go to the spool directly. Close returns
// ctx's error if the flush did not finish in time; calling it again returns nil.
func (w *Writer) Close(ctx context.Context) error {
	var err error
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.closeCtxMu.Lock()
		w.closeCtx = ctx
		w.closeCtxMu.Unlock()
		close(w.closing)
		select {
		case <-w.done:
		case <-ctx.Done():
			// The flusher works under ctx too, so it stops soon; wait so the
			// spool is consistent before it is closed.
			<-w.done
			err = fmt.Errorf("requestlog: writer close: %w", ctx.Err())
		}
		w.spoolMu.Lock()
		if w.spool != nil {
			if cerr := w.spool.close(); cerr != nil && err == nil {
				err = cerr
			}
			w.spool = nil
		}
		w.spoolMu.Unlock()
		if w.opts.Registerer != nil {
			for _, c := range w.collectorSet {
				w.opts.Registerer.Unregister(c)
			}
		}
	})
	return err
}

// run is the flusher goroutine.
func (w *Writer) run() {
	defer close(w.done)
	ticker := time.NewTicker(w.opts.FlushInterval)
	defer ticker.Stop()
	// The batch's storage grows with the traffic and is let go after an
	// interval without rows: an idle gateway keeps none. A few rows at
	// first (a trickle), then BatchSize at once, not by doubling.
	var batch []Row
	take := func(q *Row) {
		if len(batch) == cap(batch) {
			n := w.opts.BatchSize
			if cap(batch) == 0 {
				n = min(n, 64)
			}
			batch = append(make([]Row, 0, max(n, len(batch)+1)), batch...)
		}
		batch = append(batch, *q)
		*q = Row{}
		queuedRows.Put(q)
		w.batchLen.Store(int64(len(batch)))
	}
	var retry <-chan time.Time
	flush := func(ctx context.Context) {
		if len(batch) > 0 {
			w.flush(ctx, batch)
			// The store and the spool keep no row past the call: the
			// batch's storage serves the next one (cleared, so that it
			// holds no strings meanwhile).
			clear(batch)
			batch = batch[:0]
			w.batchLen.Store(0)
		}
	}
	for {
		if retry == nil && w.spoolPending() {
			retry = time.After(w.backoff)
		}
		select {
		case q := <-w.queue:
			take(q)
			if len(batch) >= w.opts.BatchSize {
				flush(context.Background())
			}
		case <-ticker.C:
			if len(batch) == 0 {
				batch = nil // a whole interval without a row
			}
			flush(context.Background())
		case <-retry:
			retry = nil
			w.replay(context.Background(), maxReplayBatchesPerTurn)
		case <-w.closing:
			w.closeCtxMu.Lock()
			ctx := w.closeCtx
			w.closeCtxMu.Unlock()
			// No Enqueue can add rows now: drain what is queued.
			for {
				select {
				case q := <-w.queue:
					take(q)
					if len(batch) >= w.opts.BatchSize {
						flush(ctx)
					}
					continue
				default:
				}
				break
			}
			flush(ctx)
			// Replay while the store answers; each turn either empties the
			// spool, makes progress, or fails and stops.
			for ctx.Err() == nil && w.spoolPending() {
				if !w.replay(ctx, maxReplayBatchesPerTurn) {
					break
				}
			}
			return
		}
	}
}

func (w *Writer) spoolPending() bool {
	w.spoolMu.Lock()
	defer w.spoolMu.Unlock()
	return w.spool != nil && w.spool.pending()
}

// flush writes batch to the store, or to the spool if older rows wait there
// (to keep the order) or the store fails.
func (w *Writer) flush(ctx context.Context, batch []Row) {
	if w.spoolPending() || (w.storeDown.Load() && w.spool != nil) {
		w.toSpool(batch, true)
		return
	}
	if err := w.insert(ctx, batch); err != nil {
		w.log.Warn("request log store insert failed; spooling", "rows", len(batch), "err", err)
		w.toSpool(batch, true)
		return
	}
}

// insert calls the store with the write timeout and keeps the health state.
func (w *Writer) insert(ctx context.Context, rows []Row) error {
	ctx, cancel := context.WithTimeout(ctx, w.opts.WriteTimeout)
	defer cancel()
	if err := w.store.Insert(ctx, rows); err != nil {
		w.writeErrors.Add(1)
		w.storeDown.Store(true)
		if w.backoff == 0 {
			w.backoff = w.opts.RetryMin
		} else {
			w.backoff = min(2*w.backoff, w.opts.RetryMax)
		}
		return err
	}
	w.written.Add(uint64(len(rows)))
	w.storeDown.Store(false)
	w.backoff = 0
	return nil
}

// replay moves up to maxBatches batches from the spool to the store, in
// order. It reports whether it made progress without a store failure.
func (w *Writer) replay(ctx context.Context, maxBatches int) bool {
	for range maxBatches {
		w.spoolMu.Lock()
		if w.spool == nil || !w.spool.pending() {
			w.spoolMu.Unlock()
			return true
		}
		rows, end, bad, err := w.spool.next(w.opts.BatchSize)
		w.spoolMu.Unlock()
		if err != nil {
			w.log.Error("request log spool read failed", "err", err)
			w.abortReplay()
			return false
		}
		if bad > 0 {
			w.dropped.Add(uint64(bad))
			w.log.Warn("request log spool: skipped undecodable rows", "rows", bad)
		}
		if len(rows) > 0 {
			if err := w.insert(ctx, rows); err != nil {
				w.abortReplay()
				w.log.Debug("request log replay failed; will retry", "err", err, "retry_in", w.backoff)
				return false
			}
			w.replayed.Add(uint64(len(rows)))
		}
		w.spoolMu.Lock()
		err = w.spool.commit(end)
		w.spoolBytes.Store(w.spool.bytes())
		w.spoolMu.Unlock()
		if err != nil {
			// The rows are stored; replaying them again is harmless.
			w.log.Error("request log spool commit failed", "err", err)
			return false
		}
	}
	return true
}

func (w *Writer) abortReplay() {
	w.spoolMu.Lock()
	if w.spool != nil {
		w.spool.abort()
	}
	w.spoolMu.Unlock()
}

// toSpool appends rows to the spool, counting and logging what does not fit.
func (w *Writer) toSpool(rows []Row, sync bool) {
	w.spoolMu.Lock()
	defer w.spoolMu.Unlock()
	if w.spool == nil {
		w.dropped.Add(uint64(len(rows)))
		return
	}
	n, err := w.spool.append(rows, sync)
	w.spooled.Add(uint64(n))
	w.spoolBytes.Store(w.spool.bytes())
	if lost := len(rows) - n; lost > 0 {
		w.dropped.Add(uint64(lost))
		if !w.spoolFull {
			w.spoolFull = true
			if err == nil {
				err = errors.New("spool full")
			}
			w.log.Warn("request log spool bound reached; dropping rows until it drains",
				"dir", w.opts.SpoolDir, "max_bytes", w.opts.SpoolMaxBytes, "err", err)
		}
		return
	}
	w.spoolFull = false
}
