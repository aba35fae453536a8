// Command loadgen sends OpenAI chat-completion requests to a server on
// loopback and reports throughput, latency percentiles, stream time to first
// byte and, for the processes it is told to watch, CPU time per request and
// peak resident memory, as one JSON object on stdout.
//
//	loadgen -url http://127.0.0.1:8080/v1/chat/completions -key sk-... \
//	        -model openai/gpt-4o-mini -stream -c 32 -n 20000 -d 10s -watch 1234
//
// Both -n (total requests) and -d (duration) bound the run: it stops issuing
// requests at whichever comes first.
//
// With -open W it holds W streams open instead (open.go): W workers ramped
// in over -ramp, each streaming back to back for -hold more, and it reports
// per stream what the first watched process grew by (RSS, threads, and
// goroutines read from -goroutines), its CPU per stream and per event, and
// TTFB added over the upstream's own -upstream-ttfb:
//
//	loadgen -url ... -key sk-... -model openai/gpt-4o-mini -open 4000 -ramp 5s -hold 20s \
//	        -upstream-ttfb 300ms -watch 1234 -goroutines http://127.0.0.1:8080/metrics \
//	        -upstream-stats http://127.0.0.1:9000/stats
//
// Only loopback hosts are accepted (127.0.0.0/8, ::1, localhost), and every
// connection is checked to go to a loopback address.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits that keep a run bounded whatever the flags say.
const (
	maxConcurrency = 4096
	maxRequests    = 10_000_000
	maxDuration    = time.Hour
)

// Config is one run.
type Config struct {
	URL     string
	Key     string
	Model   string
	Stream  bool
	C       int           // concurrent workers
	N       int           // total measured requests (upper bound)
	D       time.Duration // measured duration (upper bound)
	Warmup  int           // requests sent before measuring, not counted
	Timeout time.Duration // per request
	Headers http.Header
	Watch   []int
	Label   string
	Meta    map[string]string
}

// Result is what a run reports.
type Result struct {
	Label       string            `json:"label,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	URL         string            `json:"url"`
	Model       string            `json:"model"`
	Stream      bool              `json:"stream"`
	Concurrency int               `json:"concurrency"`
	Requests    int               `json:"requests"`
	OK          int               `json:"ok"`
	Errors      int               `json:"errors"`
	ErrorSample []string          `json:"error_sample,omitempty"` // up to 3 distinct messages
	StoppedBy   string            `json:"stopped_by"`             // "n" or "d"
	Seconds     float64           `json:"seconds"`
	RPS         float64           `json:"throughput_rps"`
	Latency     Percentiles       `json:"latency_ms"`
	TTFB        *Percentiles      `json:"ttfb_ms,omitempty"`
	Watched     []WatchResult     `json:"watch,omitempty"`
	// CoreBusyPct is each CPU's busy share over the measured part of the
	// run, from /proc/stat: whoever used it (with pinned cores it shows
	// whether the load generator's core kept up).
	CoreBusyPct []float64  `json:"core_busy_pct,omitempty"`
	Open        *OpenStats `json:"open,omitempty"` // open-streams mode only
	StartedAt   time.Time  `json:"started_at"`
}

// Percentiles are in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// WatchResult is one watched process over the measured part of the run.
type WatchResult struct {
	PID          int     `json:"pid"`
	CPUMs        float64 `json:"cpu_ms"`
	CPUMsPerReq  float64 `json:"cpu_ms_per_req"`
	PeakRSSKB    int64   `json:"peak_rss_kb"` // highest VmRSS sampled during the run
	VmHWMKB      int64   `json:"vm_hwm_kb"`   // the kernel's high-water mark (process lifetime)
	ThreadsMax   int64   `json:"threads_max"` // most threads sampled during the run
	SampleErrors int     `json:"sample_errors,omitempty"`
}

type metaFlag map[string]string

func (m metaFlag) String() string { return "" }
func (m metaFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("meta %q: want key=value", v)
	}
	m[k] = val
	return nil
}

type headerFlag http.Header

func (h headerFlag) String() string { return "" }
func (h headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	http.Header(h).Add(strings.TrimSpace(k), strings.TrimSpace(val))
	return nil
}

func main() {
	cfg := Config{Headers: http.Header{}, Meta: map[string]string{}}
	flag.StringVar(&cfg.URL, "url", "", "chat completions URL (loopback only), e.g. http://127.0.0.1:8080/v1/chat/completions")
	flag.StringVar(&cfg.Key, "key", "", "bearer token sent as Authorization")
	flag.StringVar(&cfg.Model, "model", "gpt-4o-mini", "model of every request")
	flag.BoolVar(&cfg.Stream, "stream", false, "send \"stream\": true and read the SSE answer")
	flag.IntVar(&cfg.C, "c", 1, "concurrency (workers)")
	flag.IntVar(&cfg.N, "n", 1000, "total measured requests (bound)")
	flag.DurationVar(&cfg.D, "d", 10*time.Second, "maximum measured duration (bound)")
	flag.IntVar(&cfg.Warmup, "warmup", 0, "requests sent before measuring, not counted")
	flag.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "per-request timeout")
	flag.Var(headerFlag(cfg.Headers), "H", "extra request header \"Name: value\" (repeatable)")
	watch := flag.String("watch", "", "comma-separated PIDs whose CPU time and peak RSS to report")
	flag.StringVar(&cfg.Label, "label", "", "label copied into the JSON result")
	flag.Var(metaFlag(cfg.Meta), "meta", "key=value copied into the result's \"meta\" object (repeatable)")
	var oc OpenConfig
	flag.IntVar(&oc.Workers, "open", 0, "open-streams mode: hold this many streams open (0 = off; -c, -n, -d and -stream are then unused)")
	flag.DurationVar(&oc.Ramp, "ramp", 5*time.Second, "open-streams: start the workers spread over this")
	flag.DurationVar(&oc.Hold, "hold", 20*time.Second, "open-streams: after the ramp, keep starting streams this long (bound)")
	flag.DurationVar(&oc.UpstreamTTFB, "upstream-ttfb", 0, "open-streams: the upstream's own first-token delay, subtracted for the added TTFB")
	flag.StringVar(&oc.GoroutinesURL, "goroutines", "", "open-streams: loopback URL answering go_goroutines for the first watched PID")
	flag.StringVar(&oc.UpstreamStatsURL, "upstream-stats", "", "open-streams: the fake upstream's /stats URL, to count streams open at the far side")
	flag.DurationVar(&oc.Settle, "settle", time.Second, "open-streams: pause after the warm-up before reading idle RSS and goroutines")
	flag.Parse()
	pids, err := parsePIDs(*watch)
	if err == nil {
		cfg.Watch = pids
		var res *Result
		if oc.Workers > 0 {
			oc.Config = cfg
			res, err = RunOpen(context.Background(), oc)
		} else {
			res, err = Run(context.Background(), cfg)
		}
		if err == nil {
			enc := json.NewEncoder(os.Stdout)
			_ = enc.Encode(res)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

func parsePIDs(s string) ([]int, error) {
	var pids []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil || p <= 0 {
			return nil, fmt.Errorf("-watch: %q is not a PID", f)
		}
		pids = append(pids, p)
	}
	return pids, nil
}

// CheckLoopback returns an error unless raw is an http(s) URL whose host is
// localhost, an address in 127.0.0.0/8, or ::1.
func CheckLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	if !loopbackHost(u.Hostname()) {
		return fmt.Errorf("-url %q: refusing non-loopback host %q (only 127.0.0.0/8, ::1 and localhost)", raw, u.Hostname())
	}
	return nil
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// validate checks the bounds of a run.
func (c *Config) validate() error {
	if err := CheckLoopback(c.URL); err != nil {
		return err
	}
	switch {
	case c.C < 1 || c.C > maxConcurrency:
		return fmt.Errorf("-c %d: want 1..%d", c.C, maxConcurrency)
	case c.N < 1 || c.N > maxRequests:
		return fmt.Errorf("-n %d: want 1..%d (a run is bounded in count)", c.N, maxRequests)
	case c.D <= 0 || c.D > maxDuration:
		return fmt.Errorf("-d %v: want (0, %v] (a run is bounded in time)", c.D, maxDuration)
	case c.Warmup < 0 || c.Warmup > maxRequests:
		return fmt.Errorf("-warmup %d: want 0..%d", c.Warmup, maxRequests)
	case c.Timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	return nil
}

// loopbackDialer refuses to connect anywhere but a loopback address, so a
// name that resolves elsewhere cannot be reached either.
func loopbackDialer() *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("refusing to connect to non-loopback address %s", address)
			}
			return nil
		}}
}

type sample struct {
	start     time.Time
	lat, ttfb time.Duration
	chunks    int // stream events received, [DONE] not counted
	err       string
}

// Run performs the warmup and the measured run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	body := requestBody(&cfg)
	tr := &http.Transport{
		DialContext:         loopbackDialer().DialContext,
		MaxIdleConns:        cfg.C * 2,
		MaxIdleConnsPerHost: cfg.C * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	do := func(ctx context.Context) sample { return one(ctx, client, &cfg, body, 16<<10) }

	if cfg.Warmup > 0 {
		runPhase(ctx, cfg.C, cfg.Warmup, maxDuration, do)
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
	started := time.Now()
	samples, stoppedBy := runPhase(ctx, cfg.C, cfg.N, cfg.D, do)
	elapsed := time.Since(started)
	cores1, _ := readCoreTimes()

	res := summarize(samples, elapsed, cfg.Stream)
	if len(cfg.Meta) > 0 {
		res.Meta = cfg.Meta
	}
	res.Label, res.URL, res.Model, res.Stream, res.Concurrency = cfg.Label, cfg.URL, cfg.Model, cfg.Stream, cfg.C
	res.StoppedBy, res.StartedAt = stoppedBy, started.UTC()
	res.CoreBusyPct = coreBusy(cores0, cores1)
	for _, w := range watchers {
		res.Watched = append(res.Watched, w.stop(res.Requests))
	}
	return res, nil
}

// runPhase runs c workers until n requests were issued or d has passed
// (requests in flight at the deadline complete). It returns the samples and
// which bound stopped it.
func runPhase(ctx context.Context, c, n int, d time.Duration, do func(context.Context) sample) ([]sample, string) {
	deadline := time.Now().Add(d)
	var issued atomic.Int64
	var timedOut atomic.Bool
	per := make([][]sample, c)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			local := make([]sample, 0, n/c+1)
			for ctx.Err() == nil {
				if time.Now().After(deadline) {
					timedOut.Store(true)
					break
				}
				if issued.Add(1) > int64(n) {
					break
				}
				local = append(local, do(ctx))
			}
			per[w] = local
		})
	}
	wg.Wait()
	all := slices.Concat(per...)
	if timedOut.Load() {
		return all, "d"
	}
	return all, "n"
}

// requestBody is the chat request every worker sends.
func requestBody(cfg *Config) []byte {
	body, _ := json.Marshal(map[string]any{
		"model":    cfg.Model,
		"messages": []map[string]string{{"role": "user", "content": "Say hello in five words."}},
		"stream":   cfg.Stream,
	})
	return body
}

// one sends a request and reads the whole answer. A stream must end with
// "data: [DONE]"; its TTFB is the time to its first "data:" line, and it
// counts its "data:" events but [DONE]. bufSize sizes the stream's reader.
func one(ctx context.Context, client *http.Client, cfg *Config, body []byte, bufSize int) sample {
	start := time.Now()
	s := exchange(ctx, client, cfg, body, bufSize, start)
	s.start = start
	return s
}

func exchange(ctx context.Context, client *http.Client, cfg *Config, body []byte, bufSize int, start time.Time) sample {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return sample{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Key)
	}
	for k, vs := range cfg.Headers {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{err: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return sample{err: fmt.Sprintf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	if !cfg.Stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return sample{err: err.Error()}
		}
		return sample{lat: time.Since(start)}
	}
	var ttfb time.Duration
	done, chunks, midLine := false, 0, false
	br := bufio.NewReaderSize(resp.Body, bufSize)
	for {
		line, err := br.ReadSlice('\n')
		if !midLine && bytes.HasPrefix(line, []byte("data:")) {
			if ttfb == 0 {
				ttfb = time.Since(start)
			}
			if bytes.Equal(bytes.TrimSpace(line[5:]), []byte("[DONE]")) {
				done = true
			} else {
				chunks++
			}
		}
		// A line longer than the buffer comes in pieces: only its first
		// piece starts a line.
		midLine = errors.Is(err, bufio.ErrBufferFull)
		if midLine {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return sample{err: err.Error(), chunks: chunks}
		}
	}
	if !done {
		return sample{err: "stream ended without data: [DONE]", chunks: chunks}
	}
	return sample{lat: time.Since(start), ttfb: ttfb, chunks: chunks}
}

func summarize(samples []sample, elapsed time.Duration, stream bool) *Result {
	res := &Result{Requests: len(samples), Seconds: elapsed.Seconds()}
	var lats, ttfbs []time.Duration
	for _, s := range samples {
		if s.err != "" {
			res.Errors++
			if len(res.ErrorSample) < 3 && !slices.Contains(res.ErrorSample, s.err) {
				res.ErrorSample = append(res.ErrorSample, s.err)
			}
			continue
		}
		lats = append(lats, s.lat)
		if stream {
			ttfbs = append(ttfbs, s.ttfb)
		}
	}
	res.OK = len(lats)
	if elapsed > 0 {
		res.RPS = float64(res.OK) / elapsed.Seconds()
	}
	res.Latency = percentiles(lats)
	if stream {
		p := percentiles(ttfbs)
		res.TTFB = &p
	}
	return res
}

// percentiles sorts ds and returns its p50/p90/p99 (nearest rank), mean and max in ms.
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Percentiles{
		P50:  ms(Percentile(ds, 50)),
		P90:  ms(Percentile(ds, 90)),
		P99:  ms(Percentile(ds, 99)),
		Mean: ms(sum / time.Duration(len(ds))),
		Max:  ms(ds[len(ds)-1]),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted: the smallest value with at least p% of the values at or below it.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Nanoseconds())/1e3) / 1e3 }

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

type watcher struct {
	pid       int
	cpu0      int64
	peak      atomic.Int64
	threads   atomic.Int64
	sampleErr atomic.Int64
	stopc     chan struct{}
	done      chan struct{}
}

func startWatch(pid int) (*watcher, error) {
	cpu, err := cpuTicks(pid)
	if err != nil {
		return nil, fmt.Errorf("-watch %d: %w", pid, err)
	}
	w := &watcher{pid: pid, cpu0: cpu, stopc: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stopc:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w, nil
}

func (w *watcher) sample() {
	st, err := readStatus(w.pid)
	if err != nil {
		w.sampleErr.Add(1)
		return
	}
	if st.rss > w.peak.Load() {
		w.peak.Store(st.rss)
	}
	if st.threads > w.threads.Load() {
		w.threads.Store(st.threads)
	}
}

func (w *watcher) stop(requests int) WatchResult {
	close(w.stopc)
	<-w.done
	w.sample()
	r := WatchResult{PID: w.pid, PeakRSSKB: w.peak.Load(), ThreadsMax: w.threads.Load(), SampleErrors: int(w.sampleErr.Load())}
	if cpu, err := cpuTicks(w.pid); err == nil {
		r.CPUMs = float64(cpu-w.cpu0) * 1000 / clockTicks
		if requests > 0 {
			r.CPUMsPerReq = math.Round(r.CPUMs/float64(requests)*1e4) / 1e4
		}
	} else {
		r.SampleErrors++
	}
	if st, err := readStatus(w.pid); err == nil {
		r.VmHWMKB = st.hwm
	}
	return r
}

// cpuTicks returns utime+stime of pid from /proc/PID/stat.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime (field 14) and stime (field 15) of a
// /proc/PID/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ut + st, nil
}

type status struct{ rss, hwm, threads int64 }

func readStatus(pid int) (status, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return status{}, err
	}
	return parseStatus(string(b)), nil
}

// parseStatus reads VmRSS and VmHWM (kB) and Threads from /proc/PID/status.
func parseStatus(s string) status {
	var st status
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &st.rss
		case "VmHWM":
			dst = &st.hwm
		case "Threads":
			dst = &st.threads
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) > 0 {
			*dst, _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return st
}

// coreTimes is one CPU's line of /proc/stat: busy and total jiffies.
type coreTimes struct{ busy, total int64 }

// readCoreTimes reads the per-CPU lines ("cpu0", "cpu1", …) of /proc/stat.
func readCoreTimes() ([]coreTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return parseCoreTimes(string(b)), nil
}

// parseCoreTimes reads the per-CPU lines of a /proc/stat text; idle and
// iowait count as not busy.
func parseCoreTimes(stat string) []coreTimes {
	var out []coreTimes
	for line := range strings.SplitSeq(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// guest time is already in user and nice; steal is the hypervisor's.
		var ct coreTimes
		for i, v := range f[1:min(len(f), 9)] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ct.total += n
			if i != 3 && i != 4 && i != 7 {
				ct.busy += n
			}
		}
		out = append(out, ct)
	}
	return out
}

// coreBusy is each CPU's busy share, in percent, between two readings; nil
// when they do not match.
func coreBusy(a, b []coreTimes) []float64 {
	if len(a) == 0 || len(a) != len(b) {
		return nil
	}
	out := make([]float64, len(a))
	for i := range a {
		if dt := b[i].total - a[i].total; dt > 0 {
			out[i] = math.Round(1000*float64(b[i].busy-a[i].busy)/float64(dt)) / 10
		}
	}
	return out
}
