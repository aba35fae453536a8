package shared

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeyFilterRates: no key added is ever reported absent, and the
// false-positive rate stays within filterGenFP per generation
// (docs/scaling.md states it); generations go when their keys expired or
// newer ones hold the cache's bound in bytes.
func TestKeyFilterRates(t *testing.T) {
	f := &keyFilter{ready: true}
	now := time.Unix(1_000_000, 0)
	const keys = 3 * filterGenKeys
	for i := range keys {
		f.add(fmt.Sprintf("%064x", i), 1000, time.Hour, 1<<40, now)
	}
	st := f.stats()
	require.Equal(t, 3, st.Generations)
	require.Equal(t, keys, st.Keys)
	for i := range keys {
		require.True(t, f.mayHave(fmt.Sprintf("%064x", i)), "key %d", i)
	}
	const probes = 200_000
	fp := 0
	for i := range probes {
		if f.mayHave(fmt.Sprintf("absent-%059x", i)) {
			fp++
		}
	}
	rate := float64(fp) / probes
	t.Logf("false positives: %d of %d (%.3f%%) over %d full generations", fp, probes, 100*rate, st.Generations)
	require.LessOrEqual(t, rate, float64(st.Generations)*filterGenFP*1.3)

	// Past the ttl, a new generation starts and the old ones go.
	f.add("late", 1000, time.Hour, 1<<40, now.Add(61*time.Minute))
	require.Equal(t, 1, f.stats().Generations)
	require.False(t, f.mayHave(fmt.Sprintf("%064x", 7)))
	require.True(t, f.mayHave("late"))

	// The cache's bound in bytes: once newer generations hold it, an older
	// one's answers were evicted and it goes.
	g := &keyFilter{ready: true}
	for i := range filterGenKeys + 1 {
		g.add(fmt.Sprintf("%064x", i), 100, time.Hour, 100*filterGenKeys, now)
	}
	require.Equal(t, 2, g.stats().Generations)
	for i := range filterGenKeys {
		g.add(fmt.Sprintf("b%063x", i), 100, time.Hour, 100*filterGenKeys, now)
	}
	require.Equal(t, 2, g.stats().Generations, "the first generation went")
	require.False(t, g.mayHave(fmt.Sprintf("%064x", 3)))
}
