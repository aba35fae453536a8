package guardrails

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

// corpusDir holds one directory per case: guardrails/*.rego, catalog.json and
// cases.json. Add a case directory, not a test function.
const corpusDir = "../testdata/guardrails"

// corpusFile is the shape of cases.json.
type corpusFile struct {
	// Errors, when present, are the expected diagnostics of loading the policy
	// and the catalog, in order; each rendered diagnostic must start with its
	// entry. Cases are not run then.
	Errors []string `json:"errors"`
	// Principals, when present, are those a configuration names: the
	// policy is checked for each at load ([Policy.CheckPrincipals]), and
	// what that finds is expected in Errors like a load error.
	Principals []profiles.Principal `json:"principals"`
	Cases      []corpusCase         `json:"cases"`
}

type corpusCase struct {
	Name      string             `json:"name"`
	Principal profiles.Principal `json:"principal"`
	// EvalError, when set, is a substring of the expected Decide error.
	EvalError string `json:"eval_error"`
	// The expected literal sets. Absent: not checked; null: expect nil.
	AllowedModels    json.RawMessage `json:"allowed_models"`
	DeniedModels     json.RawMessage `json:"denied_models"`
	AllowedProviders json.RawMessage `json:"allowed_providers"`
	DeniedProviders  json.RawMessage `json:"denied_providers"`
	ContentFilter    *string         `json:"content_filter"`
	// Data, when present, is the data restrictions the decision carries,
	// as [Patterns] spells them (absent members: unset).
	Data   *DataRules `json:"data"`
	Counts *Counts    `json:"counts"`
	// Models maps a slug as a caller would send it to whether it is allowed.
	Models  map[string]bool `json:"models"`
	Chains  []chainCase     `json:"chains"`
	Combine []combineCase   `json:"combine"`
}

type chainCase struct {
	Chain   []string  `json:"chain"`
	Kept    []string  `json:"kept"`
	Dropped []Dropped `json:"dropped"`
}

type combineCase struct {
	ProfileAllowed    []string        `json:"profile_allowed"`
	ProfileAllowedSet bool            `json:"profile_allowed_set"`
	ProfileDenied     []string        `json:"profile_denied"`
	Allowed           json.RawMessage `json:"allowed"`
	Denied            []string        `json:"denied"`
}

func TestCorpus(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(corpusDir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
			require.NoError(t, err)
			var cf corpusFile
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&cf))

			pol, pd := LoadPolicy(dir)
			cat, cd := LoadCatalog(dir)
			ds := append(pd, cd...)
			if len(ds) == 0 {
				ds = pol.CheckPrincipals(context.Background(), cf.Principals)
			}
			ds.Sort()
			if cf.Errors != nil {
				var got []string
				for _, d := range ds {
					got = append(got, d.String())
				}
				require.Len(t, got, len(cf.Errors), "diagnostics:\n%s", strings.Join(got, "\n"))
				for i, want := range cf.Errors {
					require.True(t, strings.HasPrefix(got[i], want), "diagnostic %d\n got: %s\nwant: %s...", i, got[i], want)
				}
				return
			}
			require.Empty(t, ds, "%v", ds)
			is := NewIssuer(pol, cat)
			for _, c := range cf.Cases {
				t.Run(c.Name, func(t *testing.T) { runCorpusCase(t, is, c) })
			}
		})
	}
}

func runCorpusCase(t *testing.T, is *Issuer, c corpusCase) {
	d, err := is.Decide(context.Background(), c.Principal)
	if c.EvalError != "" {
		require.Error(t, err)
		require.Contains(t, err.Error(), c.EvalError)
		var ee *EvalError
		require.ErrorAs(t, err, &ee)
		return
	}
	require.NoError(t, err)
	again, err := is.Decide(context.Background(), c.Principal)
	require.NoError(t, err)
	require.Same(t, d, again, "decisions are cached")

	checkSet(t, "allowed_models", c.AllowedModels, d.AllowedModels(), true)
	checkSet(t, "denied_models", c.DeniedModels, d.DeniedModels(), false)
	checkSet(t, "allowed_providers", c.AllowedProviders, d.AllowedProviders(), true)
	checkSet(t, "denied_providers", c.DeniedProviders, d.DeniedProviders(), false)
	if c.Data != nil {
		require.Equal(t, *c.Data, d.Patterns().DataRules)
	}
	if c.ContentFilter != nil {
		require.Equal(t, *c.ContentFilter, d.ContentFilter())
	}
	if c.Counts != nil {
		require.Equal(t, *c.Counts, d.Counts())
	}
	for slug, want := range c.Models {
		require.Equal(t, want, d.ModelAllowed(slug), "ModelAllowed(%q)", slug)
		err := d.CheckModel(slug)
		if want {
			require.NoError(t, err)
			continue
		}
		var r *Refusal
		require.ErrorAs(t, err, &r)
		// A slug outside the catalog is refused for that reason, in its
		// own words; a catalog model by the guardrail.
		wantCode := CodeModelForbidden
		if _, ok := d.cat.Model(slug); !ok {
			wantCode = CodeModelNotInCatalog
			require.Contains(t, r.Message, "is not in the model catalog")
		}
		require.Equal(t, wantCode, r.Code, r.Message)
		require.ErrorIs(t, err, ErrForbidden)
		require.Contains(t, r.Message, c.Principal.String())
	}
	for _, ch := range c.Chains {
		kept, dropped := d.FilterChain(ch.Chain, nil)
		require.Equal(t, len(ch.Kept), len(kept), "kept %v", kept)
		if len(ch.Kept) > 0 {
			require.Equal(t, ch.Kept, kept)
		}
		require.Equal(t, ch.Dropped, dropped)
	}
	for _, cc := range c.Combine {
		allowed, denied := CombineProviders(cc.ProfileAllowed, cc.ProfileDenied, cc.ProfileAllowedSet, d)
		checkSet(t, "combined allowed", cc.Allowed, allowed, true)
		require.Equal(t, cc.Denied, denied, "combined denied")
	}
}

// checkSet compares a literal set with its expectation: absent is not
// checked, null expects nil, [] expects an empty slice (non-nil when
// nilMeansUnrestricted: there nil and empty say different things).
func checkSet(t *testing.T, what string, want json.RawMessage, got []string, nilMeansUnrestricted bool) {
	t.Helper()
	if len(want) == 0 {
		return
	}
	if string(want) == "null" {
		require.Nil(t, got, what)
		return
	}
	var w []string
	require.NoError(t, json.Unmarshal(want, &w))
	if nilMeansUnrestricted {
		require.NotNil(t, got, what)
	}
	if len(w) == 0 {
		require.Empty(t, got, what)
		return
	}
	require.Equal(t, w, got, what)
}
