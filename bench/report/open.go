package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The open-streams block: streams held open through each gateway (loadgen
// -open), at several counts, in two variants: "shape" (a model's stream,
// 20 chunks 250 ms apart after a 300 ms first token) and "token-rate" (100
// chunks 25 ms apart), which is the one that measures CPU per chunk. Each
// step carries meta block=open, variant, target, streams, rep, gw_cpu and a
// human description of the upstream's shape in meta shape.

// openStats is the part of loadgen's open-streams result the report reads.
type openStats struct {
	Workers         int     `json:"workers"`
	Streams         int     `json:"streams"`
	Chunks          int64   `json:"chunks"`
	ChunksPerStream float64 `json:"chunks_per_stream"`
	OpenMin         int     `json:"open_min"`
	UpstreamOpenMin *int    `json:"upstream_open_min"`
	UpstreamTTFBMs  float64 `json:"upstream_ttfb_ms"`
	TTFBAdded       struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"ttfb_added_ms"`
	Watch []struct {
		IdleRSSKB       int64   `json:"idle_rss_kb"`
		PeakRSSKB       int64   `json:"peak_rss_kb"`
		MemPerStreamKiB float64 `json:"mem_per_stream_kib"`
		ThreadsMax      int64   `json:"threads_max"`
		Goroutines      *struct {
			PerStream float64 `json:"per_stream"`
		} `json:"goroutines"`
		CPUMsPerStream float64 `json:"cpu_ms_per_stream"`
		CPUUsPerChunk  float64 `json:"cpu_us_per_chunk"`
	} `json:"watch"`
}

type openKey struct {
	variant, target string
	streams         int
}

// openCell is the median over a cell's repeats; errors are summed and the
// streams held open are the least of any repeat.
type openCell struct {
	n                                    int
	shape                                string
	idleKB, peakKB                       float64
	memKiB, goroutines, cpuStream, cpuUs float64
	threads                              float64
	ttfb50, ttfb99, add50, add99         float64
	openMin, upOpenMin                   int
	hasUp                                bool
	chunksPerStream                      float64
	gwBusy                               float64
	errors                               int
}

func openCells(results []result) map[openKey]*openCell {
	type acc struct {
		shape                                                              string
		idle, peak, mem, gor, cpuS, cpuU, thr, t50, t99, a50, a99, cps, gw []float64
		openMin, upMin                                                     int
		hasUp                                                              bool
		errors                                                             int
	}
	accs := map[openKey]*acc{}
	for _, r := range results {
		if r.Meta["block"] != "open" || r.Open == nil {
			continue
		}
		n, _ := strconv.Atoi(r.Meta["streams"])
		k := openKey{r.Meta["variant"], r.Meta["target"], n}
		a := accs[k]
		if a == nil {
			a = &acc{shape: r.Meta["shape"], openMin: math.MaxInt, upMin: math.MaxInt}
			accs[k] = a
		}
		o := r.Open
		a.errors += r.Errors
		a.openMin = min(a.openMin, o.OpenMin)
		if o.UpstreamOpenMin != nil {
			a.hasUp = true
			a.upMin = min(a.upMin, *o.UpstreamOpenMin)
		}
		a.cps = append(a.cps, o.ChunksPerStream)
		if r.TTFB != nil {
			a.t50, a.t99 = append(a.t50, r.TTFB.P50), append(a.t99, r.TTFB.P99)
		}
		a.a50, a.a99 = append(a.a50, o.TTFBAdded.P50), append(a.a99, o.TTFBAdded.P99)
		if len(o.Watch) > 0 {
			g := o.Watch[0]
			a.idle, a.peak, a.mem = append(a.idle, float64(g.IdleRSSKB)), append(a.peak, float64(g.PeakRSSKB)), append(a.mem, g.MemPerStreamKiB)
			a.thr = append(a.thr, float64(g.ThreadsMax))
			a.cpuS, a.cpuU = append(a.cpuS, g.CPUMsPerStream), append(a.cpuU, g.CPUUsPerChunk)
			if g.Goroutines != nil {
				a.gor = append(a.gor, g.Goroutines.PerStream)
			}
		}
		if i, err := strconv.Atoi(r.Meta["gw_cpu"]); err == nil && i >= 0 && i < len(r.CoreBusyPct) {
			a.gw = append(a.gw, r.CoreBusyPct[i])
		}
	}
	out := map[openKey]*openCell{}
	for k, a := range accs {
		c := &openCell{n: len(a.cps), shape: a.shape, idleKB: median(a.idle), peakKB: median(a.peak), memKiB: median(a.mem),
			goroutines: median(a.gor), cpuStream: median(a.cpuS), cpuUs: median(a.cpuU), threads: median(a.thr),
			ttfb50: median(a.t50), ttfb99: median(a.t99), add50: median(a.a50), add99: median(a.a99),
			openMin: a.openMin, upOpenMin: a.upMin, hasUp: a.hasUp, chunksPerStream: median(a.cps), gwBusy: median(a.gw), errors: a.errors}
		out[k] = c
	}
	return out
}

// openVariants are the variants in the order the tables show them.
var openVariants = []string{"shape", "token-rate"}

func writeOpen(w io.Writer, results []result) {
	cs := openCells(results)
	if len(cs) == 0 {
		return
	}
	for _, v := range openVariants {
		var counts []int
		shape := ""
		for k, c := range cs {
			if k.variant == v && !slices.Contains(counts, k.streams) {
				counts = append(counts, k.streams)
				shape = c.shape
			}
		}
		if len(counts) == 0 {
			continue
		}
		slices.Sort(counts)
		fmt.Fprintf(w, "\n**open streams, %s** (%s) — medians of the repeats; per stream = (peak − idle) / streams held; added TTFB = TTFB − the upstream's own first-token delay\n\n", v, shape)
		fmt.Fprintln(w, "| target | streams | held (loadgen / upstream, least) | idle RSS MB | peak RSS MB | KiB per stream | goroutines per stream | threads | CPU ms per stream | CPU µs per event | TTFB p50 ms | added p50 | TTFB p99 ms | added p99 | gateway core busy | errors |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, n := range counts {
			for _, t := range order {
				c := cs[openKey{v, t, n}]
				if c == nil {
					continue
				}
				held := thousands(float64(c.openMin)) + " / –"
				if c.hasUp {
					held = thousands(float64(c.openMin)) + " / " + thousands(float64(c.upOpenMin))
				}
				gor := "–"
				if !math.IsNaN(c.goroutines) {
					gor = f2(c.goroutines)
				}
				mem, idle, peak, thr, cpuS, cpuU := "–", "–", "–", "–", "–", "–"
				if t != "direct" { // direct watches no gateway
					mem, idle, peak = f2(c.memKiB), mb(int64(c.idleKB)), mb(int64(c.peakKB))
					thr, cpuS, cpuU = thousands(c.threads), f3(c.cpuStream), f2(c.cpuUs)
				}
				busy := "–"
				if t != "direct" {
					busy = pctCell(c.gwBusy)
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
					names[t], thousands(float64(n)), held, idle, peak, mem, gor, thr, cpuS, cpuU,
					f3(c.ttfb50), signed(c.add50), f3(c.ttfb99), signed(c.add99), busy, c.errors)
			}
		}
	}
	writeOpenBudgets(w, cs)
}

// held reports whether a cell kept its streams open: no errors, and the
// least number open during the hold (at the upstream when it was sampled,
// else at the load generator) at least 95 % of the streams asked for.
func (c *openCell) held(streams int) (bool, int) {
	least := c.openMin
	if c.hasUp {
		least = min(least, c.upOpenMin)
	}
	return c.errors == 0 && float64(least) >= 0.95*float64(streams), least
}

// bareShare is the open-streams memory budget as a share of the bare
// proxy's memory per stream (-bare-share): ½ on plain HTTP/1.1, 1 over TLS
// and HTTP/2.
var bareShare = 0.5

// shareName spells a share of the bare proxy's memory in a budget's line.
func shareName(f float64) string {
	switch f {
	case 0.5:
		return "½ the bare proxy's"
	case 1:
		return "the bare proxy's"
	}
	return strconv.FormatFloat(f, 'g', -1, 64) + "× the bare proxy's"
}

func writeOpenBudgets(w io.Writer, cs map[openKey]*openCell) {
	fmt.Fprintln(w, "\n**budgets for open streams** (sluice, this run)")
	fmt.Fprintln(w)
	get := func(v, t string, n int) *openCell { return cs[openKey{v, t, n}] }
	if s := get("shape", "sluice", 8000); s != nil {
		ok, least := s.held(8000)
		fmt.Fprintf(w, "- 8,000 open streams with zero errors: %d errors, least held %s — %s\n", s.errors, thousands(float64(least)), verdict(ok))
	} else {
		fmt.Fprintln(w, "- 8,000 open streams with zero errors: not evaluated (sluice not measured at 8,000)")
	}
	var counts []int
	for k := range cs {
		if k.variant == "shape" && k.target == "sluice" && !slices.Contains(counts, k.streams) {
			counts = append(counts, k.streams)
		}
	}
	slices.Sort(counts)
	for _, n := range counts {
		s, b := get("shape", "sluice", n), get("shape", "bare", n)
		line := fmt.Sprintf("- memory per open stream at %s ≤ 60 KiB and ≤ %s: %s KiB", thousands(float64(n)), shareName(bareShare), f2(s.memKiB))
		if b == nil {
			fmt.Fprintf(w, "%s; ≤ 60 KiB — %s; %s not evaluated (bare proxy not measured)\n", line, verdict(s.memKiB <= 60), shareName(bareShare))
			continue
		}
		fmt.Fprintf(w, "%s vs %s KiB — %s\n", line, f2(b.memKiB), verdict(s.memKiB <= 60 && s.memKiB <= b.memKiB*bareShare))
	}
	if s, b := get("shape", "sluice", 4000), get("shape", "bare", 4000); s != nil && b != nil {
		fmt.Fprintf(w, "- added TTFB p99 at 4,000 streams ≤ the bare proxy's: %s vs %s ms — %s\n", signed(s.add99), signed(b.add99), verdict(s.add99 <= b.add99))
	} else {
		fmt.Fprintln(w, "- added TTFB p99 at 4,000 streams ≤ the bare proxy's: not evaluated (sluice and the bare proxy not both measured at 4,000)")
	}
	var rate []string
	for k, s := range cs {
		if k.variant != "token-rate" || k.target != "sluice" {
			continue
		}
		if b := get("token-rate", "bare", k.streams); b != nil {
			rate = append(rate, fmt.Sprintf("- CPU per event at %s token-rate streams ≤ the bare proxy's: %s vs %s µs — %s",
				thousands(float64(k.streams)), f2(s.cpuUs), f2(b.cpuUs), verdict(s.cpuUs <= b.cpuUs)))
		}
	}
	slices.Sort(rate)
	if len(rate) == 0 {
		rate = []string{"- CPU per event ≤ the bare proxy's: not evaluated (the token-rate variant did not run through both)"}
	}
	fmt.Fprintln(w, strings.Join(rate, "\n"))
}
