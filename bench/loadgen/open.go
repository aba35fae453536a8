package main

// The open-streams mode: what a gateway costs per stream held open.
//
// W workers start one after another, spread evenly over the ramp, and each
// streams back to back until the deadline (the ramp plus the hold); streams in
// flight at the deadline finish (each is bounded by -timeout). Against an
// upstream whose streams last seconds (fakeupstream -first-token 300ms
// -chunks 20 -interval 250ms) that keeps about W streams open at once,
// desynchronised. Before the ramp a warm-up runs and the watched processes'
// idle RSS, threads and goroutines are read; during the run they are sampled,
// and the result divides what grew by the streams held open.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Bounds of an open-streams run, whatever the flags say. A process here may
// hold at most 20,000 open files; loadgen needs one per stream and a margin.
const (
	maxOpenWorkers = 16_000
	maxWarmup      = 1000
	fdMargin       = 64
	// openBufSize sizes each stream's reader: SSE events are a few hundred
	// bytes, and thousands of readers are alive at once.
	openBufSize = 4 << 10
	// errorBackoff is how long a worker waits after a failed stream.
	errorBackoff = 100 * time.Millisecond
)

// OpenConfig is one open-streams run.
type OpenConfig struct {
	Config // URL, Key, Model, Headers, Timeout, Warmup (streams), Watch, Label, Meta

	Workers int           // streams held open (one worker each)
	Ramp    time.Duration // workers start spread evenly over this
	Hold    time.Duration // after the ramp, workers start new streams this long
	// UpstreamTTFB is the upstream's own first-token delay (fakeupstream
	// -first-token): TTFB minus it is what the path to the upstream adds.
	UpstreamTTFB time.Duration
	// GoroutinesURL answers go_goroutines in the Prometheus text format
	// (sluice's /metrics, bareproxy's -debug-addr /metrics): the first
	// watched process's goroutines. "" = not sampled.
	GoroutinesURL string
	// UpstreamStatsURL is fakeupstream's GET /stats: streams open at the
	// far side of the gateway. "" = not sampled.
	UpstreamStatsURL string
	// Settle is the pause between the warm-up and reading the idle values.
	Settle time.Duration
}

// OpenStats is what an open-streams run adds to its Result.
type OpenStats struct {
	Workers int     `json:"workers"`
	RampS   float64 `json:"ramp_s"`
	HoldS   float64 `json:"hold_s"`
	// Streams started in all; SteadyStreams of them started after the
	// ramp, and the result's TTFB is theirs.
	Streams         int     `json:"streams"`
	SteadyStreams   int     `json:"steady_streams"`
	Chunks          int64   `json:"chunks"` // stream events received, [DONE] not counted
	ChunksPerStream float64 `json:"chunks_per_stream"`
	// OpenMin and OpenMax are the streams loadgen had open, sampled every
	// 50 ms during the hold (after the ramp, before the deadline).
	OpenMin int `json:"open_min"`
	OpenMax int `json:"open_max"`
	// UpstreamOpenMin and UpstreamOpenMax are the streams the upstream was
	// writing, sampled from UpstreamStatsURL during the hold; nil when not
	// sampled.
	UpstreamOpenMin *int        `json:"upstream_open_min,omitempty"`
	UpstreamOpenMax *int        `json:"upstream_open_max,omitempty"`
	UpstreamTTFBMs  float64     `json:"upstream_ttfb_ms"`
	TTFBAdded       Percentiles `json:"ttfb_added_ms"` // steady streams' TTFB minus UpstreamTTFB
	NoFile          uint64      `json:"nofile"`        // loadgen's open-file soft limit
	Watched         []OpenWatch `json:"watch,omitempty"`
}

// OpenWatch is one watched process over an open-streams run.
type OpenWatch struct {
	PID       int   `json:"pid"`
	IdleRSSKB int64 `json:"idle_rss_kb"` // VmRSS after the warm-up, before the ramp
	PeakRSSKB int64 `json:"peak_rss_kb"` // highest VmRSS sampled every 50 ms during the run
	VmHWMKB   int64 `json:"vm_hwm_kb"`
	// MemPerStreamKiB is (PeakRSSKB − IdleRSSKB) / Workers.
	MemPerStreamKiB float64 `json:"mem_per_stream_kib"`
	ThreadsIdle     int64   `json:"threads_idle"`
	ThreadsMax      int64   `json:"threads_max"`
	// Goroutines is set for the first watched process when GoroutinesURL
	// was given.
	Goroutines *GoroutineCount `json:"goroutines,omitempty"`
	CPUMs      float64         `json:"cpu_ms"` // utime+stime over the run (ramp, hold, drain)
	// CPUMsPerStream and CPUUsPerChunk divide CPUMs by the streams started
	// and the events received.
	CPUMsPerStream float64 `json:"cpu_ms_per_stream"`
	CPUUsPerChunk  float64 `json:"cpu_us_per_chunk"`
	SampleErrors   int     `json:"sample_errors,omitempty"`
}

// GoroutineCount is a process's goroutines idle and at most during the run.
type GoroutineCount struct {
	Idle int `json:"idle"`
	Max  int `json:"max"`
	// PerStream is (Max − Idle) / Workers.
	PerStream    float64 `json:"per_stream"`
	SampleErrors int     `json:"sample_errors,omitempty"`
}

// validate checks the bounds of an open-streams run against nofile, the
// open-file soft limit.
func (c *OpenConfig) validate(nofile uint64) error {
	if err := CheckLoopback(c.URL); err != nil {
		return err
	}
	for _, u := range []string{c.GoroutinesURL, c.UpstreamStatsURL} {
		if u == "" {
			continue
		}
		if err := CheckLoopback(u); err != nil {
			return err
		}
	}
	switch {
	case c.Workers < 1 || c.Workers > maxOpenWorkers:
		return fmt.Errorf("-open %d: want 1..%d", c.Workers, maxOpenWorkers)
	case uint64(c.Workers+fdMargin) > nofile:
		return fmt.Errorf("-open %d: needs %d open files, the limit is %d (raise the hard limit)", c.Workers, c.Workers+fdMargin, nofile)
	case c.Ramp < 0 || c.Hold <= 0 || c.Ramp+c.Hold > maxDuration:
		return fmt.Errorf("-ramp %v -hold %v: want ramp ≥ 0, hold > 0, together ≤ %v (a run is bounded in time)", c.Ramp, c.Hold, maxDuration)
	case c.Warmup < 0 || c.Warmup > maxWarmup:
		return fmt.Errorf("-warmup %d: want 0..%d in open-streams mode", c.Warmup, maxWarmup)
	case c.Timeout <= 0:
		return errors.New("-timeout must be positive")
	case c.UpstreamTTFB < 0 || c.Settle < 0:
		return errors.New("-upstream-ttfb and -settle must not be negative")
	}
	return nil
}

// raiseNoFile raises the soft limit on open files to the hard one and
// returns the soft limit in force. (Go's runtime already raises it at start
// since Go 1.19; doing it here says so where it matters, and the limit is
// what validate checks the workers against.)
func raiseNoFile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = want.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, err
		}
		lim = want
	}
	return lim.Cur, nil
}

// RunOpen performs the warm-up, reads the idle values and holds
// cfg.Workers streams open for the ramp and the hold.
func RunOpen(ctx context.Context, cfg OpenConfig) (*Result, error) {
	nofile, err := raiseNoFile()
	if err != nil && nofile == 0 {
		return nil, fmt.Errorf("open-file limit: %w", err)
	}
	if err := cfg.validate(nofile); err != nil {
		return nil, err
	}
	cfg.Stream = true
	body := requestBody(&cfg.Config)
	tr := &http.Transport{
		DialContext:         loopbackDialer().DialContext,
		MaxIdleConns:        cfg.Workers + 16,
		MaxIdleConnsPerHost: cfg.Workers + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     openBufSize,
		ReadBufferSize:      openBufSize,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	var open atomic.Int64
	do := func(ctx context.Context) sample {
		open.Add(1)
		defer open.Add(-1)
		return one(ctx, client, &cfg.Config, body, openBufSize)
	}

	if cfg.Warmup > 0 {
		runPhase(ctx, min(cfg.Warmup, 64), cfg.Warmup, maxDuration, do)
	}
	if !sleepCtx(ctx, cfg.Settle) {
		return nil, ctx.Err()
	}

	probe := &http.Client{Transport: &http.Transport{DialContext: loopbackDialer().DialContext, MaxIdleConnsPerHost: 2}, Timeout: 2 * time.Second}
	defer probe.CloseIdleConnections()
	idle := make([]status, len(cfg.Watch))
	for i, pid := range cfg.Watch {
		st, err := readStatus(pid)
		if err != nil {
			return nil, fmt.Errorf("-watch %d: %w", pid, err)
		}
		idle[i] = st
	}
	var gor *goroutineSampler
	if cfg.GoroutinesURL != "" && len(cfg.Watch) > 0 {
		n, err := fetchGoroutines(ctx, probe, cfg.GoroutinesURL)
		if err != nil {
			return nil, fmt.Errorf("-goroutines: %w", err)
		}
		gor = &goroutineSampler{idle: n, max: n}
	}
	watchers := make([]*watcher, len(cfg.Watch))
	for i, pid := range cfg.Watch {
		w, err := startWatch(pid)
		if err != nil {
			return nil, err
		}
		watchers[i] = w
	}

	cores0, _ := readCoreTimes()
	start := time.Now()
	rampEnd := start.Add(cfg.Ramp)
	deadline := rampEnd.Add(cfg.Hold)
	stop := make(chan struct{})
	var samplers sync.WaitGroup
	openRange := newRange()
	samplers.Go(func() { // loadgen's open streams during the hold
		every(stop, 50*time.Millisecond, func(now time.Time) {
			if inHold(now, rampEnd, deadline) {
				openRange.add(int(open.Load()))
			}
		})
	})
	upRange := newRange()
	if cfg.UpstreamStatsURL != "" {
		samplers.Go(func() {
			every(stop, 250*time.Millisecond, func(now time.Time) {
				if !inHold(now, rampEnd, deadline) {
					return
				}
				if n, err := fetchUpstreamOpen(ctx, probe, cfg.UpstreamStatsURL); err == nil && inHold(time.Now(), rampEnd, deadline) {
					upRange.add(n)
				}
			})
		})
	}
	if gor != nil {
		samplers.Go(func() {
			every(stop, time.Second, func(time.Time) { gor.sample(ctx, probe, cfg.GoroutinesURL) })
		})
	}

	samples := holdOpen(ctx, cfg.Workers, start, cfg.Ramp, deadline, do)
	elapsed := time.Since(start)
	close(stop)
	samplers.Wait()
	cores1, _ := readCoreTimes()

	res := summarizeOpen(samples, elapsed, rampEnd, cfg.UpstreamTTFB)
	if len(cfg.Meta) > 0 {
		res.Meta = cfg.Meta
	}
	res.Label, res.URL, res.Model, res.Stream, res.Concurrency = cfg.Label, cfg.URL, cfg.Model, true, cfg.Workers
	res.StoppedBy, res.StartedAt = "d", start.UTC()
	res.CoreBusyPct = coreBusy(cores0, cores1)
	o := res.Open
	o.Workers, o.RampS, o.HoldS, o.NoFile = cfg.Workers, cfg.Ramp.Seconds(), cfg.Hold.Seconds(), nofile
	o.OpenMin, o.OpenMax = openRange.minMax()
	if cfg.UpstreamStatsURL != "" && upRange.n > 0 {
		lo, hi := upRange.minMax()
		o.UpstreamOpenMin, o.UpstreamOpenMax = &lo, &hi
	}
	for i, w := range watchers {
		wr := w.stop(res.Requests)
		ow := OpenWatch{PID: wr.PID, IdleRSSKB: idle[i].rss, PeakRSSKB: wr.PeakRSSKB, VmHWMKB: wr.VmHWMKB,
			ThreadsIdle: idle[i].threads, ThreadsMax: max(wr.ThreadsMax, idle[i].threads), CPUMs: wr.CPUMs, SampleErrors: wr.SampleErrors}
		ow.MemPerStreamKiB = round2(float64(ow.PeakRSSKB-ow.IdleRSSKB) / float64(cfg.Workers))
		ow.CPUMsPerStream, ow.CPUUsPerChunk = perStreamAndChunk(wr.CPUMs, o.Streams, o.Chunks)
		if i == 0 && gor != nil {
			ow.Goroutines = gor.result(cfg.Workers)
		}
		o.Watched = append(o.Watched, ow)
	}
	return res, nil
}

// holdOpen runs workers streaming back to back: worker w starts at
// start + ramp·w/workers and starts no stream after deadline; after a failed
// stream it waits errorBackoff.
func holdOpen(ctx context.Context, workers int, start time.Time, ramp time.Duration, deadline time.Time, do func(context.Context) sample) []sample {
	per := make([][]sample, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if !sleepCtx(ctx, time.Until(rampStart(start, ramp, w, workers))) {
				return
			}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				s := do(ctx)
				per[w] = append(per[w], s)
				if s.err != "" {
					// A target that refuses or cuts streams is not hammered
					// in a tight loop by thousands of workers at once.
					sleepCtx(ctx, min(errorBackoff, time.Until(deadline)))
				}
			}
		})
	}
	wg.Wait()
	return slices.Concat(per...)
}

// rampStart is when worker w of workers starts: spread evenly over the ramp,
// the first at start.
func rampStart(start time.Time, ramp time.Duration, w, workers int) time.Time {
	return start.Add(time.Duration(int64(ramp) * int64(w) / int64(workers)))
}

// sleepCtx waits d or until ctx is done; it reports whether it waited d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// every calls f every d until stop is closed.
func every(stop <-chan struct{}, d time.Duration, f func(time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// inHold reports whether now is in the hold: after the ramp, before the
// deadline.
func inHold(now, rampEnd, deadline time.Time) bool {
	return !now.Before(rampEnd) && now.Before(deadline)
}

// intRange is the least and greatest of the values added, safe for
// concurrent use.
type intRange struct {
	mu     sync.Mutex
	n      int
	lo, hi int
}

// newRange returns an empty range.
func newRange() *intRange { return &intRange{} }

func (r *intRange) add(v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 || v < r.lo {
		r.lo = v
	}
	if r.n == 0 || v > r.hi {
		r.hi = v
	}
	r.n++
}

func (r *intRange) minMax() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lo, r.hi
}

// summarizeOpen builds the Result of an open-streams run: latency over every
// successful stream, TTFB over the steady ones (started at or after the end
// of the ramp; all of them if none did), and the added TTFB over the
// upstream's own delay.
func summarizeOpen(samples []sample, elapsed time.Duration, rampEnd time.Time, upstreamTTFB time.Duration) *Result {
	res := summarize(samples, elapsed, false)
	o := &OpenStats{Streams: len(samples), UpstreamTTFBMs: ms(upstreamTTFB)}
	var steady, all []time.Duration
	for _, s := range samples {
		o.Chunks += int64(s.chunks)
		if s.err != "" {
			continue
		}
		all = append(all, s.ttfb)
		if !s.start.Before(rampEnd) {
			steady = append(steady, s.ttfb)
		}
	}
	o.SteadyStreams = len(steady)
	if len(steady) == 0 {
		steady = all
	}
	if len(samples) > 0 {
		o.ChunksPerStream = round2(float64(o.Chunks) / float64(len(samples)))
	}
	ttfb := percentiles(steady)
	res.TTFB = &ttfb
	added := make([]time.Duration, len(steady))
	for i, d := range steady {
		added[i] = d - upstreamTTFB
	}
	o.TTFBAdded = percentiles(added)
	res.Open = o
	return res
}

// perStreamAndChunk divides a process's CPU over a run by the streams it
// carried (ms a stream) and the events they received (µs an event).
func perStreamAndChunk(cpuMs float64, streams int, chunks int64) (msPerStream, usPerChunk float64) {
	if streams > 0 {
		msPerStream = math.Round(cpuMs/float64(streams)*1e4) / 1e4
	}
	if chunks > 0 {
		usPerChunk = math.Round(cpuMs*1000/float64(chunks)*1e3) / 1e3
	}
	return msPerStream, usPerChunk
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// goroutineSampler keeps the highest goroutine count read during a run.
type goroutineSampler struct {
	mu        sync.Mutex
	idle, max int
	errs      int
}

func (g *goroutineSampler) sample(ctx context.Context, c *http.Client, url string) {
	n, err := fetchGoroutines(ctx, c, url)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.errs++
		return
	}
	g.max = max(g.max, n)
}

func (g *goroutineSampler) result(workers int) *GoroutineCount {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &GoroutineCount{Idle: g.idle, Max: g.max, PerStream: round2(float64(g.max-g.idle) / float64(workers)), SampleErrors: g.errs}
}

// fetchGoroutines reads go_goroutines from a Prometheus text page (or the
// total of a /debug/pprof/goroutine?debug=1 page).
func fetchGoroutines(ctx context.Context, c *http.Client, url string) (int, error) {
	body, err := get(ctx, c, url, 4<<20)
	if err != nil {
		return 0, err
	}
	return parseGoroutines(body)
}

// parseGoroutines finds the goroutine count in a Prometheus text page
// ("go_goroutines 123", with labels or a timestamp or not, the value
// possibly "123.0" or "1.23e+02") or in the first line of a pprof goroutine
// page ("goroutine profile: total 123").
func parseGoroutines(page string) (int, error) {
	for line := range strings.SplitSeq(page, "\n") {
		line = strings.TrimSpace(line)
		var v string
		if rest, ok := strings.CutPrefix(line, "goroutine profile: total "); ok {
			v = rest
		} else if rest, ok := strings.CutPrefix(line, "go_goroutines"); ok {
			if strings.HasPrefix(rest, "{") {
				_, rest, _ = strings.Cut(rest, "}")
			} else if !strings.HasPrefix(rest, " ") {
				continue // another metric whose name starts the same
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				continue
			}
			v = f[0]
		} else {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || x != math.Trunc(x) {
			return 0, fmt.Errorf("goroutine count %q: not a count", v)
		}
		return int(x), nil
	}
	return 0, errors.New("no go_goroutines line")
}

// fetchUpstreamOpen reads "open" from fakeupstream's /stats.
func fetchUpstreamOpen(ctx context.Context, c *http.Client, url string) (int, error) {
	body, err := get(ctx, c, url, 1<<10)
	if err != nil {
		return 0, err
	}
	var st struct {
		Open *int `json:"open"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return 0, err
	}
	if st.Open == nil {
		return 0, errors.New("no \"open\" in the upstream's stats")
	}
	return *st.Open, nil
}

// get fetches a loopback URL's body, at most limit bytes.
func get(ctx context.Context, c *http.Client, url string, limit int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return string(b), err
}
