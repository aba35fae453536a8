package requestlog

import (
	"database/sql"
	"fmt"
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

// TestSQLiteAddsNewColumnsToAnOldFile opens a file made by the first
// release, whose table lacked every column of sqliteColumns: open adds them,
// old rows read their defaults, new rows keep theirs, and a second open adds
// nothing.
func TestSQLiteAddsNewColumnsToAnOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.db")
	old, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = old.Exec(sqliteSchema[0])
	require.NoError(t, err)
	_, err = old.Exec("INSERT INTO requests (ts_ms, request_id, team, cost_usd) VALUES (?, 'old-1', 'ml', 0.5)", baseTS.UnixMilli())
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s, err := OpenSQLite(path)
	require.NoError(t, err)
	p, err := s.Query(t.Context(), Filter{})
	require.NoError(t, err)
	require.Len(t, p.Rows, 1)
	require.Equal(t, "old-1", p.Rows[0].RequestID)
	require.False(t, p.Rows[0].RequestRouting)
	require.Equal(t, "", p.Rows[0].CostSource)
	require.Equal(t, 0.5, p.Rows[0].CostUSD)
	require.Equal(t, "", p.Rows[0].SessionKey)
	require.Equal(t, "", p.Rows[0].SessionAffinity)
	require.Equal(t, []string{}, p.Rows[0].PreferencePreferred, "an old row reads no preference")
	require.Equal(t, "", p.Rows[0].PreferenceVerdict)
	require.NoError(t, s.Insert(t.Context(), []Row{{TS: baseTS, RequestID: "new-1", RequestRouting: true, CostUSD: 0.25, CostSource: "upstream",
		SessionID: "s-1", SessionKey: "session-id", SessionAffinity: "pin+prompt_cache_key"}}))
	require.NoError(t, s.Close())

	s, err = OpenSQLite(path) // the columns exist now: nothing to add
	require.NoError(t, err)
	defer s.Close()
	p, err = s.Query(t.Context(), Filter{})
	require.NoError(t, err)
	require.Equal(t, []string{"old-1", "new-1"}, ids(p.Rows))
	require.True(t, p.Rows[1].RequestRouting)
	require.Equal(t, "upstream", p.Rows[1].CostSource)
	require.Equal(t, "session-id", p.Rows[1].SessionKey)
	require.Equal(t, "pin+prompt_cache_key", p.Rows[1].SessionAffinity)
	p, err = s.Query(t.Context(), Filter{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, []string{"new-1"}, ids(p.Rows))
}

// TestSQLiteMigratesTrafficIndexToRollup: a log written before the rollup
// (the covering traffic index, a session index over every row, no rollup
// rows, no summary rollup) opens with the index gone, the session index partial and the
// rollups filled from its rows once: the same counts as the rows give, and
// no more on the next open.
func TestSQLiteMigratesTrafficIndexToRollup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.db")
	rows := make([]Row, 500)
	for i := range rows {
		rows[i] = sampleRows(1)[0]
		rows[i].RequestID = fmt.Sprintf("m-%03d", i)
		rows[i].TS = baseTS.Add(time.Duration(i) * 61 * time.Second)
		rows[i].Team, rows[i].KeyID, rows[i].RequestRouting = []string{"ads", "infra"}[i%2], fmt.Sprintf("k-%d", i%3), i%4 == 0
	}
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	require.NoError(t, s.Insert(t.Context(), rows))
	require.NoError(t, s.Close())
	// Back to the schema before the rollup.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, stmt := range []string{
		`DELETE FROM requests_traffic_hours`,
		`DELETE FROM requestlog_meta WHERE k = 'migration:traffic_rollup'`,
		`DROP TABLE requests_summary_hours`,
		`DROP TABLE requests_team_hours`,
		`DELETE FROM requestlog_meta WHERE k = 'migration:summary_rollup'`,
		`DROP INDEX requests_session`,
		`DROP INDEX requests_exceptional`,
		`CREATE INDEX requests_exceptions ON requests (ts_ms, request_id) WHERE ` + sqliteExceptional,
		`CREATE INDEX requests_session_ts ON requests (session_id, ts_ms)`,
		`CREATE INDEX requests_traffic ON requests (key_id, team, decided_model, upstream, route, ts_ms, request_routing)`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, db.Close())

	hour := time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC)
	for range 2 {
		s, err := OpenSQLite(path)
		require.NoError(t, err)
		var indexes []string
		rs, err := s.(*sqliteStore).db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'requests' AND sql IS NOT NULL ORDER BY name`)
		require.NoError(t, err)
		for rs.Next() {
			var n string
			require.NoError(t, rs.Scan(&n))
			indexes = append(indexes, n)
		}
		require.NoError(t, rs.Err())
		require.Equal(t, []string{"requests_exceptional", "requests_org_ts", "requests_project_ts", "requests_provider_ts", "requests_session", "requests_team_ts", "requests_ts"}, indexes)
		for _, f := range []TrafficFilter{{}, {From: hour, To: hour.Add(3 * time.Hour)}, {From: hour.Add(-time.Minute), Teams: []string{"ads"}}} {
			got, err := s.Traffic(t.Context(), f)
			require.NoError(t, err)
			require.Equal(t, CountTraffic(rows, f), got, "filter %+v", f)
		}
		// The summary rollup, filled from the rows once (not again at
		// the second open), answers as the rows do.
		for _, f := range []Filter{{}, {From: hour, To: hour.Add(3 * time.Hour)}, {From: hour.Add(-time.Minute), Team: "ads"}} {
			got, err := s.(Summarizer).Summarize(t.Context(), f, BucketHour)
			require.NoError(t, err)
			var want []Row
			for _, r := range rows {
				if matches(r, f) {
					want = append(want, r)
				}
			}
			require.Equal(t, SummarizeRows(want, BucketHour), got, "filter %+v", f)
		}
		require.NoError(t, s.Close())
	}
}
