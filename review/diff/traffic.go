package diff

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Effects a change has on the recorded requests of a combination, the
// values of [Impact.Effect] and the members of [Weight]. A request counts
// once under each effect its combination has.
const (
	// EffectRefused: served in base, refused in head.
	EffectRefused = "refused"
	// EffectUnrefused: refused in base, served in head.
	EffectUnrefused = "unrefused"
	// EffectDegraded: a degraded item (ranking, preferred_order, chain,
	// chain_truncated) appears.
	EffectDegraded = "degraded"
	// EffectUndegraded: a degraded item of base is gone.
	EffectUndegraded = "undegraded"
	// EffectChainDropped: fallback chain entries sent in base are not sent
	// in head.
	EffectChainDropped = "chain_dropped"
	// EffectChainAdded: head sends chain entries base did not.
	EffectChainAdded = "chain_added"
	// EffectRerouted: the request is still served but sent differently:
	// provider preferences, the native body, a route's targets, the key's
	// upstream.
	EffectRerouted = "rerouted"
)

// effectOrder ranks effects for sorting: what blocks traffic first.
var effectOrder = []string{EffectRefused, EffectUnrefused, EffectDegraded, EffectUndegraded,
	EffectChainDropped, EffectChainAdded, EffectRerouted}

// CodeKeyRemoved is the detail of a refusal caused by removing a key: its
// requests would be answered 401 invalid_api_key.
const CodeKeyRemoved = "invalid_api_key (key removed)"

// TrafficOptions selects the recorded requests [CompareTraffic] weighs a
// change by.
type TrafficOptions struct {
	// From and To bound the window: From <= ts < To. Both are required,
	// and From must be before To (the CLI defaults to the last 7 days).
	From, To time.Time
	// Teams keeps only the requests these teams recorded; empty keeps
	// every team. Changes without traffic are listed for the keys of these
	// teams only.
	Teams []string
}

// ErrTraffic is returned (wrapped, with the cause) when the request log
// cannot be read.
var ErrTraffic = errors.New("diff: the request log cannot be read")

// ErrWindow is returned (wrapped) for a window that is empty or reversed.
var ErrWindow = errors.New("diff: the traffic window must have From before To")

// Traffic is what a change does to the requests the log recorded over a
// window: the report's changes weighed by the requests of each (key, decided
// model, upstream or route) combination. Its JSON form is part of the
// report's stable contract (the package doc).
type Traffic struct {
	// From and To are the window, From <= ts < To.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Days is the window's length in days; per-day figures divide by it.
	Days float64 `json:"days"`
	// Teams is the team filter ([] = every team).
	Teams []string `json:"teams"`
	// Requests counts every request recorded in the window (of the
	// selected teams).
	Requests int64 `json:"requests"`
	// Affected counts the requests whose combination has at least one
	// effect.
	Affected int64 `json:"affected"`
	// RequestRouting counts the affected requests that carried their own
	// routing object: their plan also depended on it, and they are
	// counted under the closest combination (same key, model, upstream),
	// as compiled without one.
	RequestRouting int64 `json:"request_routing"`
	// Totals counts requests by effect.
	Totals Weight `json:"totals"`
	// ByTeam counts requests by effect for each team with an effect,
	// heaviest first (by refused, then by affected requests).
	ByTeam []TeamWeight `json:"by_team"`
	// Impacts are the effects on combinations with recorded traffic,
	// heaviest first.
	Impacts []Impact `json:"impacts"`
	// Untouched are the effects on combinations with no recorded traffic
	// in the window, grouped by key, effect and upstream; listed last.
	Untouched []Untouched `json:"untouched"`
}

// Weight counts requests by effect: each field counts the requests with
// the effect of the same name (the Effect constants).
type Weight struct {
	// Refused counts requests that would be refused (what --fail-over gates).
	Refused int64 `json:"refused"`
	// Unrefused counts requests that would no longer be refused.
	Unrefused int64 `json:"unrefused"`
	// Degraded and Undegraded count requests that gain or lose a degraded item.
	Degraded   int64 `json:"degraded"`
	Undegraded int64 `json:"undegraded"`
	// ChainDropped and ChainAdded count requests whose chain loses or gains entries.
	ChainDropped int64 `json:"chain_dropped"`
	ChainAdded   int64 `json:"chain_added"`
	// Rerouted counts requests still served but sent differently.
	Rerouted int64 `json:"rerouted"`
	// Affected counts requests with at least one effect.
	Affected int64 `json:"affected"`
}

// add counts n requests under effect.
func (w *Weight) add(effect string, n int64) {
	switch effect {
	case EffectRefused:
		w.Refused += n
	case EffectUnrefused:
		w.Unrefused += n
	case EffectDegraded:
		w.Degraded += n
	case EffectUndegraded:
		w.Undegraded += n
	case EffectChainDropped:
		w.ChainDropped += n
	case EffectChainAdded:
		w.ChainAdded += n
	case EffectRerouted:
		w.Rerouted += n
	}
}

// TeamWeight is one team's requests by effect.
type TeamWeight struct {
	// Team is the team recorded on the requests.
	Team string `json:"team"`
	Weight
}

// Impact is one effect on one combination with recorded traffic.
type Impact struct {
	// Effect is one of the Effect constants.
	Effect string `json:"effect"`
	// Detail says what: the refusal code, the degraded items ("ranking+chain"),
	// the chain entries, or what was rerouted ("providers.rank_by", "route
	// targets", "upstream market → edge", native body members).
	Detail string `json:"detail"`
	// Team is the team recorded on the requests; Key their key id.
	Team string `json:"team"`
	Key  string `json:"key"`
	// Model is the decided model recorded on the requests, Upstream the
	// upstream they were sent to.
	Model    string `json:"model"`
	Upstream string `json:"upstream"`
	// Route is the route alias the requests asked for, "" for a plain model.
	Route string `json:"route"`
	// Requests counts the requests; PerDay divides it by the window's days.
	Requests int64   `json:"requests"`
	PerDay   float64 `json:"per_day"`
	// RequestRouting counts those of Requests that carried their own
	// routing object.
	RequestRouting int64 `json:"request_routing"`
}

// Untouched is one effect on combinations no request of the window used.
type Untouched struct {
	// Effect and Detail are as in [Impact].
	Effect string `json:"effect"`
	Detail string `json:"detail"`
	// Team is the key's team (head's, or base's for a removed key); Key
	// the key id.
	Team string `json:"team"`
	Key  string `json:"key"`
	// Upstream is "" when the effect is the same on every upstream (a
	// model newly forbidden or allowed, a removed key).
	Upstream string `json:"upstream"`
	// Models lists the models (route aliases written "alias → target"),
	// sorted.
	Models []string `json:"models"`
}

// CompareTraffic is [Compare] weighed by the request log: it counts the
// requests of store per combination over the window (one grouped query),
// compares the revisions (every model a counted request decided on is
// compiled too, when opts.Models is nil) and sets [Report.Traffic].
func CompareTraffic(ctx context.Context, base, head *snapshot.Snapshot, opts Options, store requestlog.Store, topts TrafficOptions) (*Report, error) {
	if topts.From.IsZero() || topts.To.IsZero() || !topts.From.Before(topts.To) {
		return nil, fmt.Errorf("%w (from %s, to %s)", ErrWindow, topts.From.Format(time.RFC3339), topts.To.Format(time.RFC3339))
	}
	counts, err := store.Traffic(ctx, requestlog.TrafficFilter{From: topts.From, To: topts.To, Teams: topts.Teams})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTraffic, err)
	}
	if opts.Models == nil {
		opts.Models = allModels(base, head)
		for _, c := range counts {
			if c.DecidedModel != "" {
				opts.Models = append(opts.Models, c.DecidedModel)
			}
		}
	}
	r, err := Compare(ctx, base, head, opts)
	if err != nil {
		return nil, err
	}
	r.Traffic = Weigh(r, counts, topts)
	return r, nil
}

// effect is one effect of a change on a combination.
type effect struct{ kind, detail string }

// combo identifies a weighed combination; model is the decided model, and
// route the alias ("" for a plain model).
type combo struct{ key, model, upstream, route string }

// Weigh weighs the report's changes by recorded traffic counts (as
// [requestlog.Store.Traffic] returns them) over the window of topts. It is
// what [CompareTraffic] does after comparing; counts outside the report's
// keys, or on combinations without a change, weigh nothing.
func Weigh(r *Report, counts []requestlog.TrafficCount, topts TrafficOptions) *Traffic {
	w := &weigher{r: r, keys: map[string]*KeyChange{}, models: map[[2]string]*ModelChange{}, routes: map[string]*RouteChange{}}
	for i := range r.Keys {
		k := &r.Keys[i]
		w.keys[k.Key] = k
		for j := range k.Models {
			w.models[[2]string{k.Key, k.Models[j].Model}] = &k.Models[j]
		}
	}
	for i := range r.Routes {
		w.routes[strings.ToLower(r.Routes[i].Model)] = &r.Routes[i]
	}
	t := &Traffic{From: topts.From.UTC(), To: topts.To.UTC(), Days: topts.To.Sub(topts.From).Hours() / 24,
		Teams: nonNil(slices.Clone(topts.Teams)), ByTeam: []TeamWeight{}, Impacts: []Impact{}, Untouched: []Untouched{}}
	type impactKey struct {
		combo
		team, kind, detail string
	}
	impacts := map[impactKey]*Impact{}
	teams := map[string]*Weight{}
	hit := map[combo]bool{}
	for _, c := range counts {
		t.Requests += c.Requests
		cb := combo{c.KeyID, strings.ToLower(c.DecidedModel), c.Upstream, strings.ToLower(c.Route)}
		effs, anchor := w.weigh(cb)
		if len(effs) == 0 {
			continue
		}
		hit[anchor] = true
		t.Affected += c.Requests
		t.Totals.Affected += c.Requests
		tw := teams[c.Team]
		if tw == nil {
			tw = &Weight{}
			teams[c.Team] = tw
		}
		tw.Affected += c.Requests
		t.RequestRouting += c.WithRouting
		for _, e := range effs {
			t.Totals.add(e.kind, c.Requests)
			tw.add(e.kind, c.Requests)
			k := impactKey{cb, c.Team, e.kind, e.detail}
			im := impacts[k]
			if im == nil {
				im = &Impact{Effect: e.kind, Detail: e.detail, Team: c.Team, Key: cb.key, Model: cb.model, Upstream: cb.upstream, Route: cb.route}
				impacts[k] = im
			}
			im.Requests += c.Requests
			im.RequestRouting += c.WithRouting
		}
	}
	for _, im := range impacts {
		im.PerDay = perDay(im.Requests, t.Days)
		t.Impacts = append(t.Impacts, *im)
	}
	slices.SortFunc(t.Impacts, func(a, b Impact) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(effectRank(a.Effect), effectRank(b.Effect)),
			cmp.Compare(a.Team, b.Team), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Detail, b.Detail))
	})
	for team, tw := range teams {
		t.ByTeam = append(t.ByTeam, TeamWeight{Team: team, Weight: *tw})
	}
	slices.SortFunc(t.ByTeam, func(a, b TeamWeight) int {
		return cmp.Or(cmp.Compare(b.Refused, a.Refused), cmp.Compare(b.Affected, a.Affected), cmp.Compare(a.Team, b.Team))
	})
	t.Untouched = w.untouched(hit, topts.Teams)
	return t
}

func effectRank(e string) int { return slices.Index(effectOrder, e) }

// perDay is n per day over days, to the hundredth.
func perDay(n int64, days float64) float64 {
	if days <= 0 {
		return 0
	}
	return math.Round(float64(n)/days*100) / 100
}

// weigher maps recorded combinations onto a report's changes.
type weigher struct {
	r      *Report
	keys   map[string]*KeyChange
	models map[[2]string]*ModelChange // by (key, model)
	routes map[string]*RouteChange
}

// weigh lists what the report's changes do to requests of one recorded
// combination, and the combination of the report they are counted under
// (the anchor, which the list of changes without traffic leaves out): a
// change on (key, model) that applies on every upstream is anchored on
// upstream "", a route's on its closest target.
func (w *weigher) weigh(c combo) ([]effect, combo) {
	k := w.keys[c.key]
	if k == nil {
		return nil, c
	}
	switch k.Status {
	case StatusRemoved:
		return []effect{{EffectRefused, CodeKeyRemoved}}, combo{key: c.key}
	case StatusAdded:
		return nil, c
	}
	if c.route != "" {
		return w.routeEffects(k, c)
	}
	var out []effect
	if f := fieldOf(k.Fields, "upstream"); f != nil && jsonString(f.Base) == c.upstream {
		out = append(out, effect{EffectRerouted, "upstream " + jsonString(f.Base) + " → " + jsonString(f.Head)})
	}
	m := w.models[[2]string{c.key, c.model}]
	if m == nil {
		return out, c
	}
	switch m.Access {
	case AccessNewlyForbidden:
		return []effect{{EffectRefused, guardrails.CodeModelForbidden}}, combo{key: c.key, model: c.model}
	case AccessNewlyAllowed:
		return []effect{{EffectUnrefused, guardrails.CodeModelForbidden}}, combo{key: c.key, model: c.model}
	}
	cc := findUpstream(m.Upstreams, c.upstream, "")
	switch {
	case cc == nil:
		// Same outcome and the same bytes on this upstream: whatever changed
		// in the plan (a chain the upstream cannot express, say) does not
		// reach its requests.
		return out, c
	case cc.Status == StatusRemoved:
		return append(out, effect{EffectRerouted, "now a route alias"}), c
	case cc.Status == StatusAdded:
		return out, c
	}
	return append(out, compiledEffects(m, cc, false)...), c
}

// routeEffects weighs a request that asked for a route alias. The recorded
// decided model is the first target's model and the upstream the last
// dialled one; the closest target is the one with both, else the first with
// the model.
func (w *weigher) routeEffects(k *KeyChange, c combo) ([]effect, combo) {
	var out []effect
	if rc := w.routes[c.route]; rc != nil {
		switch rc.Status {
		case StatusRemoved:
			out = append(out, effect{EffectRerouted, "route removed"})
		case StatusChanged:
			fs := make([]string, len(rc.Fields))
			for i, f := range rc.Fields {
				fs[i] = f.Field
			}
			out = append(out, effect{EffectRerouted, "route " + strings.Join(fs, ", ")})
		}
	}
	m := w.models[[2]string{k.Key, c.route}]
	if m == nil {
		return out, c
	}
	cc := findUpstream(m.Upstreams, c.upstream, c.model)
	if cc == nil {
		for i := range m.Upstreams {
			if m.Upstreams[i].Model == c.model {
				cc = &m.Upstreams[i]
				break
			}
		}
	}
	if cc == nil {
		return out, c
	}
	anchor := combo{key: c.key, model: cc.Model, upstream: cc.Upstream, route: c.route}
	switch cc.Status {
	case StatusRemoved:
		if !hasKind(out, EffectRerouted) {
			out = append(out, effect{EffectRerouted, "target " + cc.Upstream + ":" + cc.Model + " removed"})
		}
		return out, anchor
	case StatusAdded:
		return out, anchor
	}
	return append(out, compiledEffects(m, cc, true)...), anchor
}

// compiledEffects weighs one changed combination that exists on both sides.
// On a route, a target refused in head is skipped, not answered: the
// request is refused only when every target is.
func compiledEffects(m *ModelChange, cc *CompiledChange, route bool) []effect {
	b, h := cc.Base, cc.Head
	switch {
	case b.Refused == "" && h.Refused != "":
		if route && !(m.allRefused[1] && !m.allRefused[0]) {
			return []effect{{EffectRerouted, "target " + cc.Upstream + ":" + cc.Model + " refused " + h.Refused}}
		}
		return []effect{{EffectRefused, h.Refused}}
	case b.Refused != "" && h.Refused == "":
		if route && m.allRefused[0] {
			return []effect{{EffectUnrefused, b.Refused}}
		}
		if route {
			return []effect{{EffectRerouted, "target " + cc.Upstream + ":" + cc.Model + " no longer refused"}}
		}
		return []effect{{EffectUnrefused, b.Refused}}
	case h.Refused != "":
		return nil // refused on both sides, whatever the code
	}
	var out []effect
	if d := minus(h.Degraded, b.Degraded); len(d) > 0 {
		out = append(out, effect{EffectDegraded, strings.Join(d, "+")})
	}
	if d := minus(b.Degraded, h.Degraded); len(d) > 0 {
		out = append(out, effect{EffectUndegraded, strings.Join(d, "+")})
	}
	if m.Chain != nil && !slices.Contains(h.Degraded, "chain") {
		if len(m.Chain.Removed) > 0 {
			out = append(out, effect{EffectChainDropped, strings.Join(m.Chain.Removed, ", ")})
		}
		if len(m.Chain.Added) > 0 {
			out = append(out, effect{EffectChainAdded, strings.Join(m.Chain.Added, ", ")})
		}
	}
	var what []string
	for _, p := range m.Providers {
		what = append(what, "providers."+p.Field)
	}
	if len(what) == 0 && len(out) == 0 {
		for _, n := range cc.Native {
			what = append(what, n.Field)
		}
	}
	if len(what) > 0 {
		out = append(out, effect{EffectRerouted, strings.Join(what, ", ")})
	}
	return out
}

// untouched lists the effects of the report on combinations no counted
// request used (hit holds those that were), grouped by (key, effect,
// detail, upstream), for the keys of teams (every key when empty).
func (w *weigher) untouched(hit map[combo]bool, teams []string) []Untouched {
	type gk struct{ key, kind, detail, upstream string }
	groups := map[gk]*Untouched{}
	add := func(k *KeyChange, c combo, label string) {
		effs, anchor := w.weigh(c)
		if hit[anchor] {
			return
		}
		team := ""
		if p := k.principal(); p != nil {
			team = p.Team
		}
		if len(teams) > 0 && !slices.Contains(teams, team) {
			return
		}
		for _, e := range effs {
			g := gk{k.Key, e.kind, e.detail, c.upstream}
			u := groups[g]
			if u == nil {
				u = &Untouched{Effect: e.kind, Detail: e.detail, Team: team, Key: k.Key, Upstream: c.upstream, Models: []string{}}
				groups[g] = u
			}
			if label != "" && !slices.Contains(u.Models, label) {
				u.Models = append(u.Models, label)
			}
		}
	}
	for i := range w.r.Keys {
		k := &w.r.Keys[i]
		if k.Status == StatusRemoved {
			add(k, combo{key: k.Key}, "")
			continue
		}
		for j := range k.Models {
			m := &k.Models[j]
			if m.Access != "" {
				add(k, combo{key: k.Key, model: m.Model}, m.Model)
				continue
			}
			for _, cc := range m.Upstreams {
				c := combo{key: k.Key, model: m.Model, upstream: cc.Upstream}
				label := m.Model
				if m.Route {
					c = combo{key: k.Key, model: cc.Model, upstream: cc.Upstream, route: m.Model}
					label = m.Model + " → " + cc.Model
				}
				add(k, c, label)
			}
		}
	}
	out := make([]Untouched, 0, len(groups))
	for _, u := range groups {
		slices.Sort(u.Models)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Untouched) int {
		return cmp.Or(cmp.Compare(effectRank(a.Effect), effectRank(b.Effect)), cmp.Compare(a.Team, b.Team),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.Detail, b.Detail))
	})
	return out
}

func findUpstream(cs []CompiledChange, upstream, model string) *CompiledChange {
	for i := range cs {
		if cs[i].Upstream == upstream && cs[i].Model == model {
			return &cs[i]
		}
	}
	return nil
}

func fieldOf(fs []FieldChange, name string) *FieldChange {
	for i := range fs {
		if fs[i].Field == name {
			return &fs[i]
		}
	}
	return nil
}

// jsonString decodes a JSON string value ("" for anything else).
func jsonString(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func hasKind(es []effect, kind string) bool {
	return slices.ContainsFunc(es, func(e effect) bool { return e.kind == kind })
}

// minus returns the entries of a not in b, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
