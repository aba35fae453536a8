package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

func TestReplaceRoutesAndAudit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), File)
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	seeded, err := s.Seeded(ctx)
	require.NoError(t, err)
	require.False(t, seeded)
	routes := []profiles.Route{
		{Model: "b", Targets: []profiles.Target{{ID: "t1", Upstream: "u", Model: "x/y", TakesOver: []string{}}}},
		{Model: "a", Targets: []profiles.Target{{ID: "t1", Upstream: "u", Model: "x/z", TakesOver: []string{"refusal"}}}},
	}
	after, _ := json.Marshal(routes)
	require.NoError(t, s.Replace(ctx, routes, AuditEntry{Actor: "import", Action: "import", After: after}))
	for i := 0; i < 3; i++ {
		require.NoError(t, s.Replace(ctx, routes[:1], AuditEntry{Actor: "token:abc", Action: "route.delete", RouteID: "a", Before: json.RawMessage(`{"model":"a"}`)}))
	}
	require.NoError(t, s.Close())

	s, err = OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	seeded, err = s.Seeded(ctx)
	require.NoError(t, err)
	require.True(t, seeded)
	got, err := s.Routes(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "b", got[0].Model, "order is kept")

	page, next, err := s.Audit(ctx, 2, "")
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, "route.delete", page[0].Action)
	require.JSONEq(t, "null", string(page[0].After))
	require.NotEmpty(t, next)
	page2, next2, err := s.Audit(ctx, 2, next)
	require.NoError(t, err)
	require.Len(t, page2, 2)
	require.Equal(t, "import", page2[1].Action)
	require.Equal(t, "", next2)
	require.Greater(t, page[0].ID, page2[0].ID)
	_, _, err = s.Audit(ctx, 2, "nonsense")
	require.ErrorIs(t, err, ErrBadCursor)
}

// TestAuditOriginMigrates: a state file made before the audit trail
// recorded where a change came from opens with its rows kept (read with
// no client and no request id); new entries, a change's and one appended
// alone, keep theirs.
func TestAuditOriginMigrates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), File)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, stmt := range []string{
		`CREATE TABLE routes (id TEXT PRIMARY KEY, position INTEGER NOT NULL, doc TEXT NOT NULL)`,
		`CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL, actor TEXT NOT NULL,
			action TEXT NOT NULL, route_id TEXT NOT NULL, before_doc TEXT, after_doc TEXT)`,
		`CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
		`INSERT INTO audit (ts_ms, actor, action, route_id) VALUES (1, 'token:abc', 'route.delete', 'a')`,
		`INSERT INTO meta (k, v) VALUES ('seeded', 'true')`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	for range 2 { // the migration runs once, then finds the columns
		s, err := OpenSQLite(path)
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Update(ctx, func(cur []profiles.Route) ([]profiles.Route, AuditEntry, error) {
		return cur, AuditEntry{Actor: "admin:0123456789ab", Client: "192.0.2.7", RequestID: "r-1", Action: "route.put", RouteID: "b"}, nil
	}))
	require.NoError(t, s.Append(ctx, AuditEntry{Actor: "sighup", Action: "config.reload", After: json.RawMessage(`{"outcome":"applied"}`)}))
	page, _, err := s.Audit(ctx, 10, "")
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.Equal(t, AuditEntry{Actor: "sighup", Action: "config.reload"}, AuditEntry{Actor: page[0].Actor, Action: page[0].Action, Client: page[0].Client, RequestID: page[0].RequestID})
	require.JSONEq(t, `{"outcome":"applied"}`, string(page[0].After))
	require.Equal(t, [3]string{"admin:0123456789ab", "192.0.2.7", "r-1"}, [3]string{page[1].Actor, page[1].Client, page[1].RequestID})
	require.Equal(t, [4]string{"token:abc", "", "", "route.delete"}, [4]string{page[2].Actor, page[2].Client, page[2].RequestID, page[2].Action})
	routes, err := s.Routes(ctx)
	require.NoError(t, err)
	require.Empty(t, routes, "the change appended alone touched no route")
}
