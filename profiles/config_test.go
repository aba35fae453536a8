package profiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreDefaults: the request log's batch size defaults by backend, the
// ClickHouse address by clickhouse_tls, and a value set in the file wins.
func TestStoreDefaults(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(corpusDir, "no-profiles", ConfigFile))
	require.NoError(t, err)
	for _, tc := range []struct {
		store     string
		wantKind  string
		wantBatch int
		wantAddr  string
	}{
		{"", "sqlite", 1000, "127.0.0.1:9000"},
		{"[store]\nkind = \"sqlite\"\n", "sqlite", 1000, "127.0.0.1:9000"},
		{"[store]\nkind = \"clickhouse\"\n", "clickhouse", 3000, "127.0.0.1:9000"},
		{"[store]\nkind = \"clickhouse\"\nbatch_size = 50\n", "clickhouse", 50, "127.0.0.1:9000"},
		{"[store]\nkind = \"clickhouse\"\nclickhouse_tls = true\n", "clickhouse", 3000, "127.0.0.1:9440"},
		{"[store]\nkind = \"clickhouse\"\nclickhouse_tls = true\nclickhouse_addr = \"ch:9441\"\n", "clickhouse", 3000, "ch:9441"},
		{"[store]\nkind = \"off\"\n", "off", 1000, "127.0.0.1:9000"},
	} {
		t.Run(tc.wantKind+"/"+tc.store, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), append([]byte(tc.store+"\n"), base...), 0o644))
			cfg, diags := Load(dir)
			require.Empty(t, diags)
			require.Equal(t, tc.wantKind, cfg.Store.Kind)
			require.Equal(t, tc.wantBatch, cfg.Store.BatchSize)
			require.Equal(t, tc.wantAddr, cfg.Store.ClickHouseAddr)
			require.Equal(t, "errors", cfg.Server.LogRequests)
			require.Equal(t, "info", cfg.Server.LogLevel)
		})
	}
}

// TestClickHousePassword: the password is the value of the variable
// clickhouse_password_env names; a variable set but empty is an error (as
// an unset one is: testdata/profiles/bad-store-clickhouse-secrets), and no
// error carries a value.
func TestClickHousePassword(t *testing.T) {
	t.Setenv("SLUICE_TEST_CH_PASSWORD", "s3cret-never-in-an-error")
	t.Setenv("SLUICE_TEST_CH_EMPTY", "")
	for _, tc := range []struct {
		env, want, wantErr string
	}{
		{"", "", ""},
		{"SLUICE_TEST_CH_PASSWORD", "s3cret-never-in-an-error", ""},
		{"SLUICE_TEST_CH_EMPTY", "", "the environment variable SLUICE_TEST_CH_EMPTY is empty"},
	} {
		st := Store{ClickHousePasswordEnv: tc.env}
		got, err := st.ClickHousePassword()
		if tc.wantErr != "" {
			require.EqualError(t, err, tc.wantErr)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}
