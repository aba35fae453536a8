package requestlog

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

func TestTrafficOfOffAndLazyStores(t *testing.T) {
	_, err := Off().Traffic(t.Context(), TrafficFilter{})
	require.ErrorIs(t, err, ErrOff)

	dir := t.TempDir()
	inner, err := OpenSQLite(filepath.Join(dir, "requests.db"))
	require.NoError(t, err)
	require.NoError(t, inner.Insert(t.Context(), sampleRows(20)))
	opens := 0
	l := newLazyStore(func(context.Context) (Store, error) { opens++; return inner, nil })
	defer l.Close()
	got, err := l.Traffic(t.Context(), TrafficFilter{Teams: []string{"ads"}})
	require.NoError(t, err)
	require.Equal(t, CountTraffic(sampleRows(20), TrafficFilter{Teams: []string{"ads"}}), got)
	require.Equal(t, 1, opens)

	down := newLazyStore(func(context.Context) (Store, error) { return nil, context.DeadlineExceeded })
	_, err = down.Traffic(t.Context(), TrafficFilter{})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a store that cannot be opened says why")

	s, err := Open(&profiles.Store{Kind: "off"})
	require.NoError(t, err)
	_, err = s.Traffic(t.Context(), TrafficFilter{})
	require.ErrorIs(t, err, ErrOff)
}

// TestSQLiteTrafficReadsTheRollup: the whole hours of a window are read
// from the rollup in its key's order (never sorted, the rows never read);
// the part hours at its ends from the rows in them, by the time index.
func TestSQLiteTrafficReadsTheRollup(t *testing.T) {
	s := openSQLiteForTest(t).(*sqliteStore)
	hour := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		f     TrafficFilter
		edges int
	}{
		{TrafficFilter{}, 0},
		{TrafficFilter{From: hour, To: hour.Add(48 * time.Hour)}, 0},
		{TrafficFilter{From: hour.Add(time.Minute), To: hour.Add(48*time.Hour + time.Minute)}, 2},
		{TrafficFilter{From: hour.Add(time.Minute), Teams: []string{"a", "b"}}, 1},
		{TrafficFilter{To: hour.Add(time.Millisecond)}, 1},
		{TrafficFilter{From: hour.Add(time.Minute), To: hour.Add(2 * time.Minute)}, 1},
	} {
		qs := sqliteTrafficSQL(tc.f)
		require.Len(t, qs, 1+tc.edges, "filter %+v", tc.f)
		for i, q := range qs {
			rs, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q.sql, q.args...)
			require.NoError(t, err)
			var plan []string
			for rs.Next() {
				var id, parent, notused int
				var detail string
				require.NoError(t, rs.Scan(&id, &parent, &notused, &detail))
				plan = append(plan, detail)
			}
			require.NoError(t, rs.Err())
			rs.Close()
			p := strings.Join(plan, "\n")
			if i == 0 {
				require.Contains(t, p, "SCAN requests_traffic_hours", "filter %+v", tc.f)
				require.NotContains(t, p, "TEMP B-TREE", "groups stream out of the rollup, unsorted: filter %+v", tc.f)
			} else {
				require.Contains(t, p, "SEARCH requests USING INDEX requests_ts (ts_ms>? AND ts_ms<?)", "filter %+v", tc.f)
			}
		}
	}
}

// TestClickHouseTrafficSurvivesHashCollisions: ordinary rows are counted by
// their traffic_key; when two combinations share a hash, or a hash has no
// strings, the exact query answers, with the same counts.
func TestClickHouseTrafficSurvivesHashCollisions(t *testing.T) {
	srv := chtest.Shared(t)
	opts := chOptionsForTest(t, srv)
	ctx := testCtx(t)
	s, err := OpenClickHouse(ctx, opts)
	require.NoError(t, err)
	defer s.Close()
	cs := s.(*clickhouseStore)
	in := sampleRows(90)
	require.NoError(t, s.Insert(ctx, in))
	check := func(rows []Row, exact int64) {
		t.Helper()
		for _, f := range []TrafficFilter{{}, {Teams: []string{"ads", "infra"}, From: baseTS.Add(10 * time.Second)}} {
			got, err := s.Traffic(ctx, f)
			require.NoError(t, err)
			require.Equal(t, CountTraffic(rows, f), got)
		}
		require.Equal(t, exact, cs.exactTraffic.Load(), "queries answered by the exact grouping")
	}
	check(in, 0)

	conn := rawConn(t, opts)
	var key uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT traffic_key FROM requests WHERE request_id = 'req-00004'").Scan(&key))
	b, err := conn.PrepareBatch(ctx, "INSERT INTO traffic_keys (traffic_key, key_id, team, decided_model, upstream, route)")
	require.NoError(t, err)
	require.NoError(t, b.Append(key, "k-other", "ads", "other/model", "primary", ""))
	require.NoError(t, b.Send())
	check(in, 2) // two combinations share req-00004's hash

	require.NoError(t, conn.Exec(ctx, "ALTER TABLE traffic_keys DELETE WHERE key_id = 'k-other'"))
	require.Eventually(t, func() bool {
		var n uint64
		return conn.QueryRow(ctx, "SELECT count() FROM traffic_keys WHERE key_id = 'k-other'").Scan(&n) == nil && n == 0
	}, 10*time.Second, 50*time.Millisecond)
	check(in, 2) // the fast path again

	odd := Row{TS: baseTS.Add(time.Second), RequestID: "odd-1", Team: "ads", KeyID: "key-1", DecidedModel: "gpt-4o", Upstream: "primary"}
	b, err = conn.PrepareBatch(ctx, "INSERT INTO requests (ts, ts_ms, request_id, team, key_id, decided_model, upstream, traffic_key)")
	require.NoError(t, err)
	require.NoError(t, b.Append(odd.TS, odd.TS.UnixMilli(), odd.RequestID, odd.Team, odd.KeyID, odd.DecidedModel, odd.Upstream, uint64(42)))
	require.NoError(t, b.Send())
	check(append(in, odd), 3) // a hash that names no combination (in the first window only)
}
