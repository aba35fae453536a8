package requestlog

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// rawConn opens a plain clickhouse-go connection to opts' database.
func rawConn(t testing.TB, opts Options) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{opts.Addr},
		Auth: clickhouse.Auth{Database: opts.Database, Username: "default"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestMigrateClickHouseTwiceIsNoop(t *testing.T) {
	srv := chtest.Shared(t)
	opts := chOptionsForTest(t, srv)
	ctx := testCtx(t)

	applied, err := MigrateClickHouse(ctx, opts)
	require.NoError(t, err)
	require.Equal(t, []string{"001_create_requests", "002_cost_source", "003_request_routing", "004_traffic_key", "005_config_revision", "006_api", "007_session_key", "008_usage_details", "009_data_policy", "010_preference", "011_served_region", "012_realtime"}, applied)

	applied, err = MigrateClickHouse(ctx, opts)
	require.NoError(t, err)
	require.Empty(t, applied, "second run applies nothing")

	s, err := OpenClickHouse(ctx, opts) // opening migrates too: still a no-op
	require.NoError(t, err)
	require.NoError(t, s.Close())

	conn := rawConn(t, opts)
	rs, err := conn.Query(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	require.NoError(t, err)
	var got []string
	for rs.Next() {
		var v uint32
		var name string
		require.NoError(t, rs.Scan(&v, &name))
		got = append(got, fmt.Sprintf("%d %s", v, name))
	}
	require.NoError(t, rs.Err())
	require.Equal(t, []string{"1 001_create_requests", "2 002_cost_source", "3 003_request_routing", "4 004_traffic_key", "5 005_config_revision", "6 006_api", "7 007_session_key", "8 008_usage_details", "9 009_data_policy", "10 010_preference", "11 011_served_region", "12 012_realtime"}, got, "one row per migration")
}

func TestMigrateAddColumnIsGuardedBySystemColumns(t *testing.T) {
	srv := chtest.Shared(t)
	opts := chOptionsForTest(t, srv)
	ctx := testCtx(t)
	o, err := opts.withDefaults()
	require.NoError(t, err)
	conn, err := connect(ctx, o)
	require.NoError(t, err)
	defer conn.Close()

	fsys := fstest.MapFS{
		"001_t.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t (a String) ENGINE = MergeTree() ORDER BY a;\n")},
		"002_b.sql": {Data: []byte("-- adds b\nALTER TABLE t ADD COLUMN b UInt8 DEFAULT 0;\nALTER TABLE t ADD COLUMN c String;\n")},
	}
	applied, err := migrate(ctx, conn, fsys)
	require.NoError(t, err)
	require.Equal(t, []string{"001_t", "002_b"}, applied)

	// Lose the record (as if a run died before writing it): rerunning must
	// not fail on the columns that already exist.
	require.NoError(t, conn.Exec(ctx, "DROP TABLE schema_migrations"))
	applied, err = migrate(ctx, conn, fsys)
	require.NoError(t, err)
	require.Equal(t, []string{"001_t", "002_b"}, applied)

	var n uint64
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = 't'").Scan(&n))
	require.Equal(t, uint64(3), n)
}

func TestLoadMigrations(t *testing.T) {
	cases := []struct {
		name    string
		fsys    fstest.MapFS
		want    []string
		wantErr string
	}{
		{"embedded", nil, []string{"001_create_requests", "002_cost_source", "003_request_routing", "004_traffic_key", "005_config_revision", "006_api", "007_session_key", "008_usage_details", "009_data_policy", "010_preference", "011_served_region", "012_realtime"}, ""},
		{"ordered", fstest.MapFS{
			"010_c.sql": {Data: []byte("SELECT 3;")},
			"002_b.sql": {Data: []byte("SELECT 2;")},
			"README.md": {Data: []byte("ignored")},
		}, []string{"002_b", "010_c"}, ""},
		{"bad name", fstest.MapFS{"2_b.sql": {Data: []byte("SELECT 1;")}}, nil, "name must be"},
		{"duplicate version", fstest.MapFS{
			"002_a.sql": {Data: []byte("SELECT 1;")}, "002_b.sql": {Data: []byte("SELECT 1;")},
		}, nil, "share version 2"},
		{"empty", fstest.MapFS{"001_a.sql": {Data: []byte("-- nothing\n")}}, nil, "no statements"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ms []migration
			var err error
			if tc.fsys == nil {
				ms, err = loadMigrations(clickhouseMigrations)
			} else {
				ms, err = loadMigrations(tc.fsys)
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, m := range ms {
				names = append(names, m.name)
			}
			require.Equal(t, tc.want, names)
		})
	}
}

func TestSplitStatements(t *testing.T) {
	got := splitStatements("-- c\nCREATE TABLE a (\n  x String\n);\n\nALTER TABLE a ADD COLUMN y UInt8;\nSELECT 1")
	require.Equal(t, []string{"CREATE TABLE a (\n  x String\n)", "ALTER TABLE a ADD COLUMN y UInt8", "SELECT 1"}, got)
}

func TestClickHouseOptionsRejectBadDatabase(t *testing.T) {
	_, err := OpenClickHouse(context.Background(), Options{Database: "x; DROP"})
	require.ErrorContains(t, err, "database name")
}

// TestClickHouseKillRestartExactlyOnce kills the server with SIGKILL while
// a bounded load goes through the Writer, restarts it, and checks that
// every row arrives exactly once.
func TestClickHouseKillRestartExactlyOnce(t *testing.T) {
	srv := chtest.Start(t) // its own server: this test kills it
	opts := Options{Addr: srv.Addr(), Database: "killtest", DialTimeout: time.Second, ReadTimeout: 5 * time.Second}
	ctx := testCtx(t)
	store, err := OpenClickHouse(ctx, opts)
	require.NoError(t, err)
	defer store.Close()
	w := NewWriter(store, WriterOptions{
		BatchSize: 250, FlushInterval: 50 * time.Millisecond, SpoolDir: t.TempDir(),
		WriteTimeout: 3 * time.Second, RetryMin: 50 * time.Millisecond, RetryMax: 400 * time.Millisecond,
	})

	const total, perTick, ticks = 5000, 50, 100 // 100 ticks × 25 ms ≈ 2.5 s
	want := make([]string, 0, total)
	start := time.Now().UTC()
	for i := range ticks {
		switch i {
		case 30:
			srv.Kill()
		case 70:
			srv.Restart()
		}
		for j := range perTick {
			id := fmt.Sprintf("kill-%05d", i*perTick+j)
			want = append(want, id)
			w.Enqueue(&Row{TS: start.Add(time.Duration(i*perTick+j) * time.Millisecond), RequestID: id, Org: "acme"})
		}
		time.Sleep(25 * time.Millisecond)
	}
	require.Len(t, want, total)

	// The writer recovers by itself: the spool drains once the server is back.
	require.Eventually(t, func() bool {
		st := w.Stats()
		return st.QueueDepth == 0 && st.SpoolBytes == 0 && st.StoreUp
	}, 60*time.Second, 50*time.Millisecond)
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Close(closeCtx))
	st := w.Stats()
	require.Positive(t, st.WriteErrors, "the outage must have been seen")
	require.Positive(t, st.SpooledRows, "rows must have gone through the spool")
	require.Zero(t, st.DroppedRows)

	conn := rawConn(t, opts)
	var count uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM requests").Scan(&count))
	require.Equal(t, uint64(total), count, "plain count: every row exactly once")
	rs, err := conn.Query(ctx, "SELECT request_id FROM requests ORDER BY request_id")
	require.NoError(t, err)
	var got []string
	for rs.Next() {
		var id string
		require.NoError(t, rs.Scan(&id))
		got = append(got, id)
	}
	require.NoError(t, rs.Err())
	slices.Sort(want)
	require.Equal(t, want, got)
}
