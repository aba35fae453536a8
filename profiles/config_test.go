package profiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreDefaults: the request log's batch size defaults by backend, and
// a value set in the file wins.
func TestStoreDefaults(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(corpusDir, "no-profiles", ConfigFile))
	require.NoError(t, err)
	for _, tc := range []struct {
		store     string
		wantKind  string
		wantBatch int
	}{
		{"", "sqlite", 1000},
		{"[store]\nkind = \"sqlite\"\n", "sqlite", 1000},
		{"[store]\nkind = \"clickhouse\"\n", "clickhouse", 3000},
		{"[store]\nkind = \"clickhouse\"\nbatch_size = 50\n", "clickhouse", 50},
		{"[store]\nkind = \"off\"\n", "off", 1000},
	} {
		t.Run(tc.wantKind+"/"+tc.store, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), append([]byte(tc.store+"\n"), base...), 0o644))
			cfg, diags := Load(dir)
			require.Empty(t, diags)
			require.Equal(t, tc.wantKind, cfg.Store.Kind)
			require.Equal(t, tc.wantBatch, cfg.Store.BatchSize)
			require.Equal(t, "errors", cfg.Server.LogRequests)
			require.Equal(t, "info", cfg.Server.LogLevel)
		})
	}
}
