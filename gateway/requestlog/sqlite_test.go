package requestlog

import (
	"database/sql"
	"os"
	"path/filepath"
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
