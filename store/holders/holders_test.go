package holders

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHoldersSurviveReopen: a record outlives the process that wrote it
// (read back from the file after Close and Open), until it expires or is
// deleted; a queued change is seen before it is written.
func TestHoldersSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	tab, err := Open(path)
	require.NoError(t, err)
	clock := time.Unix(1_800_000_000, 0)
	tab.now = func() time.Time { return clock }
	tab.Put("resp_a", Holder{Upstream: "openai", Key: "k-batch"}, time.Hour)
	tab.Put("resp_b", Holder{Upstream: "openai", Key: "k-chat"}, time.Minute)
	tab.Put("resp_c", Holder{Upstream: "openai", Key: "k-chat"}, time.Hour)
	h, ok, err := tab.Get(ctx, "resp_a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Holder{Upstream: "openai", Key: "k-batch"}, h)
	require.NoError(t, tab.Close(ctx))
	tab, err = Open(path)
	require.NoError(t, err)
	defer tab.Close(ctx)
	tab.now = func() time.Time { return clock.Add(2 * time.Minute) }
	tab.Delete("resp_c")
	for id, want := range map[string]*Holder{
		"resp_a":  {Upstream: "openai", Key: "k-batch"},
		"resp_b":  nil, // expired
		"resp_c":  nil, // deleted (queued)
		"resp_zz": nil, // never recorded
	} {
		h, ok, err := tab.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want != nil, ok, id)
		if want != nil {
			require.Equal(t, *want, h, id)
		}
	}
	require.NoError(t, tab.Flush(ctx))
	_, ok, err = tab.Get(ctx, "resp_c")
	require.NoError(t, err)
	require.False(t, ok, "deleted in the file too")
}
