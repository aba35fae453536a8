package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// FormatVersion is the version of the JSON form of a [Report]. It changes
// only when a member is removed or changes meaning; new members may appear
// without a change.
const FormatVersion = 1

// Access values of a [ModelChange].
const (
	// AccessNewlyForbidden: a guardrail forbids the model in head and did not
	// in base (model_forbidden appears).
	AccessNewlyForbidden = "newly_forbidden"
	// AccessNewlyAllowed: model_forbidden disappears.
	AccessNewlyAllowed = "newly_allowed"
)

// Status values of a [KeyChange], an [UpstreamChange], a [RouteChange] and a
// [CompiledChange].
const (
	StatusAdded   = "added"
	StatusRemoved = "removed"
	StatusChanged = "changed"
)

// Options selects what [Compare] compiles. The zero value compares every key,
// every model and every upstream of either revision.
type Options struct {
	// Keys lists the key ids to compare. nil (the default) means every key
	// present in either revision. A listed key present in neither is an error.
	Keys []string
	// Models lists the models to compile for each key. nil (the default)
	// means every model of either revision's catalog plus every route alias
	// of either revision.
	Models []string
}

// Report is what changed between two configuration revisions. Its JSON form
// is a stable contract, documented in the package doc.
type Report struct {
	// Format is [FormatVersion].
	Format int `json:"format"`
	// Changed reports whether anything changed; the CLI exits 1 when it did.
	Changed bool `json:"changed"`
	// Summary counts what a reviewer looks at first.
	Summary Summary `json:"summary"`
	// Upstreams lists upstreams added, removed or changed, by name.
	Upstreams []UpstreamChange `json:"upstreams"`
	// Routes lists routes added, removed or changed, by alias.
	Routes []RouteChange `json:"routes"`
	// Keys lists the keys with a change, by key id.
	Keys []KeyChange `json:"keys"`
	// Compared says how much was compiled.
	Compared Compared `json:"compared"`
	// Traffic weighs the changes by recorded requests; set by
	// [CompareTraffic] (sluice diff --traffic), absent otherwise.
	Traffic *Traffic `json:"traffic,omitempty"`
}

// Compared says what [Compare] covered.
type Compared struct {
	// Keys, Models and Upstreams are the sizes of the compared sets.
	Keys      int `json:"keys"`
	Models    int `json:"models"`
	Upstreams int `json:"upstreams"`
	// Groups is the number of distinct (base, head) key groups that were
	// compiled: keys whose merged profile and guardrail patterns are equal on
	// both sides share one compilation.
	Groups int `json:"groups"`
}

// Summary counts changes over (key, model) and (key, model, upstream)
// combinations.
type Summary struct {
	// KeysAffected counts keys added, removed or with any change.
	KeysAffected int `json:"keys_affected"`
	// KeysAdded and KeysRemoved count keys present in only one revision.
	KeysAdded   int `json:"keys_added"`
	KeysRemoved int `json:"keys_removed"`
	// NewlyForbidden and NewlyAllowed count (key, model) pairs whose
	// model_forbidden refusal appears or disappears.
	NewlyForbidden int `json:"models_newly_forbidden"`
	NewlyAllowed   int `json:"models_newly_allowed"`
	// NewRefusals counts (key, model, upstream) combinations refused in head
	// with a code they were not refused with in base, by code.
	// model_forbidden is counted in NewlyForbidden instead.
	NewRefusals map[string]int `json:"new_refusals"`
	// ResolvedRefusals counts the reverse: refusals of base gone in head.
	ResolvedRefusals map[string]int `json:"resolved_refusals"`
	// NewDegrades counts degraded items present in head and not in base, by
	// item (ranking, preferred_order, chain, chain_truncated).
	NewDegrades map[string]int `json:"new_degrades"`
	// ResolvedDegrades counts degraded items of base gone in head.
	ResolvedDegrades map[string]int `json:"resolved_degrades"`
	// NativeChanged counts combinations served on both sides whose native
	// body changed.
	NativeChanged int `json:"native_changed"`
}

// UpstreamChange is an upstream added, removed or changed.
type UpstreamChange struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Connector is the connector kind (head's, or base's when removed).
	Connector string `json:"connector"`
	// Fields lists what changed ("connector", "base_url",
	// "content_filters") when Status is "changed".
	Fields []FieldChange `json:"fields,omitempty"`
}

// RouteChange is a route alias added, removed or changed.
type RouteChange struct {
	Model  string `json:"model"`
	Status string `json:"status"`
	// Fields lists what changed ("strategy", "retries", "forbid_classes",
	// "targets", "then.targets", "then.on") when Status is "changed". Targets
	// are written "upstream:model", with " takes_over=a|b" when restricted.
	Fields []FieldChange `json:"fields,omitempty"`
}

// FieldChange is one value that differs. Base and Head are JSON values; a
// side where the value is absent is omitted (null is a value: an allowed
// list of null means "no restriction").
type FieldChange struct {
	Field string          `json:"field"`
	Base  json.RawMessage `json:"base,omitempty"`
	Head  json.RawMessage `json:"head,omitempty"`
}

// KeyChange is everything that changed for one key (principal).
type KeyChange struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	// Base and Head are the key's principal in each revision (nil on the
	// side where the key does not exist).
	Base *profiles.Principal `json:"base,omitempty"`
	Head *profiles.Principal `json:"head,omitempty"`
	// Fields lists changes of the key itself ("org", "team", "project",
	// "upstream"), of its merged profile ("profile.fallbacks",
	// "profile.rank_by", "profile.preferred", "profile.allowed",
	// "profile.denied") and of the guardrail patterns that apply to it
	// ("guardrail.allow_models", ...).
	Fields []FieldChange `json:"fields"`
	// Models lists the compiled models that changed, sorted by model.
	Models []ModelChange `json:"models"`
}

// ModelChange is what changed for one (key, model).
type ModelChange struct {
	Model string `json:"model"`
	// Route reports that the model is a route alias (in either revision):
	// its Upstreams entries are then one per route target.
	Route bool `json:"route,omitempty"`
	// Access is "newly_forbidden" or "newly_allowed"; such a change carries
	// no further detail (a forbidden model is refused on every upstream).
	Access string `json:"access,omitempty"`
	// Chain is set when the fallback chain changed.
	Chain *ListChange `json:"chain,omitempty"`
	// Dropped is set when the chain entries a guardrail (or deduplication)
	// removed changed; entries are "model (reason)".
	Dropped *ListChange `json:"dropped,omitempty"`
	// Providers lists changes of the effective provider preferences:
	// "rank_by", "preferred", "allowed" (null = no restriction), "denied",
	// "content_filter" and "data_policy".
	Providers []FieldChange `json:"providers,omitempty"`
	// Upstreams lists per-upstream changes, sorted by upstream then model.
	Upstreams []CompiledChange `json:"upstreams,omitempty"`

	// allRefused says, for a route alias, whether every target is refused
	// in base and in head: a target refused in head is then no detour but
	// the request's refusal, which weighing the change by traffic needs.
	allRefused [2]bool
}

// ListChange is an ordered list that changed: both values and the entries
// added and removed (a reorder has neither).
type ListChange struct {
	Base    []string `json:"base"`
	Head    []string `json:"head"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

// Outcome is one side of a compiled combination.
type Outcome struct {
	// Refused is the refusal code, or "" when the upstream serves.
	Refused string `json:"refused"`
	// Degraded is the sorted set of what cannot be expressed.
	Degraded []string `json:"degraded"`
	// DataVia is how each data restriction is held there
	// ("zero_retention=native,max_price=allow_list"), omitted without one.
	DataVia string `json:"data_via,omitempty"`
}

// CompiledChange is one (key, model, upstream) combination that changed.
type CompiledChange struct {
	Upstream string `json:"upstream"`
	// Model is the target's model for a route alias; "" otherwise.
	Model string `json:"model,omitempty"`
	// Status is "changed", or "added"/"removed" for a route target present
	// on one side only.
	Status string   `json:"status"`
	Base   *Outcome `json:"base,omitempty"`
	Head   *Outcome `json:"head,omitempty"`
	// Native lists the members of the native body that changed, by JSON
	// pointer ("/path" is the upstream path, not a body member), when both
	// sides serve.
	Native []FieldChange `json:"native,omitempty"`
}

// Compare compiles every selected (key, model, upstream) combination under
// both revisions and reports what changed. Work that does not depend on the
// model is done once per key (ladder merge, guardrail decision), and keys
// whose merged profile and guardrail patterns are equal share one
// compilation per model; combinations are compared by their outcome and
// native bytes first, and detailed only when they differ.
func Compare(ctx context.Context, base, head *snapshot.Snapshot, opts Options) (*Report, error) {
	b, err := newSide(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	h, err := newSide(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	r := &Report{Format: FormatVersion, Upstreams: []UpstreamChange{}, Routes: []RouteChange{}, Keys: []KeyChange{},
		Summary: Summary{NewRefusals: map[string]int{}, ResolvedRefusals: map[string]int{}, NewDegrades: map[string]int{}, ResolvedDegrades: map[string]int{}}}
	r.Upstreams = compareUpstreams(base.Config, head.Config)
	r.Routes = compareRoutes(base.Config, head.Config)

	keys, err := selectKeys(base.Config, head.Config, opts.Keys)
	if err != nil {
		return nil, err
	}
	models := opts.Models
	if models == nil {
		models = allModels(base, head)
	}
	for i, m := range models {
		models[i] = strings.ToLower(strings.TrimSpace(m))
	}
	models = sortedUnique(models)
	c := &comparison{ctx: ctx, base: b, head: h, models: models, pairs: map[[2]*group]*pairResult{}}
	c.common = commonUpstreams(base, head)
	c.envSame = len(r.Upstreams) == 0 && len(r.Routes) == 0 && sameCatalog(base.Catalog, head.Catalog)
	r.Compared = Compared{Keys: len(keys), Models: len(models), Upstreams: len(unionUpstreams(base, head))}

	for _, id := range keys {
		bk, hk := base.Config.KeyByID(id), head.Config.KeyByID(id)
		kc := KeyChange{Key: id, Fields: []FieldChange{}, Models: []ModelChange{}}
		switch {
		case bk == nil:
			p := hk.Principal()
			kc.Status, kc.Head = StatusAdded, &p
			r.Summary.KeysAdded++
		case hk == nil:
			p := bk.Principal()
			kc.Status, kc.Base = StatusRemoved, &p
			r.Summary.KeysRemoved++
		default:
			bp, hp := bk.Principal(), hk.Principal()
			kc.Status, kc.Base, kc.Head = StatusChanged, &bp, &hp
			bg, hg := b.groupOf[id], h.groupOf[id]
			kc.Fields = keyFields(base.Config, head.Config, bk, hk, bg, hg)
			pr, err := c.pair(bg, hg)
			if err != nil {
				return nil, err
			}
			kc.Models = pr.models
			pr.addTo(&r.Summary)
			if len(kc.Fields) == 0 && len(kc.Models) == 0 {
				continue
			}
		}
		r.Keys = append(r.Keys, kc)
	}
	r.Compared.Groups = len(c.pairs)
	r.Summary.KeysAffected = len(r.Keys)
	r.Changed = len(r.Keys) > 0 || len(r.Upstreams) > 0 || len(r.Routes) > 0
	return r, nil
}

// group is the keys of one revision whose plans are equal for every model:
// the same merged profile values and the same guardrail patterns (expanded
// against the same catalog). Provenance may differ; it is not compiled.
type group struct {
	fp        string
	principal profiles.Principal // of the first key, stamped on plans
	merged    profiles.Merged
	decision  *guardrails.Decision
}

// side is one revision with its keys grouped.
type side struct {
	snap    *snapshot.Snapshot
	groupOf map[string]*group // by key id
}

func newSide(ctx context.Context, s *snapshot.Snapshot) (*side, error) {
	sd := &side{snap: s, groupOf: map[string]*group{}}
	byFP := map[string]*group{}
	for i := range s.Config.Keys {
		k := &s.Config.Keys[i]
		d, err := s.Decision(ctx, k.Principal())
		if err != nil {
			return nil, err
		}
		m := profiles.Merge(s.Layers(k.ID)...)
		fp := fingerprint(m, d)
		for _, u := range s.UpstreamNames() {
			// A caller's own key changes what an upstream can be held
			// to (the data-policy check): keys differing there differ.
			if s.CallerKey(k.ID, u) != "" {
				fp += "\x00byok:" + u
			}
		}
		g := byFP[fp]
		if g == nil {
			g = &group{fp: fp, principal: k.Principal(), merged: m, decision: d}
			byFP[fp] = g
		}
		sd.groupOf[k.ID] = g
	}
	return sd, nil
}

// fingerprint identifies what a plan is decided from, provenance aside.
func fingerprint(m profiles.Merged, d *guardrails.Decision) string {
	type fpv struct {
		Profile  profiles.ProfileView
		Patterns *guardrails.Patterns
	}
	v := fpv{Profile: m.View()}
	if d != nil {
		p := d.Patterns()
		v.Patterns = &p
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// comparison holds the state of one [Compare] run.
type comparison struct {
	ctx        context.Context
	base, head *side
	models     []string
	common     []string // upstreams of both revisions, sorted
	envSame    bool     // same catalog, upstreams and routes
	pairs      map[[2]*group]*pairResult
}

// pairResult is the comparison of one base group with one head group: the
// same for every key in both.
type pairResult struct {
	models []ModelChange
	sum    Summary
}

func (p *pairResult) addTo(s *Summary) {
	s.NewlyForbidden += p.sum.NewlyForbidden
	s.NewlyAllowed += p.sum.NewlyAllowed
	s.NativeChanged += p.sum.NativeChanged
	for _, mm := range [][2]map[string]int{{s.NewRefusals, p.sum.NewRefusals}, {s.ResolvedRefusals, p.sum.ResolvedRefusals},
		{s.NewDegrades, p.sum.NewDegrades}, {s.ResolvedDegrades, p.sum.ResolvedDegrades}} {
		for k, v := range mm[1] {
			mm[0][k] += v
		}
	}
}

func (c *comparison) pair(bg, hg *group) (*pairResult, error) {
	k := [2]*group{bg, hg}
	if pr, ok := c.pairs[k]; ok {
		return pr, nil
	}
	pr := &pairResult{models: []ModelChange{}, sum: Summary{NewRefusals: map[string]int{}, ResolvedRefusals: map[string]int{},
		NewDegrades: map[string]int{}, ResolvedDegrades: map[string]int{}}}
	c.pairs[k] = pr
	if c.envSame && bg.fp == hg.fp {
		return pr, nil // same inputs on both sides: nothing can differ
	}
	for _, m := range c.models {
		mc, err := c.compareModel(bg, hg, m, &pr.sum)
		if err != nil {
			return nil, err
		}
		if mc != nil {
			pr.models = append(pr.models, *mc)
		}
	}
	return pr, nil
}

// compiled is one side of a (group, model) compilation.
type compiled struct {
	route   bool
	plan    *compiler.Plan // nil for a route alias
	entries []entry        // sorted by (upstream, model)
}

type entry struct {
	upstream, model string
	refused         string
	degraded        []string
	path            string
	native          []byte
	dataVia         string
}

func (s *side) compile(g *group, model string, common []string) (*compiled, error) {
	memo := s.snap.MemoMerged(g.principal, g.merged, g.decision, snapshot.Pin{}, snapshot.ModelBody(model))
	one := func(upstream, m string) (entry, error) {
		cp, err := memo.Compile(upstream, m)
		if err != nil {
			return entry{}, err
		}
		e := entry{upstream: upstream, degraded: cp.Degraded(), dataVia: cp.Outcome.DataVia}
		if r := cp.Refused(); r != nil {
			e.refused = r.Code
		} else {
			e.path, e.native = cp.Native.Path, cp.Native.Body
		}
		return e, nil
	}
	out := &compiled{}
	if rt := s.snap.Config.Route(model); rt != nil {
		out.route = true
		seen := map[[2]string]bool{}
		for _, t := range rt.AllTargets() {
			tm := strings.ToLower(t.Model)
			if seen[[2]string{t.Upstream, tm}] {
				continue
			}
			seen[[2]string{t.Upstream, tm}] = true
			e, err := one(t.Upstream, tm)
			if err != nil {
				return nil, err
			}
			e.model = tm
			out.entries = append(out.entries, e)
		}
		sort.Slice(out.entries, func(i, j int) bool {
			a, b := out.entries[i], out.entries[j]
			return a.upstream < b.upstream || a.upstream == b.upstream && a.model < b.model
		})
		return out, nil
	}
	out.plan = memo.Plan(strings.ToLower(model))
	for _, u := range common {
		e, err := one(u, out.plan.DecidedModel)
		if err != nil {
			return nil, err
		}
		out.entries = append(out.entries, e)
	}
	return out, nil
}

func (c *comparison) compareModel(bg, hg *group, model string, sum *Summary) (*ModelChange, error) {
	b, err := c.base.compile(bg, model, c.common)
	if err != nil {
		return nil, err
	}
	h, err := c.head.compile(hg, model, c.common)
	if err != nil {
		return nil, err
	}
	mc := &ModelChange{Model: model, Route: b.route || h.route, allRefused: [2]bool{b.route && allRefused(b.entries), h.route && allRefused(h.entries)}}
	changed := b.route != h.route
	if b.plan != nil && h.plan != nil {
		bf, hf := b.plan.Refused != nil, h.plan.Refused != nil
		switch {
		case !bf && hf:
			mc.Access = AccessNewlyForbidden
			sum.NewlyForbidden++
			return mc, nil
		case bf && !hf:
			mc.Access = AccessNewlyAllowed
			sum.NewlyAllowed++
			return mc, nil
		case bf && hf:
			return nil, nil
		}
		bp, hp := b.plan, h.plan
		mc.Chain = listChange(bp.Chain, hp.Chain)
		mc.Dropped = listChange(droppedList(bp.Dropped), droppedList(hp.Dropped))
		mc.Providers = providerChanges(bp, hp)
		changed = changed || mc.Chain != nil || mc.Dropped != nil || len(mc.Providers) > 0
	}
	// Merge the two sorted entry lists.
	i, j := 0, 0
	for i < len(b.entries) || j < len(h.entries) {
		var be, he *entry
		switch {
		case j == len(h.entries):
			be = &b.entries[i]
		case i == len(b.entries):
			he = &h.entries[j]
		case b.entries[i].upstream < h.entries[j].upstream ||
			b.entries[i].upstream == h.entries[j].upstream && b.entries[i].model < h.entries[j].model:
			be = &b.entries[i]
		case b.entries[i].upstream == h.entries[j].upstream && b.entries[i].model == h.entries[j].model:
			be, he = &b.entries[i], &h.entries[j]
		default:
			he = &h.entries[j]
		}
		if be != nil {
			i++
		}
		if he != nil {
			j++
		}
		if cc := compareEntry(be, he, sum); cc != nil {
			mc.Upstreams = append(mc.Upstreams, *cc)
		}
	}
	if !changed && len(mc.Upstreams) == 0 {
		return nil, nil
	}
	return mc, nil
}

// allRefused reports whether every entry is refused (false for none).
func allRefused(es []entry) bool {
	for _, e := range es {
		if e.refused == "" {
			return false
		}
	}
	return len(es) > 0
}

// compareEntry compares one combination: outcome and bytes first, a member
// diff of the native bodies only when the bytes differ.
func compareEntry(be, he *entry, sum *Summary) *CompiledChange {
	outcome := func(e *entry) *Outcome { return &Outcome{Refused: e.refused, Degraded: e.degraded, DataVia: e.dataVia} }
	switch {
	case be == nil:
		return &CompiledChange{Upstream: he.upstream, Model: he.model, Status: StatusAdded, Head: outcome(he)}
	case he == nil:
		return &CompiledChange{Upstream: be.upstream, Model: be.model, Status: StatusRemoved, Base: outcome(be)}
	}
	if be.refused == he.refused && slices.Equal(be.degraded, he.degraded) && be.dataVia == he.dataVia && be.path == he.path && bytes.Equal(be.native, he.native) {
		return nil
	}
	cc := &CompiledChange{Upstream: be.upstream, Model: be.model, Status: StatusChanged, Base: outcome(be), Head: outcome(he)}
	if be.refused != he.refused {
		if he.refused != "" && he.refused != guardrails.CodeModelForbidden {
			sum.NewRefusals[he.refused]++
		}
		if be.refused != "" && be.refused != guardrails.CodeModelForbidden {
			sum.ResolvedRefusals[be.refused]++
		}
	}
	for _, d := range he.degraded {
		if !slices.Contains(be.degraded, d) {
			sum.NewDegrades[d]++
		}
	}
	for _, d := range be.degraded {
		if !slices.Contains(he.degraded, d) {
			sum.ResolvedDegrades[d]++
		}
	}
	if be.native != nil && he.native != nil {
		if be.path != he.path {
			cc.Native = append(cc.Native, FieldChange{Field: "/path", Base: mustJSON(be.path), Head: mustJSON(he.path)})
		}
		cc.Native = append(cc.Native, jsonDiff(be.native, he.native)...)
		if len(cc.Native) > 0 {
			sum.NativeChanged++
		}
	}
	if cc.Base.Refused == cc.Head.Refused && slices.Equal(cc.Base.Degraded, cc.Head.Degraded) && cc.Base.DataVia == cc.Head.DataVia && len(cc.Native) == 0 {
		return nil // the bytes differed but not the JSON (member order)
	}
	return cc
}

func providerChanges(b, h *compiler.Plan) []FieldChange {
	var out []FieldChange
	add := func(name string, bv, hv any) {
		bj, hj := mustJSON(bv), mustJSON(hv)
		if !bytes.Equal(bj, hj) {
			out = append(out, FieldChange{Field: name, Base: bj, Head: hj})
		}
	}
	add("rank_by", b.Providers.RankBy, h.Providers.RankBy)
	add("preferred", b.Providers.Preferred, h.Providers.Preferred)
	add("allowed", b.Providers.Allowed, h.Providers.Allowed)
	add("denied", b.Providers.Denied, h.Providers.Denied)
	add("content_filter", b.ContentFilter, h.ContentFilter)
	add("data_policy", b.Data, h.Data)
	return out
}

func droppedList(ds []guardrails.Dropped) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Model + " (" + d.Reason + ")"
	}
	return out
}

// listChange returns nil when the lists are equal.
func listChange(b, h []string) *ListChange {
	if slices.Equal(b, h) {
		return nil
	}
	return &ListChange{Base: nonNil(b), Head: nonNil(h), Added: nonNil(minus(h, b)), Removed: nonNil(minus(b, h))}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func keyFields(bc, hc *profiles.Config, bk, hk *profiles.Key, bg, hg *group) []FieldChange {
	out := []FieldChange{}
	add := func(name string, bv, hv any) {
		bj, hj := mustJSON(bv), mustJSON(hv)
		if !bytes.Equal(bj, hj) {
			out = append(out, FieldChange{Field: name, Base: bj, Head: hj})
		}
	}
	add("org", bk.Org, hk.Org)
	add("team", bk.Team, hk.Team)
	add("project", bk.Project, hk.Project)
	add("upstream", bc.UpstreamFor(bk), hc.UpstreamFor(hk))
	if bg.fp == hg.fp {
		return out
	}
	bv, hv := bg.merged.View(), hg.merged.View()
	add("profile.fallbacks", bv.Fallbacks, hv.Fallbacks)
	add("profile.rank_by", bv.Providers.RankBy, hv.Providers.RankBy)
	add("profile.preferred", bv.Providers.Preferred, hv.Providers.Preferred)
	add("profile.allowed", bv.Providers.Allowed, hv.Providers.Allowed)
	add("profile.denied", bv.Providers.Denied, hv.Providers.Denied)
	var bp, hp guardrails.Patterns
	if bg.decision != nil {
		bp = bg.decision.Patterns()
	}
	if hg.decision != nil {
		hp = hg.decision.Patterns()
	}
	add("guardrail.allow_models", nonNil(bp.AllowModels), nonNil(hp.AllowModels))
	add("guardrail.deny_models", nonNil(bp.DenyModels), nonNil(hp.DenyModels))
	add("guardrail.allow_providers", nonNil(bp.AllowProviders), nonNil(hp.AllowProviders))
	add("guardrail.deny_providers", nonNil(bp.DenyProviders), nonNil(hp.DenyProviders))
	add("guardrail.content_filter", bp.ContentFilter, hp.ContentFilter)
	add("profile.data", bv.Data, hv.Data)
	add("profile.quantizations", bv.Providers.Quantizations, hv.Providers.Quantizations)
	add("profile.max_price", bv.Providers.MaxPrice, hv.Providers.MaxPrice)
	add("guardrail.data", bp.DataRules, hp.DataRules)
	return out
}

func compareUpstreams(bc, hc *profiles.Config) []UpstreamChange {
	out := []UpstreamChange{}
	names := map[string]bool{}
	for _, u := range bc.Upstreams {
		names[u.Name] = true
	}
	for _, u := range hc.Upstreams {
		names[u.Name] = true
	}
	for _, n := range sortedKeys(names) {
		bu, hu := bc.Upstream(n), hc.Upstream(n)
		switch {
		case bu == nil:
			out = append(out, UpstreamChange{Name: n, Status: StatusAdded, Connector: hu.Connector})
		case hu == nil:
			out = append(out, UpstreamChange{Name: n, Status: StatusRemoved, Connector: bu.Connector})
		default:
			var fs []FieldChange
			add := func(name string, bv, hv any) {
				bj, hj := mustJSON(bv), mustJSON(hv)
				if !bytes.Equal(bj, hj) {
					fs = append(fs, FieldChange{Field: name, Base: bj, Head: hj})
				}
			}
			add("connector", bu.Connector, hu.Connector)
			add("base_url", bu.BaseURL, hu.BaseURL)
			add("content_filters", nonNil(bu.ContentFilters), nonNil(hu.ContentFilters))
			add("region", bu.Region, hu.Region)
			if len(fs) > 0 {
				out = append(out, UpstreamChange{Name: n, Status: StatusChanged, Connector: hu.Connector, Fields: fs})
			}
		}
	}
	return out
}

func compareRoutes(bc, hc *profiles.Config) []RouteChange {
	out := []RouteChange{}
	names := map[string]bool{}
	for _, r := range bc.Routes {
		names[r.Model] = true
	}
	for _, r := range hc.Routes {
		names[r.Model] = true
	}
	for _, n := range sortedKeys(names) {
		br, hr := bc.Route(n), hc.Route(n)
		switch {
		case br == nil:
			out = append(out, RouteChange{Model: n, Status: StatusAdded})
		case hr == nil:
			out = append(out, RouteChange{Model: n, Status: StatusRemoved})
		default:
			bf, hf := routeFields(bc, br), routeFields(hc, hr)
			var fs []FieldChange
			for _, f := range []string{"strategy", "retries", "forbid_classes", "targets", "then.targets", "then.on"} {
				if !bytes.Equal(bf[f], hf[f]) {
					fs = append(fs, FieldChange{Field: f, Base: bf[f], Head: hf[f]})
				}
			}
			if len(fs) > 0 {
				out = append(out, RouteChange{Model: n, Status: StatusChanged, Fields: fs})
			}
		}
	}
	return out
}

// routeFields renders a route's compared fields as JSON values; an absent
// field (no tail) is nil.
func routeFields(c *profiles.Config, r *profiles.Route) map[string]json.RawMessage {
	targets := func(ts []profiles.Target) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.Upstream + ":" + t.Model
			if r.Strategy == "weighted" && t.Weight != 1 {
				out[i] += fmt.Sprintf(" weight=%d", t.Weight)
			}
			if t.Class != "" {
				out[i] += " class=" + t.Class
			}
			if t.Restricted() {
				out[i] += " takes_over=" + strings.Join(t.TakesOver, "|")
			}
		}
		return out
	}
	f := map[string]json.RawMessage{
		"strategy":       mustJSON(r.Strategy),
		"retries":        mustJSON(c.RetryBudget(r)),
		"forbid_classes": mustJSON(nonNil(r.ForbidClasses)),
		"targets":        mustJSON(targets(r.Targets)),
	}
	if r.Then != nil {
		f["then.targets"] = mustJSON(targets(r.Then.Targets))
		f["then.on"] = mustJSON(nonNil(r.Then.On))
	}
	return f
}

func selectKeys(bc, hc *profiles.Config, want []string) ([]string, error) {
	if want != nil {
		var missing []string
		for _, k := range want {
			if bc.KeyByID(k) == nil && hc.KeyByID(k) == nil {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("no key %s in either revision", strings.Join(missing, ", "))
		}
		return sortedUnique(append([]string(nil), want...)), nil
	}
	ids := map[string]bool{}
	for _, k := range bc.Keys {
		ids[k.ID] = true
	}
	for _, k := range hc.Keys {
		ids[k.ID] = true
	}
	return sortedKeys(ids), nil
}

func allModels(b, h *snapshot.Snapshot) []string {
	var out []string
	for _, s := range []*snapshot.Snapshot{b, h} {
		if s.Catalog != nil {
			for _, m := range s.Catalog.Models() {
				out = append(out, m.Slug)
			}
		}
		for _, r := range s.Config.Routes {
			out = append(out, r.Model)
		}
	}
	return out
}

// commonUpstreams returns the upstreams of both revisions: combinations are
// compared there; an upstream of one side only is reported once, as added or
// removed.
func commonUpstreams(b, h *snapshot.Snapshot) []string {
	var out []string
	for n := range b.Upstreams {
		if h.Upstreams[n] != nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func unionUpstreams(b, h *snapshot.Snapshot) map[string]bool {
	out := map[string]bool{}
	for n := range b.Upstreams {
		out[n] = true
	}
	for n := range h.Upstreams {
		out[n] = true
	}
	return out
}

func sameCatalog(b, h *guardrails.Catalog) bool {
	if b == nil || h == nil {
		return b == h
	}
	return b.Revision() == h.Revision()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, ints and string slices are marshalled
	}
	return b
}
