package profiles

import (
	"fmt"
	"slices"
)

// Field is one merged profile field: its value, whether any rung set it, and
// which rung (and file) did.
type Field[T any] struct {
	// Value is the merged value (the zero value when unset).
	Value T
	// Set reports whether some rung set the field.
	Set bool
	// Rung is the rung that set it: "org", "team:ml", "project:chat",
	// "key:k-chat", "request", or a "default:..." name for a built-in default.
	Rung string
	// File is the file the value came from ("request" for the request rung).
	File string
}

// Merged is a profile merged down the ladder, field by field.
type Merged struct {
	Fallbacks Field[[]string]
	RankBy    Field[string]
	Preferred Field[[]string]
	Allowed   Field[[]string]
	Denied    Field[[]string]

	// The data restrictions only tighten down the ladder: each holds the
	// tightest value any rung set, and the rung that made it so.

	// ZeroRetention is true when some rung requires it (the first that did).
	ZeroRetention Field[bool]
	// NoTraining is true when some rung requires it (the first that did).
	NoTraining Field[bool]
	// Quantizations is the intersection of every rung's non-empty list;
	// its rung is the last that narrowed it.
	Quantizations Field[[]string]
	// MaxPriceIn and MaxPriceOut are the lowest ceiling any rung set on
	// each side (USD per million tokens).
	MaxPriceIn, MaxPriceOut Field[float64]
	// Regions is the intersection of every rung's non-empty list of
	// geographies; its rung is the last that narrowed it.
	Regions Field[[]string]
}

// Merge merges layers given top first (org → team → project → key →
// request): for each field separately, the nearest rung that sets it wins and
// an unset field is inherited. An explicitly empty list is a setting and
// overrides what is above it. The data restrictions (data.zero_retention,
// data.no_training, data.regions, providers.quantizations,
// providers.max_price) are the
// exception: a rung may tighten them, never loosen them, so each merges to
// the tightest value set (see [CheckTightening] for the located error a
// loosening rung gets).
func Merge(layers ...Layer) Merged {
	var m Merged
	for _, l := range layers {
		p := l.Profile
		if p == nil {
			continue
		}
		setList(&m.Fallbacks, p.Fallbacks, l)
		setList(&m.Preferred, p.Providers.Preferred, l)
		setList(&m.Allowed, p.Providers.Allowed, l)
		setList(&m.Denied, p.Providers.Denied, l)
		if p.Providers.RankBy != nil {
			m.RankBy = Field[string]{Value: *p.Providers.RankBy, Set: true, Rung: l.Rung, File: l.File}
		}
		if p.SetsData() {
			m.tighten(p, l)
		}
	}
	return m
}

// tighten merges one rung's data restrictions into m, keeping the tightest.
func (m *Merged) tighten(p *Profile, l Layer) {
	require := func(f *Field[bool], v *bool) {
		if v == nil || (f.Set && f.Value) {
			return
		}
		*f = Field[bool]{Value: *v, Set: true, Rung: l.Rung, File: l.File}
	}
	require(&m.ZeroRetention, p.Data.ZeroRetention)
	require(&m.NoTraining, p.Data.NoTraining)
	narrow := func(f *Field[[]string], q *[]string) {
		if q != nil && len(*q) > 0 {
			if !f.Set || len(f.Value) == 0 {
				*f = Field[[]string]{Value: *q, Set: true, Rung: l.Rung, File: l.File}
			} else if kept := intersect(f.Value, *q); len(kept) != len(f.Value) {
				*f = Field[[]string]{Value: kept, Set: true, Rung: l.Rung, File: l.File}
			}
		} else if q != nil && !f.Set {
			*f = Field[[]string]{Value: *q, Set: true, Rung: l.Rung, File: l.File}
		}
	}
	narrow(&m.Quantizations, p.Providers.Quantizations)
	narrow(&m.Regions, p.Data.Regions)
	if mp := p.Providers.MaxPrice; mp != nil {
		lower := func(f *Field[float64], v *float64) {
			if v != nil && (!f.Set || *v < f.Value) {
				*f = Field[float64]{Value: *v, Set: true, Rung: l.Rung, File: l.File}
			}
		}
		lower(&m.MaxPriceIn, mp.Input)
		lower(&m.MaxPriceOut, mp.Output)
	}
}

// intersect returns the entries of a that b lists too, in a's order; a
// itself when b lists them all.
func intersect(a, b []string) []string {
	var out []string
	for i, x := range a {
		in := false
		for _, y := range b {
			if x == y {
				in = true
				break
			}
		}
		switch {
		case in && out != nil:
			out = append(out, x)
		case !in && out == nil:
			out = append(make([]string, 0, len(a)), a[:i]...)
		}
	}
	if out == nil {
		return a
	}
	return out
}

// CodeLoosened is the diagnostic of a rung that loosens a data restriction
// a rung above it set (zero_retention = false under an org's true, a
// quantization the rung above does not admit, a higher price ceiling).
const CodeLoosened = "restriction_loosened"

// CheckTightening reports every rung of a ladder (layers top first) that
// loosens a data restriction set above it: such a setting is an error, never
// an override. A profile file's diagnostic is located at its line, the
// request rung's by pointer under /routing.
func CheckTightening(layers []Layer) Diagnostics {
	var diags Diagnostics
	var m Merged
	for _, l := range layers {
		p := l.Profile
		if p == nil {
			continue
		}
		add := func(ptr, format string, args ...any) {
			d := Diagnostic{File: l.File, Code: CodeLoosened, Message: fmt.Sprintf(format, args...) + "; a rung may tighten a data restriction, never loosen it"}
			if p.pos == nil {
				d.Pointer = "/routing" + ptr
			} else {
				d.Line = p.pos.line(ptr)
			}
			diags = append(diags, d)
		}
		for _, b := range []struct {
			ptr, name string
			above     Field[bool]
			v         *bool
		}{
			{"/data/zero_retention", "data.zero_retention", m.ZeroRetention, p.Data.ZeroRetention},
			{"/data/no_training", "data.no_training", m.NoTraining, p.Data.NoTraining},
		} {
			if b.v != nil && !*b.v && b.above.Set && b.above.Value {
				add(b.ptr, "%s = false loosens %s = true set at %s (%s)", b.name, b.name, b.above.Rung, b.above.File)
			}
		}
		for _, ls := range []struct {
			ptr, name, every string
			above            Field[[]string]
			v                *[]string
		}{
			{"/providers/quantizations", "providers.quantizations", "every precision", m.Quantizations, p.Providers.Quantizations},
			{"/data/regions", "data.regions", "every geography", m.Regions, p.Data.Regions},
		} {
			q, above := ls.v, ls.above
			if q == nil || !above.Set || len(above.Value) == 0 {
				continue
			}
			if len(*q) == 0 {
				add(ls.ptr, "%s = [] admits %s, loosening %v set at %s (%s)", ls.name, ls.every, above.Value, above.Rung, above.File)
			}
			for i, e := range *q {
				if !slices.Contains(above.Value, e) {
					add(fmt.Sprintf("%s/%d", ls.ptr, i), "%s admits %q, which %v set at %s (%s) does not", ls.name, e, above.Value, above.Rung, above.File)
				}
			}
		}
		if mp := p.Providers.MaxPrice; mp != nil {
			for _, side := range []struct {
				ptr, name string
				above     Field[float64]
				v         *float64
			}{
				{"/providers/max_price/input", "input", m.MaxPriceIn, mp.Input},
				{"/providers/max_price/output", "output", m.MaxPriceOut, mp.Output},
			} {
				if side.v != nil && side.above.Set && *side.v > side.above.Value {
					add(side.ptr, "providers.max_price.%s = %g is above the ceiling %g set at %s (%s)", side.name, *side.v, side.above.Value, side.above.Rung, side.above.File)
				}
			}
		}
		m.tighten(p, l)
	}
	return diags
}

func setList(f *Field[[]string], v *[]string, l Layer) {
	if v == nil {
		return
	}
	*f = Field[[]string]{Value: *v, Set: true, Rung: l.Rung, File: l.File}
}

// Provenance returns the rung of every set field, keyed by field name
// ("fallbacks", "providers.rank_by", "providers.preferred",
// "providers.allowed", "providers.denied", "providers.quantizations",
// "providers.max_price.input", "providers.max_price.output",
// "data.zero_retention", "data.no_training", "data.regions").
func (m *Merged) Provenance() map[string]string {
	out := map[string]string{}
	m.each(func(name, rung, _ string) { out[name] = rung })
	return out
}

// Sources returns the file of every set field, keyed like [Merged.Provenance].
func (m *Merged) Sources() map[string]string {
	out := map[string]string{}
	m.each(func(name, _, file string) { out[name] = file })
	return out
}

func (m *Merged) each(fn func(name, rung, file string)) {
	for _, f := range []struct {
		name string
		set  bool
		rung string
		file string
	}{
		{"fallbacks", m.Fallbacks.Set, m.Fallbacks.Rung, m.Fallbacks.File},
		{"providers.rank_by", m.RankBy.Set, m.RankBy.Rung, m.RankBy.File},
		{"providers.preferred", m.Preferred.Set, m.Preferred.Rung, m.Preferred.File},
		{"providers.allowed", m.Allowed.Set, m.Allowed.Rung, m.Allowed.File},
		{"providers.denied", m.Denied.Set, m.Denied.Rung, m.Denied.File},
		{"providers.quantizations", m.Quantizations.Set, m.Quantizations.Rung, m.Quantizations.File},
		{"providers.max_price.input", m.MaxPriceIn.Set, m.MaxPriceIn.Rung, m.MaxPriceIn.File},
		{"providers.max_price.output", m.MaxPriceOut.Set, m.MaxPriceOut.Rung, m.MaxPriceOut.File},
		{"data.zero_retention", m.ZeroRetention.Set, m.ZeroRetention.Rung, m.ZeroRetention.File},
		{"data.no_training", m.NoTraining.Set, m.NoTraining.Rung, m.NoTraining.File},
		{"data.regions", m.Regions.Set, m.Regions.Rung, m.Regions.File},
	} {
		if f.set {
			fn(f.name, f.rung, f.file)
		}
	}
}
