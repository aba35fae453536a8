package gateway_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestStartupStoreErrors: an unusable data directory or a locked SQLite
// file is a clear error at start, naming the path.
func TestStartupStoreErrors(t *testing.T) {
	t.Run("data_dir is a file", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), []byte("not a directory"), 0o644))
		_, err := gateway.New(gateway.Options{ConfigDir: dir})
		require.Error(t, err)
		require.Contains(t, err.Error(), filepath.Join(dir, "data"))
	})
	t.Run("request log locked by another process", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
		path := filepath.Join(dir, "data", "requests.db")
		other, err := sql.Open("sqlite", "file:"+path)
		require.NoError(t, err)
		defer other.Close()
		other.SetMaxOpenConns(1)
		_, err = other.Exec("CREATE TABLE IF NOT EXISTS x (a INTEGER)")
		require.NoError(t, err)
		_, err = other.Exec("BEGIN EXCLUSIVE")
		require.NoError(t, err)
		defer func() { _, _ = other.Exec("ROLLBACK") }()
		_, err = gateway.New(gateway.Options{ConfigDir: dir})
		require.Error(t, err)
		require.Contains(t, err.Error(), path)
		require.Contains(t, strings.ToLower(err.Error()), "lock")
	})
}

// TestSpoolFullKeepsServing: with ClickHouse down and a tiny spool bound,
// requests keep being answered, the bound holds, and the dropped rows are
// counted in a metric and in /readyz.
func TestSpoolFullKeepsServing(t *testing.T) {
	ch := chtest.Start(t)
	db := chtest.NewDatabaseName("spool")
	h := newHarness(t, [2]string{"kind = \"sqlite\"\n", fmt.Sprintf("kind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\nspool_max_bytes = 4096\n", ch.Addr(), db)},
		[2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	ch.Kill()
	for i := 0; i < 60; i++ {
		resp, b := h.post(secretChat, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"s%d"`, i)))
		require.Equal(t, 200, resp.StatusCode, string(b))
	}
	ctx, cancel := contextWithTimeout(10e9)
	defer cancel()
	for ctx.Err() == nil && metric(t, h, "sluice_requestlog_dropped_rows_total") == 0 {
		resp, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"more"`))
		require.Equal(t, 200, resp.StatusCode)
	}
	dropped := metric(t, h, "sluice_requestlog_dropped_rows_total")
	require.Greater(t, dropped, 0.0, "rows beyond the bound are dropped and counted")
	require.LessOrEqual(t, metric(t, h, "sluice_requestlog_spool_bytes"), 4096.0+4096, "the bound holds")
	_, rb := h.get("/readyz", "")
	var rd gateway.Readiness
	require.NoError(t, json.Unmarshal(rb, &rd))
	require.False(t, rd.Store.Reachable)
	require.Greater(t, rd.Store.DroppedRows, uint64(0))
	require.Contains(t, h.logs.String(), "spool")
}
