package gateway_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// TestCatalogRefreshOncePerFleet: three replicas on one Redis refreshing
// together fetch the marketplace's listing once, and all serve it; a
// second round within the refresh interval fetches nothing.
func TestCatalogRefreshOncePerFleet(t *testing.T) {
	rd := redistest.Start(t)
	rigs := make([]*refreshRig, 3)
	for i := range rigs {
		dir := refreshDir(t)
		p := filepath.Join(dir, "sluice.toml")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := strings.Replace(string(b), "[retry]\n", fmt.Sprintf("[shared]\nredis_url = %q\n\n[retry]\n", rd.URL()), 1)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		rigs[i] = newRefreshRig(t, dir)
	}
	fetches := func() (n int64) {
		for _, r := range rigs {
			n += r.fetches.Load()
		}
		return n
	}
	refreshAll := func() {
		var wg sync.WaitGroup
		for _, r := range rigs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				require.NoError(t, r.srv.RefreshCatalog(context.Background()))
			}()
		}
		wg.Wait()
	}
	refreshAll()
	require.Equal(t, int64(1), fetches(), "one fetch for the fleet")
	for i, r := range rigs {
		_, ok := r.srv.Snapshot().Catalog.Model(newModel)
		require.True(t, ok, "replica %d serves the refreshed catalog", i)
	}
	rev := rigs[0].srv.Snapshot().Catalog.Revision()
	for i, r := range rigs[1:] {
		require.Equal(t, rev, r.srv.Snapshot().Catalog.Revision(), "replica %d serves the same revision", i+1)
	}
	refreshAll()
	require.Equal(t, int64(1), fetches(), "a listing fetched within the interval is not fetched again")
}
