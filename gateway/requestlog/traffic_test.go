package requestlog

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
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

// TestSQLiteTrafficReadsOnlyItsIndex: the grouped query is answered from
// the covering index in its order, never from the table, never sorted.
func TestSQLiteTrafficReadsOnlyItsIndex(t *testing.T) {
	s := openSQLiteForTest(t).(*sqliteStore)
	for _, f := range []TrafficFilter{{}, {From: baseTS, To: baseTS.Add(1e12)}, {From: baseTS, Teams: []string{"a", "b"}}} {
		q, args := sqliteTrafficSQL(f)
		rs, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
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
		require.Contains(t, strings.Join(plan, "\n"), "USING COVERING INDEX requests_traffic", "filter %+v", f)
		require.NotContains(t, strings.Join(plan, "\n"), "TEMP B-TREE", "groups stream out of the index, unsorted: filter %+v", f)
	}
}

// TestClickHouseTrafficSurvivesHashCollisions forces every row into one
// hash group: the collision check sees it and the exact query answers.
func TestClickHouseTrafficSurvivesHashCollisions(t *testing.T) {
	s := openClickHouseForTest(t)
	in := sampleRows(90)
	require.NoError(t, s.Insert(testCtx(t), in))
	defer func(h string) { chTrafficHash = h }(chTrafficHash)
	chTrafficHash = "toUInt64(length(route))" // two groups for many combinations
	for _, f := range []TrafficFilter{{}, {Teams: []string{"ads", "infra"}, From: baseTS.Add(10 * time.Second)}} {
		got, err := s.Traffic(testCtx(t), f)
		require.NoError(t, err)
		require.Equal(t, CountTraffic(in, f), got)
		require.Greater(t, len(got), 2)
	}
}
