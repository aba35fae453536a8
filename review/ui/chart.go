package ui

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicegw/sluice/store/requestlog"
)

// metric is one of the shares the overview charts.
type metric struct {
	Name, Class string
	// Help says what it counts; Link is its glossary entry.
	Help, Link string
	count      func(requestlog.DaySummary) int64
}

var metrics = []metric{
	{"degraded", "m-degraded", "something could not be expressed to the upstream and the request went on without it", "/ui/glossary#degraded-ranking",
		func(d requestlog.DaySummary) int64 { return d.Degraded }},
	{"refused", "m-refused", "the gateway refused the request", "/ui/glossary#refused",
		func(d requestlog.DaySummary) int64 { return d.Refused }},
	{"switched", "m-switched", "another model than the decided one served", "/ui/glossary#switch-chain",
		func(d requestlog.DaySummary) int64 { return d.Switched }},
	{"fell back", "m-fellback", "the gateway sent the request on to another target after a failure", "/ui/glossary#fallback",
		func(d requestlog.DaySummary) int64 { return d.FellBack }},
	{"outside preference", "m-outside", "a provider outside the preferred order served", "/ui/glossary#verdict-outside_preference",
		func(d requestlog.DaySummary) int64 { return d.OutsidePreference }},
}

// share is a count and its fraction of the total, for the table.
type share struct {
	N   int64
	Pct string
}

func shareOf(n, total int64) share {
	if total == 0 {
		return share{N: n, Pct: "0%"}
	}
	return share{N: n, Pct: fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))}
}

// summaryRow is one (day or hour, team) line of the overview table.
type summaryRow struct {
	Day, Team                             string
	Total                                 int64
	Degraded, Refused, Switched, FellBack share
	// FirstPreferred, OtherPreferred and OutsidePreference are the
	// preference verdicts' shares of the requests.
	FirstPreferred, OtherPreferred, OutsidePreference share
}

// chart is one team's inline SVG: per day a group of four bars, one per
// metric, each the metric's share of that day's requests.
type chart struct {
	Team          string
	Width, Height int
	PlotTop       int
	PlotBottom    int
	Bars          []bar
	Days          []axisLabel
	Ticks         []axisLabel
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type axisLabel struct {
	X, Y float64
	Text string
}

// Chart geometry, in SVG user units.
const (
	chartLeft   = 44
	chartTop    = 12
	chartPlotH  = 160
	chartBottom = 40
	barW        = 7
	groupGap    = 10
)

// buildOverview turns the summaries (per day, or per hour) into the table
// rows and one chart per team. Every chart spans the same buckets, so they
// line up.
func buildOverview(sums []requestlog.DaySummary, bucket requestlog.Bucket) ([]summaryRow, []chart) {
	rowLabel, axisFormat := time.DateOnly, "01-02"
	if bucket == requestlog.BucketHour {
		rowLabel, axisFormat = "2006-01-02 15:00", "15h"
	}
	rows := make([]summaryRow, 0, len(sums))
	var days []time.Time
	var teams []string
	for _, d := range sums {
		rows = append(rows, summaryRow{
			Day: d.Day.Format(rowLabel), Team: d.Team, Total: d.Total,
			Degraded: shareOf(d.Degraded, d.Total), Refused: shareOf(d.Refused, d.Total),
			Switched: shareOf(d.Switched, d.Total), FellBack: shareOf(d.FellBack, d.Total),
			FirstPreferred: shareOf(d.FirstPreferred, d.Total), OtherPreferred: shareOf(d.OtherPreferred, d.Total),
			OutsidePreference: shareOf(d.OutsidePreference, d.Total),
		})
		if !slices.ContainsFunc(days, d.Day.Equal) {
			days = append(days, d.Day)
		}
		if !slices.Contains(teams, d.Team) {
			teams = append(teams, d.Team)
		}
	}
	slices.SortFunc(days, time.Time.Compare)
	slices.Sort(teams)
	groupW := len(metrics)*barW + groupGap
	width := chartLeft + len(days)*groupW + groupGap
	charts := make([]chart, 0, len(teams))
	for _, team := range teams {
		c := chart{Team: team, Width: max(width, 240), Height: chartTop + chartPlotH + chartBottom,
			PlotTop: chartTop, PlotBottom: chartTop + chartPlotH}
		for _, pct := range []int{0, 50, 100} {
			c.Ticks = append(c.Ticks, axisLabel{X: chartLeft - 6, Y: float64(chartTop+chartPlotH-pct*chartPlotH/100) + 4, Text: fmt.Sprintf("%d%%", pct)})
		}
		for i, day := range days {
			x0 := float64(chartLeft + groupGap + i*groupW)
			c.Days = append(c.Days, axisLabel{X: x0 + float64(len(metrics)*barW)/2, Y: float64(chartTop + chartPlotH + 16), Text: day.Format(axisFormat)})
			idx := slices.IndexFunc(sums, func(d requestlog.DaySummary) bool { return d.Team == team && d.Day.Equal(day) })
			if idx < 0 {
				continue
			}
			d := sums[idx]
			for j, m := range metrics {
				n := m.count(d)
				frac := 0.0
				if d.Total > 0 {
					frac = float64(n) / float64(d.Total)
				}
				h := frac * chartPlotH
				c.Bars = append(c.Bars, bar{
					X: x0 + float64(j*barW), Y: float64(chartTop+chartPlotH) - h, W: barW - 1, H: h, Class: m.Class,
					Title: fmt.Sprintf("%s %s: %s %d of %d (%s)", team, day.Format(rowLabel), m.Name, n, d.Total, shareOf(n, d.Total).Pct),
				})
			}
		}
		charts = append(charts, c)
	}
	return rows, charts
}
