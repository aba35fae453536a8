package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
)

// The pinned-core block: each gateway on a core of its own (meta gw_cpu),
// the load generator and the fake upstream on the other (meta lg_cpu), so a
// gateway's throughput is what one core gives it and not what the load
// generator left it.

// pinnedCores is the median busy share of the gateway's and the load
// generator's cores over a cell's repeats.
type pinnedCores struct{ gw, lg float64 }

func pinnedCoreBusy(results []result) map[key]pinnedCores {
	type acc struct{ gw, lg []float64 }
	accs := map[key]*acc{}
	for _, r := range results {
		if r.Meta["block"] != "pinned" {
			continue
		}
		c, _ := strconv.Atoi(r.Meta["c"])
		k := key{"pinned", r.Meta["target"], r.Meta["mode"], c}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		if i, err := strconv.Atoi(r.Meta["gw_cpu"]); err == nil && i >= 0 && i < len(r.CoreBusyPct) {
			a.gw = append(a.gw, r.CoreBusyPct[i])
		}
		if i, err := strconv.Atoi(r.Meta["lg_cpu"]); err == nil && i >= 0 && i < len(r.CoreBusyPct) {
			a.lg = append(a.lg, r.CoreBusyPct[i])
		}
	}
	out := map[key]pinnedCores{}
	for k, a := range accs {
		out[k] = pinnedCores{gw: median(a.gw), lg: median(a.lg)}
	}
	return out
}

// pinnedBudgets are the budgets on pinned cores at c=32, per mode:
// sluice's throughput against Portkey's and the bare proxy's, and its CPU
// per request against the bare proxy's.
var pinnedBudgets = map[string]struct{ vsPortkey, vsBare, cpuVsBare float64 }{
	"json":   {8, 1.0, 1.0},
	"stream": {8, 0.95, 1.1},
}

func writePinned(w io.Writer, results []result) {
	if !hasBlock(results, "pinned") {
		return
	}
	cs := cells(results)
	cores := pinnedCoreBusy(results)
	modeName := map[string]string{"json": "non-streaming", "stream": "streaming"}
	for _, mode := range []string{"json", "stream"} {
		cc := concurrenciesOf(cs, "pinned", mode)
		if len(cc) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n**pinned cores, %s** — each gateway alone on its core, the load generator and the fake upstream on the other; medians of the repeats\n\n", modeName[mode])
		ttfbHead, ttfbRule := "", ""
		if mode == "stream" {
			ttfbHead, ttfbRule = " TTFB p50 ms |", " ---: |"
		}
		fmt.Fprintf(w, "| target | c | req/s | p50 ms | p99 ms |%s CPU ms/req | gateway core busy | load core busy | peak RSS MB | errors |\n", ttfbHead)
		fmt.Fprintf(w, "| --- | ---: | ---: | ---: | ---: |%s ---: | ---: | ---: | ---: | ---: |\n", ttfbRule)
		for _, c := range cc {
			for _, t := range order {
				k := key{"pinned", t, mode, c}
				x := cs[k]
				if x == nil {
					continue
				}
				ttfb := ""
				if mode == "stream" {
					ttfb = " " + f3(x.tf50) + " |"
				}
				rss, cpu := "–", "–"
				if x.hasMemory {
					rss = mb(x.peakRSSKB)
				}
				if x.hasCPU {
					cpu = f3(x.cpu)
				}
				gw, lg := cores[k].gw, cores[k].lg
				if t == "direct" {
					gw = math.NaN() // no gateway: nothing of ours on its core
				}
				fmt.Fprintf(w, "| %s | %d | %s | %s | %s |%s %s | %s | %s | %s | %d |\n", names[t], c, thousands(x.rps), f3(x.p50), f3(x.p99),
					ttfb, cpu, pctCell(gw), pctCell(lg), rss, x.errors)
			}
		}
	}
	fmt.Fprintln(w, "\n**budgets on pinned cores** (c=32, this run)")
	fmt.Fprintln(w)
	get := func(t, mode string) *cell { return cs[key{"pinned", t, mode, 32}] }
	for _, mode := range []string{"json", "stream"} {
		b := pinnedBudgets[mode]
		s, p, bare := get("sluice", mode), get("portkey", mode), get("bare", mode)
		if s == nil {
			fmt.Fprintf(w, "- c=32 %s: not evaluated (sluice not measured at c=32)\n", mode)
			continue
		}
		if p != nil && p.rps > 0 {
			fmt.Fprintf(w, "- c=32 %s throughput ≥ %g× Portkey's: %s / %s req/s = %.1f× — %s\n", mode, b.vsPortkey,
				thousands(s.rps), thousands(p.rps), s.rps/p.rps, verdict(s.rps >= b.vsPortkey*p.rps))
		} else {
			fmt.Fprintf(w, "- c=32 %s throughput ≥ %g× Portkey's: not evaluated (Portkey not measured)\n", mode, b.vsPortkey)
		}
		if bare == nil || bare.rps <= 0 {
			fmt.Fprintf(w, "- c=32 %s against the bare proxy: not evaluated (bare proxy not measured)\n", mode)
			continue
		}
		fmt.Fprintf(w, "- c=32 %s throughput ≥ %.2f× the bare proxy's: %s vs %s req/s = %.2f× — %s\n", mode, b.vsBare,
			thousands(s.rps), thousands(bare.rps), s.rps/bare.rps, verdict(s.rps >= b.vsBare*bare.rps))
		if s.hasCPU && bare.hasCPU && bare.cpu > 0 {
			fmt.Fprintf(w, "- c=32 %s CPU per request ≤ %.1f× the bare proxy's: %s vs %s ms = %.2f× — %s\n", mode, b.cpuVsBare,
				f3(s.cpu), f3(bare.cpu), s.cpu/bare.cpu, verdict(s.cpu <= b.cpuVsBare*bare.cpu))
		}
	}
}

// concurrenciesOf lists the concurrencies a block measured in one mode.
func concurrenciesOf(cs map[key]*cell, block, mode string) []int {
	var out []int
	for _, c := range concurrencies(cs, block) {
		for k := range cs {
			if k.block == block && k.mode == mode && k.c == c {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func pctCell(x float64) string {
	if s := pct(x); s != "–" {
		return s + " %"
	}
	return "–"
}
