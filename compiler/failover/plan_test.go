package failover

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

// planCase is one testdata/failover/plans/*.json file: a route, the health
// the planner has observed, and requests planned one after another on the
// same Planner, each with the failures its attempts meet.
type planCase struct {
	Doc          string         `json:"doc"`
	Route        profiles.Route `json:"route"`
	Budget       int            `json:"budget"`
	PromptTokens int            `json:"prompt_tokens"`
	Windows      map[string]int `json:"windows"`
	Observe      []observation  `json:"observe"`
	Requests     []planRequest  `json:"requests"`
	Repeat       int            `json:"repeat"`
	Explain      *explainExpect `json:"explain"`
	Seed         *[2]uint64     `json:"seed"`
}

type observation struct {
	Target    string `json:"target"` // upstream/model
	LatencyMS int    `json:"latency_ms"`
	OK        bool   `json:"ok"`
	Times     int    `json:"times"`
}

// wildcard returns got with each element that Want marks "*" (any target
// of a random draw) replaced by "*".
func wildcard(want, got []string) []string {
	out := slices.Clone(got)
	for i := range out {
		if i < len(want) && want[i] == "*" {
			out[i] = "*"
		}
	}
	return out
}

// planRequest lists the failures met by the request's attempts, in order;
// the attempt after the last failure answers. Want is the attempted targets
// (upstream/model, "*" for any) and Stop the stop reason ("" when an attempt answered).
type planRequest struct {
	AdvanceMS   int      `json:"advance_ms"`
	CallerKey   bool     `json:"caller_key"`
	Failures    []string `json:"failures"`
	Want        []string `json:"want"`
	Stop        string   `json:"stop"`
	FirstReason string   `json:"first_reason"`
}

type explainExpect struct {
	Members    []string          `json:"members"`
	Restricted map[string]string `json:"restricted"` // name -> takes_over joined by ","
	Tail       []string          `json:"tail"`
	TailOn     []string          `json:"tail_on"`
	Removed    map[string]string `json:"removed"` // name -> reason
	Notes      int               `json:"notes"`
}

// parseFailure reads "class" or "refusal:cat1,cat2".
func parseFailure(s string) Failure {
	class, cats, _ := strings.Cut(s, ":")
	f := Failure{Class: class}
	if cats != "" {
		f.Categories = strings.Split(cats, ",")
	}
	return f
}

// applyDefaults mirrors what profiles.Load does to a route.
func applyDefaults(r *profiles.Route) {
	if r.Strategy == "" {
		r.Strategy = StrategyPriority
	}
	def := func(ts []profiles.Target) {
		for i := range ts {
			if ts[i].Model == "" {
				ts[i].Model = r.Model
			}
			if ts[i].Weight == 0 {
				ts[i].Weight = 1
			}
			if ts[i].TakesOver == nil {
				ts[i].TakesOver = []string{}
			}
		}
	}
	def(r.Targets)
	if r.Then != nil {
		def(r.Then.Targets)
		if r.Then.On == nil {
			r.Then.On = []string{ClassOverflow}
		}
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func findTarget(r *profiles.Route, name string) Target {
	all := append([]profiles.Target{}, r.Targets...)
	if r.Then != nil {
		all = append(all, r.Then.Targets...)
	}
	for i := range all {
		t := toTarget(r, &all[i], 0, false)
		if t.Name() == name {
			return t
		}
	}
	panic("no target " + name)
}

// runRequest drives one request the way the gateway does and returns the
// attempted targets and the stop reason.
func runRequest(t *testing.T, pl *Plan, failures []string, callerKey bool) ([]string, StopReason) {
	t.Helper()
	cur, ok := pl.First()
	if !ok {
		return nil, StopExhausted
	}
	got := []string{cur.Name()}
	for i := 0; ; i++ {
		if i >= len(failures) {
			return got, StopNone
		}
		next, ok, stop := pl.Next(cur, parseFailure(failures[i]), callerKey)
		if !ok {
			require.NotEqual(t, StopNone, stop, "Next returned no target without a reason")
			return got, stop
		}
		require.Equal(t, StopNone, stop)
		require.False(t, next.Restricted() && len(got) == 0, "restricted target first")
		got = append(got, next.Name())
		cur = next
		require.Less(t, len(got), 100, "runaway plan")
	}
}

// TestPlans runs every testdata/failover/plans/*.json case.
func TestPlans(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "failover", "plans", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var c planCase
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&c))
			require.NotEmpty(t, c.Doc, "every case says which rule it checks")
			applyDefaults(&c.Route)

			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			seed := [2]uint64{1, 2}
			if c.Seed != nil {
				seed = *c.Seed
			}
			p := NewPlanner(PlannerOptions{Now: clock.Now, Rand: rand.NewPCG(seed[0], seed[1])})
			for _, o := range c.Observe {
				for range max(o.Times, 1) {
					p.Observe(c.Route.Model, findTarget(&c.Route, o.Target), time.Duration(o.LatencyMS)*time.Millisecond, o.OK)
				}
			}
			var window func(string) int
			if c.Windows != nil {
				window = func(m string) int { return c.Windows[m] }
			}
			for rep := range max(c.Repeat, 1) {
				for i, r := range c.Requests {
					clock.Advance(time.Duration(r.AdvanceMS) * time.Millisecond)
					pl := p.Plan(&c.Route, c.Budget, c.PromptTokens, window)
					got, stop := runRequest(t, pl, r.Failures, r.CallerKey)
					assert.Equal(t, r.Want, wildcard(r.Want, got), "request %d (repeat %d): attempts %v", i, rep, got)
					assert.Equal(t, StopReason(r.Stop), stop, "request %d (repeat %d): stop", i, rep)
					fr, ok := pl.FirstReason()
					if r.FirstReason == "" {
						assert.False(t, ok, "request %d: unexpected first reason %v", i, fr)
					} else {
						assert.Equal(t, r.FirstReason, fr.String(), "request %d: first reason", i)
					}
					if c.Explain != nil && i == 0 && rep == 0 {
						checkExplain(t, *c.Explain, pl.Explain())
					}
				}
			}
		})
	}
}

func checkExplain(t *testing.T, want explainExpect, e Explanation) {
	t.Helper()
	names := func(ts []Target) []string {
		out := []string{}
		for _, x := range ts {
			out = append(out, x.Name())
		}
		return out
	}
	if want.Members != nil {
		assert.Equal(t, want.Members, names(e.Members), "explain members")
	}
	if want.Tail != nil {
		assert.Equal(t, want.Tail, names(e.Tail), "explain tail")
	}
	if want.TailOn != nil {
		assert.Equal(t, want.TailOn, e.TailOn, "explain tail guard")
	}
	if want.Restricted != nil {
		got := map[string]string{}
		for _, r := range e.Restricted {
			got[r.Name()] = strings.Join(r.TakesOver, ",")
		}
		assert.Equal(t, want.Restricted, got, "explain restricted")
	}
	if want.Removed != nil {
		got := map[string]string{}
		for _, r := range e.Removed {
			got[r.Target.Name()] = r.Reason
		}
		assert.Equal(t, want.Removed, got, "explain removed")
	}
	assert.Len(t, e.Notes, want.Notes, "explain notes: %v", e.Notes)
	// Explain output is what `sluice explain --json` prints.
	_, err := json.Marshal(e)
	assert.NoError(t, err)
}
