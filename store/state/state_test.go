package state

import (
	"context"
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
