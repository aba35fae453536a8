package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
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

var update = flag.Bool("update", false, "rewrite testdata/*.md from the report of testdata/*.jsonl")

// TestGolden renders every testdata/<case>.jsonl and compares it with
// testdata/<case>.md (regenerate with -update and review the diff); then
// checks the verdicts worked out by hand for each case, so a wrong golden
// file cannot pass unnoticed.
func TestGolden(t *testing.T) {
	verdicts := map[string][]string{
		"pinned": {
			// medians: json sluice 9,000 / Portkey 1,000 / bare 8,800; stream 4,000 / 600 / 4,100
			"c=32 json throughput ≥ 8× Portkey's: 9,000 / 1,000 req/s = 9.0× — held",
			"c=32 json throughput ≥ 1.00× the bare proxy's: 9,000 vs 8,800 req/s = 1.02× — held",
			"c=32 json CPU per request ≤ 1.0× the bare proxy's: 0.110 vs 0.105 ms = 1.05× — **missed**",
			"c=32 stream throughput ≥ 8× Portkey's: 4,000 / 600 req/s = 6.7× — **missed**",
			"c=32 stream throughput ≥ 0.95× the bare proxy's: 4,000 vs 4,100 req/s = 0.98× — held",
			"c=32 stream CPU per request ≤ 1.1× the bare proxy's: 0.230 vs 0.210 ms = 1.10× — held",
			"| sluice | 32 | 9,000 | 3.556 | 10.667 | 0.110 | 99.0 % | 82.0 % | 50.8 | 0 |",
			"| direct (no hop) | 32 | 20,000 | 1.600 | 4.800 | 0.040 | – | 82.0 % | 15.6 | 0 |",
		},
		"pinned-no-portkey": {
			"c=32 json throughput ≥ 8× Portkey's: not evaluated (Portkey not measured)",
			"c=32 json throughput ≥ 1.00× the bare proxy's: 8,000 vs 8,800 req/s = 0.91× — **missed**",
			"c=32 json CPU per request ≤ 1.0× the bare proxy's: 0.100 vs 0.105 ms = 0.95× — held",
			"c=32 stream: not evaluated (sluice not measured at c=32)",
		},
		"open": {
			"8,000 open streams with zero errors: 0 errors, least held 7,990 — held",
			"memory per open stream at 1,000 ≤ 60 KiB and ≤ ½ the bare proxy's: 46.00 KiB vs 101.00 KiB — held",
			"memory per open stream at 4,000 ≤ 60 KiB and ≤ ½ the bare proxy's: 56.00 KiB vs 106.00 KiB — **missed**", // 56 > 106/2,
			"memory per open stream at 8,000 ≤ 60 KiB and ≤ ½ the bare proxy's: 63.00 KiB vs 131.00 KiB — **missed**",
			"added TTFB p99 at 4,000 streams ≤ the bare proxy's: +13.000 vs +11.000 ms — **missed**",
			"CPU per event at 1,000 token-rate streams ≤ the bare proxy's: 30.00 vs 35.00 µs — held",
			"| sluice | 4,000 | 4,000 / 3,990 | 29.3 | 248.0 | 56.00 | 2.00 | 9 | 0.704 | 32.00 | 301.300 | +1.300 | 313.000 | +13.000 | 35.5 % | 0 |",
			"| direct (no hop) | 1,000 | 1,000 / 1,000 | – | – | – | – | – | – | – | 300.400 | +0.400 | 303.000 | +3.000 | – | 0 |",
			"| Portkey 1.15.2 | 8,000 | 8,000 / 8,000 | 29.3 | 2771.5 | 351.00 | – | 11 |",
		},
		"open-errors": {
			"8,000 open streams with zero errors: 3 errors, least held 7,000 — **missed**",
			"memory per open stream at 8,000 ≤ 60 KiB and ≤ ½ the bare proxy's: 40.00 KiB; ≤ 60 KiB — held; ½ the bare proxy's not evaluated",
			"added TTFB p99 at 4,000 streams ≤ the bare proxy's: not evaluated",
			"CPU per event ≤ the bare proxy's: not evaluated",
		},
	}
	ins, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(ins) != len(verdicts) {
		t.Fatalf("testdata: %v, %d cases; want the %d cases the verdicts name", err, len(ins), len(verdicts))
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			results, err := read(f)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			write(&out, results, nil)
			golden := strings.TrimSuffix(in, ".jsonl") + ".md"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("report differs from %s (run with -update and review the diff):\n%s", golden, out.String())
			}
			for _, v := range verdicts[name] {
				if !strings.Contains(out.String(), v) {
					t.Errorf("report lacks %q", v)
				}
			}
			if strings.Contains(out.String(), "(issue 9, this run)") {
				t.Error("the shared-core budgets appear without a shared-core block")
			}
		})
	}
}

// TestOfTopology: -topology keeps one topology's steps, and a step that
// names none counts as plain (the runs from before topologies).
func TestOfTopology(t *testing.T) {
	rs := []result{{Meta: map[string]string{"topology": "tls", "target": "a"}},
		{Meta: map[string]string{"target": "b"}},
		{Meta: map[string]string{"topology": "plain", "target": "c"}}}
	got := func(top string) (out []string) {
		for _, r := range ofTopology(rs, top) {
			out = append(out, r.Meta["target"])
		}
		return out
	}
	if g := got("tls"); len(g) != 1 || g[0] != "a" {
		t.Fatalf("tls: %v", g)
	}
	if g := got("plain"); len(g) != 2 || g[0] != "b" || g[1] != "c" {
		t.Fatalf("plain: %v", g)
	}
}
