package profiles

// ProfileView is the JSON form of a merged profile used by `sluice explain`
// and the admin API. An unset field is null; an explicitly empty list is [].
type ProfileView struct {
	Fallbacks []string      `json:"fallbacks"`
	Providers ProvidersView `json:"providers"`
	// Data is omitted when no rung set a data restriction.
	Data *DataView `json:"data,omitempty"`
}

// ProvidersView is the providers section of a [ProfileView].
type ProvidersView struct {
	RankBy    *string  `json:"rank_by"`
	Preferred []string `json:"preferred"`
	Allowed   []string `json:"allowed"`
	Denied    []string `json:"denied"`
	// Quantizations and MaxPrice are omitted when no rung set them.
	Quantizations []string  `json:"quantizations,omitempty"`
	MaxPrice      *MaxPrice `json:"max_price,omitempty"`
}

// DataView is the data section of a [ProfileView]: the merged restrictions.
type DataView struct {
	ZeroRetention *bool `json:"zero_retention,omitempty"`
	NoTraining    *bool `json:"no_training,omitempty"`
	// Regions is omitted when no rung set it.
	Regions []string `json:"regions,omitempty"`
}

// View renders the merged profile.
func (m *Merged) View() ProfileView {
	v := ProfileView{
		Fallbacks: listView(m.Fallbacks),
		Providers: ProvidersView{
			Preferred: listView(m.Preferred),
			Allowed:   listView(m.Allowed),
			Denied:    listView(m.Denied),
		},
	}
	if m.RankBy.Set {
		r := m.RankBy.Value
		v.Providers.RankBy = &r
	}
	if m.Quantizations.Set {
		v.Providers.Quantizations = listView(m.Quantizations)
	}
	if m.MaxPriceIn.Set || m.MaxPriceOut.Set {
		v.Providers.MaxPrice = &MaxPrice{}
		if m.MaxPriceIn.Set {
			in := m.MaxPriceIn.Value
			v.Providers.MaxPrice.Input = &in
		}
		if m.MaxPriceOut.Set {
			out := m.MaxPriceOut.Value
			v.Providers.MaxPrice.Output = &out
		}
	}
	if m.ZeroRetention.Set || m.NoTraining.Set || m.Regions.Set {
		v.Data = &DataView{Regions: listView(m.Regions)}
		if m.ZeroRetention.Set {
			z := m.ZeroRetention.Value
			v.Data.ZeroRetention = &z
		}
		if m.NoTraining.Set {
			n := m.NoTraining.Value
			v.Data.NoTraining = &n
		}
	}
	return v
}

func listView(f Field[[]string]) []string {
	if !f.Set {
		return nil
	}
	if f.Value == nil {
		return []string{}
	}
	return f.Value
}

// Explanation is the merged profile of one principal with the provenance of
// every set field: the first form of `sluice explain --json`.
type Explanation struct {
	Principal  Principal         `json:"principal"`
	Profile    ProfileView       `json:"profile"`
	Provenance map[string]string `json:"provenance"`
	// Sources maps each set field to the file that set it.
	Sources map[string]string `json:"sources"`
}

// Explain merges the key's ladder (and the request rung, when request is not
// nil) and returns the explanation.
func (c *Config) Explain(k *Key, request *Profile) (Explanation, Merged) {
	layers := c.Profiles.Layers(k.Principal())
	if request != nil {
		layers = append(layers, Layer{Rung: "request", File: RequestFile, Profile: request})
	}
	m := Merge(layers...)
	return Explanation{Principal: k.Principal(), Profile: m.View(), Provenance: m.Provenance(), Sources: m.Sources()}, m
}
