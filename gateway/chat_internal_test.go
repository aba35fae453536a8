package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRequestIDsSortByTime: ids are 32 hex digits led by the millisecond, so
// a later request's id sorts after an earlier one's, and ids of the same
// millisecond still differ.
func TestRequestIDsSortByTime(t *testing.T) {
	t0 := time.UnixMilli(1_780_000_000_000)
	a, b := newRequestID(t0), newRequestID(t0)
	require.Regexp(t, `^[0-9a-f]{32}$`, a)
	require.NotEqual(t, a, b)
	require.Equal(t, a[:12], b[:12])
	require.Equal(t, fmt.Sprintf("%012x", t0.UnixMilli()), a[:12])
	later := newRequestID(t0.Add(time.Millisecond))
	require.Less(t, a, later)
	require.Less(t, b, later)
}
