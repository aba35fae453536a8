package diff

import (
	"context"
	"strings"

	"github.com/sluicegw/sluice/review/ui"
)

var _ ui.WhatIfFunc = WhatIf

// WhatIf is the compliance pages' what-if view ([ui.WhatIfFunc]): the
// comparison of `sluice diff --traffic` over every key and model, from the
// serving configuration to the head one, weighed by the request log, and
// laid out for the page.
func WhatIf(ctx context.Context, in ui.WhatIfInput) (*ui.WhatIfResult, error) {
	r, err := CompareTraffic(ctx, in.Base, in.Head, Options{}, in.Store, TrafficOptions{From: in.From, To: in.To, Teams: in.Teams})
	if err != nil {
		return nil, err
	}
	t := r.Traffic
	res := &ui.WhatIfResult{Changed: r.Changed, Window: t.window(), Requests: t.Requests, Affected: t.Affected,
		RequestRouting: t.RequestRouting, Refused: t.Totals.Refused}
	for _, row := range t.Totals.shownRows() {
		res.Totals = append(res.Totals, ui.WhatIfTotal{Label: row.label, Requests: grouped(row.n), PerDay: rate(perDay(row.n, t.Days))})
	}
	for _, tw := range t.ByTeam {
		res.Teams = append(res.Teams, ui.WhatIfTeam{Team: orNone(tw.Team), Refused: grouped(tw.Refused), Unrefused: grouped(tw.Unrefused),
			Degraded: grouped(tw.Degraded), Undegraded: grouped(tw.Undegraded), ChainDropped: grouped(tw.ChainDropped),
			ChainAdded: grouped(tw.ChainAdded), Rerouted: grouped(tw.Rerouted)})
	}
	for _, im := range t.Impacts {
		wi := ui.WhatIfImpact{Requests: grouped(im.Requests), PerDay: rate(im.PerDay), Effect: im.Effect,
			Change: effectTitle(im.Effect, im.Detail), Team: orNone(im.Team), Key: im.Key, Model: im.Model, Route: im.Route,
			Upstream: orNone(im.Upstream)}
		if im.RequestRouting > 0 {
			wi.RequestRouting = grouped(im.RequestRouting)
		}
		res.Impacts = append(res.Impacts, wi)
	}
	for _, u := range t.Untouched {
		res.Untouched = append(res.Untouched, u.line())
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		return nil, err
	}
	res.Report = b.String()
	return res, nil
}
