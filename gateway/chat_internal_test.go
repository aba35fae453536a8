package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/snapshot"
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
	allocs := testing.AllocsPerRun(50, func() {
		_, _ = readBody(strings.NewReader(body), int64(len(body)), 1<<20)
	})
	require.LessOrEqual(t, allocs, 2.0, "a body of declared length is read into one buffer (plus the reader)")
}

// TestServedEndpoint: a provider reported in the upstream's own spelling is
// recorded as the catalog's slug for the served model; an unknown one is
// kept, lower-cased.
func TestServedEndpoint(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"models": [
	  {"slug": "anthropic/claude-sonnet-4.5", "context_window": 200000,
	   "endpoints": [{"provider": "anthropic", "price_in": 3, "price_out": 15},
	                 {"provider": "amazon-bedrock", "price_in": 3, "price_out": 15},
	                 {"provider": "google-vertex", "price_in": 3, "price_out": 15}]},
	  {"slug": "meta-llama/llama-3.1-70b-instruct", "context_window": 128000,
	   "endpoints": [{"provider": "deepinfra", "tag": "turbo", "price_in": 0.1, "price_out": 0.2},
	                 {"provider": "google-ai-studio", "price_in": 0.2, "price_out": 0.3}]}
	]}`), 0o644))
	cat, diags := guardrails.LoadCatalog(dir)
	require.Empty(t, diags)
	snap := &snapshot.Snapshot{Catalog: cat}
	tests := []struct{ model, reported, want string }{
		{"anthropic/claude-sonnet-4.5", "anthropic", "anthropic"},
		{"anthropic/claude-sonnet-4.5", "Anthropic", "anthropic"},
		{"anthropic/claude-sonnet-4.5", "Amazon Bedrock", "amazon-bedrock"},
		{"anthropic/claude-sonnet-4.5", "amazon_bedrock", "amazon-bedrock"},
		{"anthropic/claude-sonnet-4.5", "Google", "google"},
		{"anthropic/claude-sonnet-4.5", "Amazon", "amazon"},
		{"anthropic/claude-sonnet-4.5", "", ""},
		{"meta-llama/llama-3.1-70b-instruct", "DeepInfra", "deepinfra"},
		{"meta-llama/llama-3.1-70b-instruct", "deepinfra/turbo", "deepinfra/turbo"},
		{"meta-llama/llama-3.1-70b-instruct", "Google AI Studio", "google-ai-studio"},
		{"meta-llama/llama-3.1-70b-instruct", "Amazon Bedrock", "amazon bedrock"},
		{"not/in-catalog", "Amazon Bedrock", "amazon bedrock"},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+tc.reported, func(t *testing.T) {
			provider, _ := servedEndpoint(snap, tc.model, tc.reported)
			require.Equal(t, tc.want, provider)
		})
	}
	provider, ep := servedEndpoint(&snapshot.Snapshot{}, "openai/gpt-4o", "Azure")
	require.Equal(t, "azure", provider, "no catalog: lower-cased")
	require.Nil(t, ep)
}
