// Command report turns the JSON lines that compare.sh collects from loadgen
// (one object per measured step, with meta target, mode, c, rep, block,
// load1 and busy_pct) into the markdown tables of docs/perf/runs.md: medians of
// the repeats per target, mode and concurrency, latency added over the
// direct call, and the budgets checked against the same run.
//
// Each block of steps has its own tables: "main" and "log" (every process
// sharing both cores; this file), "pinned" (each gateway on a core of its
// own; pinned.go) and "open" (streams held open; open.go).
//
//	go run ./bench/report -in results.jsonl -note "..." > table.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

type result struct {
	Meta    map[string]string `json:"meta"`
	OK      int               `json:"ok"`
	Errors  int               `json:"errors"`
	RPS     float64           `json:"throughput_rps"`
	Latency struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latency_ms"`
	TTFB *struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"ttfb_ms"`
	Watch []struct {
		CPUMsPerReq float64 `json:"cpu_ms_per_req"`
		PeakRSSKB   int64   `json:"peak_rss_kb"`
		VmHWMKB     int64   `json:"vm_hwm_kb"`
	} `json:"watch"`
	CoreBusyPct []float64  `json:"core_busy_pct"`
	Open        *openStats `json:"open"`
}

type key struct {
	block, target, mode string
	c                   int
}

// cell is the median over a cell's repeats.
type cell struct {
	n                         int
	rps, p50, p99, tf50, tf99 float64
	cpu                       float64
	// storeCPU is the request-log server's CPU per request, when the step
	// watched one (the third watched process).
	storeCPU                   float64
	peakRSSKB, hwmKB           int64
	errors                     int
	hasTTFB, hasCPU, hasMemory bool
}

type notes []string

func (n *notes) String() string     { return strings.Join(*n, "; ") }
func (n *notes) Set(v string) error { *n = append(*n, v); return nil }

var names = map[string]string{
	"direct":     "direct (no hop)",
	"bare":       "bare proxy (httputil)",
	"sluice":     "sluice",
	"portkey":    "Portkey 1.15.2",
	"sluice-ch":  "sluice, ClickHouse log",
	"sluice-off": "sluice, request log off",
}

var order = []string{"direct", "bare", "sluice", "portkey", "sluice-ch", "sluice-off"}

func main() {
	in := flag.String("in", "", "JSON lines from loadgen (default stdin)")
	var ns notes
	flag.Var(&ns, "note", "a line printed under the tables (repeatable)")
	topology := flag.String("topology", "", "report only the steps of this topology (meta topology; a step without one is \"plain\"); default: every step")
	flag.Float64Var(&bareShare, "bare-share", 0.5, "open streams: sluice's memory per stream budget as a share of the bare proxy's")
	flag.Parse()
	r := io.Reader(os.Stdin)
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		defer f.Close()
		r = f
	}
	results, err := read(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	if *topology != "" {
		results = ofTopology(results, *topology)
	}
	write(os.Stdout, results, ns)
}

// ofTopology keeps the results of one topology; a result that names none
// is of "plain" (the runs before topologies existed).
func ofTopology(results []result, topology string) []result {
	var out []result
	for _, r := range results {
		t := r.Meta["topology"]
		if t == "" {
			t = "plain"
		}
		if t == topology {
			out = append(out, r)
		}
	}
	return out
}

func read(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || !strings.HasPrefix(line, "{") {
			continue
		}
		var res result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func cells(results []result) map[key]*cell {
	type acc struct {
		rps, p50, p99, tf50, tf99, cpu, storeCPU []float64
		peak, hwm                                int64
		errors                                   int
	}
	accs := map[key]*acc{}
	for _, r := range results {
		c, _ := strconv.Atoi(r.Meta["c"])
		k := key{r.Meta["block"], r.Meta["target"], r.Meta["mode"], c}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		a.errors += r.Errors
		a.rps = append(a.rps, r.RPS)
		a.p50 = append(a.p50, r.Latency.P50)
		a.p99 = append(a.p99, r.Latency.P99)
		if r.TTFB != nil {
			a.tf50 = append(a.tf50, r.TTFB.P50)
			a.tf99 = append(a.tf99, r.TTFB.P99)
		}
		if len(r.Watch) > 0 {
			a.cpu = append(a.cpu, r.Watch[0].CPUMsPerReq)
			a.peak = max(a.peak, r.Watch[0].PeakRSSKB)
			a.hwm = max(a.hwm, r.Watch[0].VmHWMKB)
		}
		if len(r.Watch) > 2 {
			a.storeCPU = append(a.storeCPU, r.Watch[2].CPUMsPerReq)
		}
	}
	out := map[key]*cell{}
	for k, a := range accs {
		out[k] = &cell{n: len(a.rps), rps: median(a.rps), p50: median(a.p50), p99: median(a.p99),
			tf50: median(a.tf50), tf99: median(a.tf99), cpu: median(a.cpu), storeCPU: median(a.storeCPU), peakRSSKB: a.peak, hwmKB: a.hwm,
			errors: a.errors, hasTTFB: len(a.tf50) > 0, hasCPU: len(a.cpu) > 0, hasMemory: a.peak > 0}
	}
	return out
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func f3(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func signed(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	if x >= 0 {
		return "+" + f3(x)
	}
	return f3(x)
}

func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

func signedPct(x float64) string {
	s := pct(x)
	if x >= 0 && s != "–" {
		s = "+" + s
	}
	return s + " %"
}

func thousands(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mb(kb int64) string { return strconv.FormatFloat(float64(kb)/1024, 'f', 1, 64) }

func concurrencies(cs map[key]*cell, block string) []int {
	var out []int
	for k := range cs {
		if k.block == block && !slices.Contains(out, k.c) {
			out = append(out, k.c)
		}
	}
	slices.Sort(out)
	return out
}

func write(w io.Writer, results []result, ns notes) {
	if hasBlock(results, "main") || hasBlock(results, "log") {
		writeShared(w, results)
	}
	writePinned(w, results)
	writeOpen(w, results)
	writeLoad(w, results)
	for _, n := range ns {
		fmt.Fprintln(w, "\n- "+n)
	}
}

func hasBlock(results []result, block string) bool {
	for _, r := range results {
		if r.Meta["block"] == block {
			return true
		}
	}
	return false
}

// writeShared writes the tables of the run where every process shares both
// cores: the main matrix, the request-log block and their budgets.
func writeShared(w io.Writer, results []result) {
	cs := cells(results)
	modeName := map[string]string{"json": "non-streaming", "stream": "streaming (20 chunks)"}
	for _, mode := range []string{"json", "stream"} {
		fmt.Fprintf(w, "\n**%s** — medians of the repeats; added = this target's median minus direct's, same run\n\n", modeName[mode])
		if mode == "json" {
			fmt.Fprintln(w, "| target | c | req/s | p50 ms | added p50 | p99 ms | added p99 | peak RSS MB | CPU ms/req | errors |")
			fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		} else {
			fmt.Fprintln(w, "| target | c | req/s | p50 ms | added p50 | p99 ms | added p99 | TTFB p50 ms | added TTFB p50 | TTFB p99 ms | peak RSS MB | CPU ms/req | errors |")
			fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		}
		for _, c := range concurrencies(cs, "main") {
			d := cs[key{"main", "direct", mode, c}]
			for _, t := range order {
				x := cs[key{"main", t, mode, c}]
				if x == nil {
					continue
				}
				ap50, ap99, atf := math.NaN(), math.NaN(), math.NaN()
				if d != nil {
					ap50, ap99, atf = x.p50-d.p50, x.p99-d.p99, x.tf50-d.tf50
				}
				rss, cpu := "–", "–"
				if x.hasMemory {
					rss = mb(x.peakRSSKB)
				}
				if x.hasCPU {
					cpu = f3(x.cpu)
				}
				if mode == "json" {
					fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", names[t], c, thousands(x.rps),
						f3(x.p50), signed(ap50), f3(x.p99), signed(ap99), rss, cpu, x.errors)
				} else {
					fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", names[t], c, thousands(x.rps),
						f3(x.p50), signed(ap50), f3(x.p99), signed(ap99), f3(x.tf50), signed(atf), f3(x.tf99), rss, cpu, x.errors)
				}
			}
		}
	}
	writeLog(w, cs)
	writeBudgets(w, cs, results)
}

// logBackends are the request-log block's targets besides the log-off
// baseline, with their column names.
var logBackends = []struct{ target, name string }{{"sluice", "SQLite"}, {"sluice-ch", "ClickHouse"}}

func writeLog(w io.Writer, cs map[key]*cell) {
	var rows []string
	for _, c := range concurrencies(cs, "log") {
		for _, mode := range []string{"json", "stream"} {
			off := cs[key{"log", "sluice-off", mode, c}]
			if off == nil {
				continue
			}
			row := fmt.Sprintf("| %s | %d | %s |", mode, c, thousands(off.rps))
			p50s, rss, cpu := []string{f3(off.p50)}, []string{mb(off.peakRSSKB)}, []string{f3(off.cpu)}
			for _, b := range logBackends {
				on := cs[key{"log", b.target, mode, c}]
				if on == nil {
					row += " — |"
					p50s, rss, cpu = append(p50s, "—"), append(rss, "—"), append(cpu, "—")
					continue
				}
				row += fmt.Sprintf(" %s (%s) |", thousands(on.rps), signedPct(100*(on.rps/off.rps-1)))
				p50s, rss = append(p50s, f3(on.p50)), append(rss, mb(on.peakRSSKB))
				v := f3(on.cpu)
				if !math.IsNaN(on.storeCPU) {
					v += fmt.Sprintf(" (+%s server)", f3(on.storeCPU))
				}
				cpu = append(cpu, v)
			}
			rows = append(rows, row+fmt.Sprintf(" %s | %s | %s |", strings.Join(p50s, " / "), strings.Join(cpu, " / "), strings.Join(rss, " / ")))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n**request log** (sluice with its log off, on SQLite, on ClickHouse; interleaved; medians; on vs off in brackets)")
	fmt.Fprintln(w, "\n| mode | c | log off req/s | SQLite req/s | ClickHouse req/s | p50 ms off / SQLite / CH | gateway CPU ms/req off / SQLite / CH (+ ClickHouse server's) | peak RSS MB off / SQLite / CH |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}

func verdict(ok bool) string {
	if ok {
		return "held"
	}
	return "**missed**"
}

func writeBudgets(w io.Writer, cs map[key]*cell, results []result) {
	fmt.Fprintln(w, "\n**budgets** (issue 9, this run)")
	fmt.Fprintln(w)
	get := func(t, mode string, c int) *cell { return cs[key{"main", t, mode, c}] }
	for _, mode := range []string{"json", "stream"} {
		s, p, b := get("sluice", mode, 32), get("portkey", mode, 32), get("bare", mode, 32)
		if s != nil && p != nil && p.rps > 0 {
			fmt.Fprintf(w, "- c=32 %s throughput ≥ 8× Portkey's: %s / %s req/s = %.1f× — %s\n", mode,
				thousands(s.rps), thousands(p.rps), s.rps/p.rps, verdict(s.rps >= 8*p.rps))
		} else if s != nil {
			fmt.Fprintf(w, "- c=32 %s throughput ≥ 8× Portkey's: not evaluated (Portkey not measured)\n", mode)
		}
		if s != nil && b != nil {
			fmt.Fprintf(w, "- c=32 %s throughput ≥ the bare proxy's: %s vs %s req/s (%s) — %s\n", mode,
				thousands(s.rps), thousands(b.rps), signedPct(100*(s.rps/b.rps-1)), verdict(s.rps >= b.rps))
		}
	}
	if s, b := get("sluice", "json", 1), get("bare", "json", 1); s != nil && b != nil {
		d := s.p50 - b.p50
		fmt.Fprintf(w, "- c=1 added p50 within 0.05 ms of the bare proxy's: sluice adds %s ms more than the bare proxy — %s\n",
			signed(d), verdict(d <= 0.05))
	}
	if s, b := get("sluice", "stream", 1), get("bare", "stream", 1); s != nil && b != nil && s.hasTTFB {
		d := s.tf50 - b.tf50
		fmt.Fprintf(w, "- c=1 added stream TTFB (p50) within 0.05 ms of the bare proxy's: sluice adds %s ms more — %s\n",
			signed(d), verdict(d <= 0.05))
	}
	var peak, hwm int64
	for _, r := range results {
		if t := r.Meta["target"]; strings.HasPrefix(t, "sluice") && len(r.Watch) > 0 {
			peak = max(peak, r.Watch[0].PeakRSSKB)
			hwm = max(hwm, r.Watch[0].VmHWMKB)
		}
	}
	if peak > 0 {
		fmt.Fprintf(w, "- peak RSS under load ≤ 60 MiB: highest sampled VmRSS %s MiB, VmHWM %s MiB — %s\n", mb(peak), mb(hwm),
			verdict(hwm <= 60*1024 && peak <= 60*1024))
	}
	evaluated := false
	for _, c := range concurrencies(cs, "log") {
		for _, mode := range []string{"json", "stream"} {
			off := cs[key{"log", "sluice-off", mode, c}]
			for _, b := range logBackends {
				on := cs[key{"log", b.target, mode, c}]
				if off == nil || on == nil || off.rps <= 0 {
					continue
				}
				evaluated = true
				fmt.Fprintf(w, "- c=%d %s throughput with the request log on %s within 10 %% of log off: %s vs %s req/s (%s) — %s\n",
					c, mode, b.name, thousands(on.rps), thousands(off.rps), signedPct(100*(on.rps/off.rps-1)), verdict(on.rps >= 0.9*off.rps))
			}
		}
	}
	if !evaluated {
		fmt.Fprintln(w, "- request log on within 10 % of log off: not evaluated (the request-log block did not run)")
	}
}

func writeLoad(w io.Writer, results []result) {
	var loads, busy []float64
	for _, r := range results {
		if v, err := strconv.ParseFloat(r.Meta["load1"], 64); err == nil {
			loads = append(loads, v)
		}
		if v, err := strconv.ParseFloat(r.Meta["busy_pct"], 64); err == nil {
			busy = append(busy, v)
		}
	}
	if len(loads) == 0 {
		return
	}
	slices.Sort(loads)
	slices.Sort(busy)
	fmt.Fprintf(w, "\nMeasured under: %d steps; 1-minute load average at step start min %s / median %s / max %s; "+
		"CPU busy in the 1 s before each step (others' work, ours idle) median %s %%, max %s %%.\n",
		len(results), f2(loads[0]), f2(median(loads)), f2(loads[len(loads)-1]), f2(median(busy)), f2(busy[len(busy)-1]))
}
