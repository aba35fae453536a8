package profiles

import (
	"net/http"
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

// TestSessionsLookup: the first configured session header the request
// carries with a value names the session, whatever case either side
// spells it in; a Config built without the loader's defaults reads the
// default list; [] reads none.
func TestSessionsLookup(t *testing.T) {
	loaded := func(names []string) Sessions {
		c := &Config{Sessions: Sessions{Headers: names}}
		c.Sessions.keys = canonicalKeys(c.Sessions.Headers)
		return c.Sessions
	}
	for _, tc := range []struct {
		name      string
		sessions  Sessions
		header    map[string]string
		wantName  string
		wantValue string
	}{
		{"sluice's own header first", loaded(DefaultSessionHeaders),
			map[string]string{"session-id": "codex", "X-Session-Id": "own"}, "X-Session-Id", "own"},
		{"Claude Code's header, as it sends it", loaded(DefaultSessionHeaders),
			map[string]string{"X-Claude-Code-Session-Id": "cc"}, "x-claude-code-session-id", "cc"},
		{"an empty value is no session", loaded(DefaultSessionHeaders),
			map[string]string{"X-Session-Id": "", "session-id": "codex"}, "session-id", "codex"},
		{"configured order wins", loaded([]string{"session-id", "X-Session-Id"}),
			map[string]string{"X-Session-Id": "own", "Session-Id": "codex"}, "session-id", "codex"},
		{"no loader: the default list", Sessions{},
			map[string]string{"x-claude-code-session-id": "cc"}, "x-claude-code-session-id", "cc"},
		{"no loader, names set", Sessions{Headers: []string{"x-trace-session"}},
			map[string]string{"X-Trace-Session": "t"}, "x-trace-session", "t"},
		{"[] reads none", loaded([]string{}),
			map[string]string{"X-Session-Id": "own"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			name, value := tc.sessions.Lookup(h)
			require.Equal(t, tc.wantName, name)
			require.Equal(t, tc.wantValue, value)
		})
	}
}
