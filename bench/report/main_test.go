package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 3,1,2 = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median of 4,1,2,3 = %v", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Errorf("median of nothing = %v, want NaN", m)
	}
}

func line(target, mode string, c, rep int, rps, p50, ttfb float64, rssKB int64) string {
	return blockLine("main", target, mode, c, rep, rps, p50, ttfb, rssKB)
}

func blockLine(block, target, mode string, c, rep int, rps, p50, ttfb float64, rssKB int64) string {
	store := "" // the ClickHouse server is the third watched process of its steps
	if target == "sluice-ch" {
		store = `,{"cpu_ms_per_req":0.1},{"cpu_ms_per_req":0.05}`
	}
	tt := ""
	if mode == "stream" {
		tt = fmt.Sprintf(`,"ttfb_ms":{"p50":%v,"p99":%v}`, ttfb, ttfb*2)
	}
	return fmt.Sprintf(`{"meta":{"block":%q,"target":%q,"mode":%q,"c":"%d","rep":"%d","load1":"0.5","busy_pct":"3"},`+
		`"ok":100,"throughput_rps":%v,"latency_ms":{"p50":%v,"p99":%v}%s,"watch":[{"cpu_ms_per_req":0.2,"peak_rss_kb":%d,"vm_hwm_kb":%d}%s]}`,
		block, target, mode, c, rep, rps, p50, p50*3, tt, rssKB, rssKB, store)
}

func TestReportMediansAndBudgets(t *testing.T) {
	var in []string
	for rep, f := range []float64{1, 0.9, 1.1} { // the median is the f=1 repeat
		for _, mode := range []string{"json", "stream"} {
			for _, c := range []int{1, 32} {
				in = append(in,
					line("direct", mode, c, rep+1, 10000*f, 0.2*f, 0.1*f, 10000),
					line("bare", mode, c, rep+1, 5000*f, 0.5*f, 0.4*f, 15000),
					line("sluice", mode, c, rep+1, 6000*f, 0.53*f, 0.42*f, 50000),
					line("portkey", mode, c, rep+1, 500*f, 2*f, 20*f, 200000))
			}
			in = append(in,
				blockLine("log", "sluice-off", mode, 32, rep+1, 6200*f, 0.5*f, 0.4*f, 45000),
				blockLine("log", "sluice", mode, 32, rep+1, 6000*f, 0.53*f, 0.42*f, 50000),
				blockLine("log", "sluice-ch", mode, 32, rep+1, 5000*f, 0.6*f, 0.5*f, 52000))
		}
	}
	results, err := read(strings.NewReader(strings.Join(in, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	write(&out, results, notes{"a note"})
	got := out.String()
	for _, want := range []string{
		"| sluice | 32 | 6,000 | 0.530 | +0.330 |",
		"| Portkey 1.15.2 | 1 | 500 |",
		"c=32 json throughput ≥ 8× Portkey's: 6,000 / 500 req/s = 12.0× — held",
		"c=32 json throughput ≥ the bare proxy's: 6,000 vs 5,000 req/s (+20.0 %) — held",
		"c=1 added p50 within 0.05 ms of the bare proxy's: sluice adds +0.030 ms more than the bare proxy — held",
		"c=1 added stream TTFB (p50) within 0.05 ms of the bare proxy's: sluice adds +0.020 ms more — held",
		"peak RSS under load ≤ 60 MiB: highest sampled VmRSS 50.8 MiB",
		"| json | 32 | 6,200 | 6,000 (-3.2 %) | 5,000 (-19.4 %) | 0.500 / 0.530 / 0.600 | 0.200 / 0.200 / 0.200 (+0.050 server) | 43.9 / 48.8 / 50.8 |",
		"c=32 json throughput with the request log on SQLite within 10 % of log off: 6,000 vs 6,200 req/s (-3.2 %) — held",
		"c=32 stream throughput with the request log on ClickHouse within 10 % of log off: 5,000 vs 6,200 req/s (-19.4 %) — **missed**",
		"- a note",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q\n%s", want, got)
		}
	}
}
