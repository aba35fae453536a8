package profiles

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
}

// Merge merges layers given top first (org → team → project → key →
// request): for each field separately, the nearest rung that sets it wins and
// an unset field is inherited. An explicitly empty list is a setting and
// overrides what is above it.
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
	}
	return m
}

func setList(f *Field[[]string], v *[]string, l Layer) {
	if v == nil {
		return
	}
	*f = Field[[]string]{Value: *v, Set: true, Rung: l.Rung, File: l.File}
}

// Provenance returns the rung of every set field, keyed by field name
// ("fallbacks", "providers.rank_by", "providers.preferred",
// "providers.allowed", "providers.denied").
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
	} {
		if f.set {
			fn(f.name, f.rung, f.file)
		}
	}
}
