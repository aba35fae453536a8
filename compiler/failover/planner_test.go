package failover

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

func route(model, strategy string, targets ...profiles.Target) *profiles.Route {
	r := &profiles.Route{Model: model, Strategy: strategy, Targets: targets}
	applyDefaults(r)
	return r
}

// TestWeightedDistribution draws many plans with a fixed seed: first picks
// follow the weights, the restricted target is never in the order, and a
// refusal always goes to it whatever the order was.
func TestWeightedDistribution(t *testing.T) {
	r := route("w", StrategyWeighted,
		profiles.Target{Upstream: "a", Model: "m", Weight: 3},
		profiles.Target{Upstream: "b", Model: "m", Weight: 1},
		profiles.Target{Upstream: "premium", Model: "m", Weight: 1000, TakesOver: []string{"refusal"}},
	)
	p := NewPlanner(PlannerOptions{Rand: rand.NewPCG(7, 11)})
	const n = 4000
	first := map[string]int{}
	for range n {
		pl := p.Plan(r, 2, 0, nil)
		e := pl.Explain()
		require.Len(t, e.Members, 2)
		f, ok := pl.First()
		require.True(t, ok)
		first[f.Name()]++
		next, ok, _ := pl.Next(f, Failure{Class: ClassRefusal, Categories: []string{"content_filter"}}, false)
		require.True(t, ok)
		assert.Equal(t, "premium/m", next.Name())
		next, ok, _ = pl.Next(f, Failure{Class: ClassThrottled}, false)
		require.True(t, ok)
		assert.NotEqual(t, "premium/m", next.Name())
		assert.NotEqual(t, f.Name(), next.Name())
	}
	assert.Zero(t, first["premium/m"])
	// Expected 3000 / 1000; the bounds are ±5 standard deviations (~27).
	assert.InDelta(t, 3000, first["a/m"], 140, "a first: %v", first)
	assert.InDelta(t, 1000, first["b/m"], 140, "b first: %v", first)
	assert.Equal(t, n, first["a/m"]+first["b/m"])
}

// TestWeightedDeterministic: the same seed gives the same orders.
func TestWeightedDeterministic(t *testing.T) {
	r := route("w", StrategyWeighted,
		profiles.Target{Upstream: "a", Model: "m", Weight: 2},
		profiles.Target{Upstream: "b", Model: "m", Weight: 2},
		profiles.Target{Upstream: "c", Model: "m", Weight: 1},
	)
	orders := func() []string {
		p := NewPlanner(PlannerOptions{Rand: rand.NewPCG(3, 4)})
		var out []string
		for range 50 {
			var names string
			for _, m := range p.Plan(r, 0, 0, nil).Explain().Members {
				names += m.Name() + " "
			}
			out = append(out, names)
		}
		return out
	}
	assert.Equal(t, orders(), orders())
}

func TestObserveEWMA(t *testing.T) {
	p := NewPlanner(PlannerOptions{Alpha: 0.5})
	tg := Target{Upstream: "u", Model: "m"}
	p.Observe("r", tg, 100*time.Millisecond, true)
	p.Observe("r", tg, 300*time.Millisecond, true)
	p.Observe("r", tg, time.Hour, false) // a failure leaves the average alone
	k := HealthKey{"r", "u", "m"}
	h := p.latency[k]
	require.NotNil(t, h)
	assert.Equal(t, float64(200*time.Millisecond), h.ewma)
	n, _ := p.health.Failures(k)
	assert.Equal(t, 1, n)
	p.Observe("r", tg, 100*time.Millisecond, true)
	n, _ = p.health.Failures(k)
	assert.Equal(t, 0, n, "a success resets the consecutive failures")
}

// TestSharedHealthStore: two planners (two replicas) on one health store
// agree on what is cold: failures one observes make the target cold for the
// other, whose latency averages stay its own.
func TestSharedHealthStore(t *testing.T) {
	now := time.Unix(1000, 0)
	store := NewMemoryHealth()
	a := NewPlanner(PlannerOptions{Health: store, Now: func() time.Time { return now }})
	b := NewPlanner(PlannerOptions{Health: store, Now: func() time.Time { return now }})
	rt := route("pool", StrategyPriority, profiles.Target{Upstream: "u", Model: "m1"}, profiles.Target{Upstream: "u", Model: "m2"})
	t1 := Target{Upstream: "u", Model: "m1"}
	for range DefaultColdAfter {
		a.Observe("pool", t1, time.Second, false)
	}
	first, ok := b.Plan(rt, 2, 0, nil).First()
	require.True(t, ok)
	assert.Equal(t, "m2", first.Model, "a target cold on one planner is skipped by the other")
	a.Observe("pool", t1, time.Second, true)
	first, _ = b.Plan(rt, 2, 0, nil).First()
	assert.Equal(t, "m1", first.Model, "an answer on one planner warms it for both")
	assert.Nil(t, b.latency[HealthKey{"pool", "u", "m1"}], "latency stays each planner's own")
}

func TestNewPlannerDefaults(t *testing.T) {
	p := NewPlanner(PlannerOptions{Alpha: 7})
	assert.Equal(t, DefaultColdAfter, p.coldAfter)
	assert.Equal(t, DefaultColdFor, p.coldFor)
	assert.Equal(t, DefaultAlpha, p.alpha)
}

func TestFirstOnEmptyPlan(t *testing.T) {
	r := route("m", "", profiles.Target{Upstream: "a", Model: "m", Class: "paid"})
	r.ForbidClasses = []string{"PAID"}
	pl := NewPlanner(PlannerOptions{}).Plan(r, 2, 0, nil)
	_, ok := pl.First()
	assert.False(t, ok)
	_, ok = pl.FirstReason()
	assert.False(t, ok)
	assert.Empty(t, pl.Explain().Members)
}

// TestPlannerConcurrent shares one Planner across goroutines: plans, walks
// and observations race only on the Planner's own locks (run with -race),
// and the round-robin rotation stays exact.
func TestPlannerConcurrent(t *testing.T) {
	rr := route("rr", StrategyRoundRobin,
		profiles.Target{Upstream: "a", Model: "m"},
		profiles.Target{Upstream: "b", Model: "m"},
		profiles.Target{Upstream: "c", Model: "m"},
	)
	fast := route("pool", StrategyFastest,
		profiles.Target{Upstream: "f1", Model: "m"},
		profiles.Target{Upstream: "f2", Model: "m"},
	)
	fast.Then = &profiles.Tail{Targets: []profiles.Target{{Upstream: "paid", Model: "big", Weight: 1, TakesOver: []string{}}}, On: []string{"overflow"}}
	p := NewPlanner(PlannerOptions{})
	const workers, each = 8, 250
	var mu sync.Mutex
	first := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				pl := p.Plan(rr, 2, 0, nil)
				f, _ := pl.First()
				mu.Lock()
				first[f.Name()]++
				mu.Unlock()
				if n, ok, _ := pl.Next(f, Failure{Class: ClassTimeout}, false); ok {
					p.Observe(rr.Model, n, time.Duration(i)*time.Millisecond, true)
				}
				pp := p.Plan(fast, 2, 0, nil)
				g, _ := pp.First()
				p.Observe(fast.Model, g, time.Duration(w+i)*time.Millisecond, i%4 != 0)
				_ = pp.Explain()
			}
		})
	}
	wg.Wait()
	total := workers * each
	for _, name := range []string{"a/m", "b/m", "c/m"} {
		assert.InDelta(t, total/3, first[name], 1, "%s first: %v", name, first)
	}
}

// ExamplePlanner walks the cheap→premium route: the premium target only
// answers what the cheap one refused.
func ExamplePlanner() {
	r := &profiles.Route{Model: "assistant", Strategy: "priority", Targets: []profiles.Target{
		{Upstream: "cheap", Model: "small", Weight: 1, TakesOver: []string{}},
		{Upstream: "premium", Model: "large", Weight: 1, TakesOver: []string{"refusal"}},
	}}
	p := NewPlanner(PlannerOptions{})
	pl := p.Plan(r, 2, 0, nil)

	first, _ := pl.First()
	refused := Classify(400, nil, []byte(`{"error":{"code":"content_policy_violation","type":"invalid_request_error"}}`))
	next, ok, _ := pl.Next(first, refused, false)
	fmt.Println(first.Name(), "->", next.Name(), ok, "reason:", refused)

	_, ok, stop := pl.Next(first, Classify(500, nil, nil), false)
	fmt.Println("after a 500:", ok, stop)
	// Output:
	// cheap/small -> premium/large true reason: refusal:content_policy_violation
	// after a 500: false exhausted
}

// TestWeightsThatOverflow: two weights of 2^62 sum past an int. The load
// and the admin API refuse weights above profiles.MaxWeight, and the pick
// clamps to it too, so that whatever reaches the planner orders the route
// instead of panicking.
func TestWeightsThatOverflow(t *testing.T) {
	r := route("w", StrategyWeighted,
		profiles.Target{Upstream: "a", Model: "m", Weight: 1 << 62},
		profiles.Target{Upstream: "b", Model: "m", Weight: 1 << 62},
	)
	p := NewPlanner(PlannerOptions{Rand: rand.NewPCG(1, 2)})
	first := map[string]int{}
	for range 200 {
		pl := p.Plan(r, 2, 0, nil)
		require.Len(t, pl.Explain().Members, 2)
		f, ok := pl.First()
		require.True(t, ok)
		first[f.Name()]++
	}
	require.Len(t, first, 2, "equal (clamped) weights: both come first sometimes: %v", first)
}

// panicSource is a random source that panics, standing in for any code the
// planner runs under its lock that can.
type panicSource struct{}

func (panicSource) Uint64() uint64 { panic("random source failed") }

// TestPlannerUnlocksOnPanic: a panic while the planner orders a route must
// not leave its lock held, or every later request of every route would
// wait on it until a restart.
func TestPlannerUnlocksOnPanic(t *testing.T) {
	r := route("w", StrategyWeighted,
		profiles.Target{Upstream: "a", Model: "m", Weight: 1},
		profiles.Target{Upstream: "b", Model: "m", Weight: 1},
	)
	p := NewPlanner(PlannerOptions{Rand: panicSource{}})
	require.Panics(t, func() { p.Plan(r, 2, 0, nil) })
	require.True(t, p.mu.TryLock(), "the planner is still locked after the panic")
	p.mu.Unlock()
	require.True(t, p.randMu.TryLock(), "the random source is still locked after the panic")
	p.randMu.Unlock()
}
