package gateway

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
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

// TestReadBody: readBody returns what io.ReadAll would, whatever the
// declared length says, and allocates once when the length is right.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("sluice ", 300) // 2100 bytes
	boom := errors.New("connection reset")
	cases := []struct {
		name     string
		r        io.Reader
		size     int64
		want     string
		wantErr  error
		oneAlloc bool
	}{
		{name: "declared exactly", r: strings.NewReader(body), size: int64(len(body)), want: body, oneAlloc: true},
		{name: "undeclared", r: strings.NewReader(body), size: -1, want: body},
		{name: "declared short", r: strings.NewReader(body), size: 10, want: body},
		{name: "declared long", r: strings.NewReader(body), size: 5000, want: body},
		{name: "over the limit", r: strings.NewReader(body), size: 1 << 30, want: body},
		{name: "one byte reads", r: iotest.OneByteReader(strings.NewReader(body)), size: int64(len(body)), want: body},
		{name: "empty", r: strings.NewReader(""), size: 0, want: ""},
		{name: "error mid-body", r: io.MultiReader(strings.NewReader(body[:100]), iotest.ErrReader(boom)), size: int64(len(body)), want: body[:100], wantErr: boom},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readBody(c.r, c.size, 1<<20)
			require.Equal(t, c.want, string(got))
			require.ErrorIs(t, err, c.wantErr)
			if c.wantErr == nil {
				require.NoError(t, err)
			}
		})
	}
	// A body that declares 10 MiB and sends 100 bytes before its caller
	// stalls holds no more than readBodyFirst (issue 38: 200 such
	// connections took 2.1 GB before the bytes were ever sent).
	got, err := readBody(io.MultiReader(strings.NewReader(body[:100]), iotest.ErrReader(boom)), 10<<20, 10<<20)
	require.ErrorIs(t, err, boom)
	require.LessOrEqual(t, cap(got), readBodyFirst, "memory follows the bytes that arrived, not the declared length")
	big := strings.Repeat("x", 3*readBodyFirst+5)
	got, err = readBody(iotest.HalfReader(strings.NewReader(big)), int64(len(big)), 1<<30)
	require.NoError(t, err)
	require.Equal(t, big, string(got), "a body past the first buffer grows to its declared length")
	allocs := testing.AllocsPerRun(50, func() {
		_, _ = readBody(strings.NewReader(body), int64(len(body)), 1<<20)
	})
	require.LessOrEqual(t, allocs, 2.0, "a body of declared length is read into one buffer (plus the reader)")
}
