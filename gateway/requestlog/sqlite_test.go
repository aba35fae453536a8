package requestlog

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOpenSQLiteErrorsNameThePath(t *testing.T) {
	t.Run("missing folder", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope", "requests.db")
		_, err := OpenSQLite(path)
		require.ErrorContains(t, err, path)
		require.ErrorIs(t, err, os.ErrNotExist)
	})

	t.Run("locked", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "requests.db")
		s, err := OpenSQLite(path)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		// Another process holds the write lock.
		other, err := sql.Open("sqlite", "file:"+path)
		require.NoError(t, err)
		defer other.Close()
		other.SetMaxOpenConns(1)
		_, err = other.Exec("BEGIN IMMEDIATE")
		require.NoError(t, err)
		defer func() { _, _ = other.Exec("ROLLBACK") }()

		start := time.Now()
		_, err = OpenSQLite(path)
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, "locked")
		require.Less(t, time.Since(start), sqliteBusyTimeout, "open fails fast on a locked file")
	})

	t.Run("read-only via uri", func(t *testing.T) {
		// Works as root too: SQLite itself refuses writes.
		path := filepath.Join(t.TempDir(), "requests.db")
		s, err := OpenSQLite(path)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = openSQLiteDSN(path, "mode=ro")
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, "read-only")
	})
}

func TestSQLiteUsesWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.db")
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	var mode string
	require.NoError(t, s.(*sqliteStore).db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode)
}

// TestSQLiteAddsColumnsToAnOlderFile: a request log written before a column
// existed gets it when opened, keeps its rows (the new column at its
// default), and records the new column from then on.
func TestSQLiteAddsColumnsToAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	old := strings.Replace(sqliteSchema[0], ",\n\t\tcost_source TEXT NOT NULL DEFAULT ''", "", 1)
	require.NotEqual(t, sqliteSchema[0], old, "the first release's table had no cost_source")
	_, err = db.Exec(old)
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO requests (ts_ms, request_id, cost_usd) VALUES (1764547200000, 'old-row', 0.5)")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := OpenSQLite(path)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.Insert(ctx, []Row{{TS: time.UnixMilli(1764547201000), RequestID: "new-row", CostUSD: 0.25, CostSource: "upstream"}}))
	page, err := s.Query(ctx, Filter{})
	require.NoError(t, err)
	require.Len(t, page.Rows, 2)
	require.Equal(t, "new-row", page.Rows[0].RequestID)
	require.Equal(t, "upstream", page.Rows[0].CostSource)
	require.Equal(t, "old-row", page.Rows[1].RequestID)
	require.Equal(t, "", page.Rows[1].CostSource)
	require.Equal(t, 0.5, page.Rows[1].CostUSD)

	require.NoError(t, s.Close())

	// Opening the upgraded file again adds nothing twice.
	s, err = OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	page, err = s.Query(ctx, Filter{})
	require.NoError(t, err)
	require.Len(t, page.Rows, 2)
}
