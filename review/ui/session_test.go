package ui

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSessionsExpireAndStayBounded(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newSessions(3, 10*time.Minute, time.Hour, clk.now)

	a := s.create(true, "")
	require.NotEqual(t, a.id, a.csrf)
	require.Len(t, a.id, 43, "32 random bytes")
	require.NotNil(t, s.get(a.id))

	// Idle expiry.
	clk.t = clk.t.Add(11 * time.Minute)
	require.Nil(t, s.get(a.id))
	require.Zero(t, s.len(), "an expired session is removed")

	// Use keeps a session alive, but not past its maximum age.
	b := s.create(false, "k-analyst")
	for range 6 {
		clk.t = clk.t.Add(9 * time.Minute)
		require.NotNil(t, s.get(b.id))
	}
	clk.t = clk.t.Add(9 * time.Minute) // 63 minutes after login
	require.Nil(t, s.get(b.id))

	// The bound evicts the least recently used session.
	x, y, z := s.create(true, ""), s.create(true, ""), s.create(true, "")
	clk.t = clk.t.Add(time.Minute)
	require.NotNil(t, s.get(x.id))
	w := s.create(true, "")
	require.Equal(t, 3, s.len())
	require.Nil(t, s.get(y.id), "least recently used evicted")
	for _, id := range []string{x.id, z.id, w.id} {
		require.NotNil(t, s.get(id))
	}
	s.delete(x.id)
	require.Nil(t, s.get(x.id))
	require.Nil(t, s.get(""))
}

// TestLoginsDoNotEvictOthers: 1,000 logins of one analyst key keep at most
// maxPerPrincipal sessions of its own and evict nobody else's, the admin's
// included (issue 38: 1,000 analyst logins in 0.3 s evicted every
// session).
func TestLoginsDoNotEvictOthers(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newSessions(100, 10*time.Minute, time.Hour, clk.now)
	admin := s.create(true, "")
	other := s.create(false, "k-other")
	var last *session
	for range 1000 {
		clk.t = clk.t.Add(time.Millisecond)
		last = s.create(false, "k-analyst")
	}
	require.NotNil(t, s.get(admin.id), "the admin's session survives")
	require.NotNil(t, s.get(other.id), "another analyst's session survives")
	require.NotNil(t, s.get(last.id))
	require.Equal(t, 2+maxPerPrincipal, s.len())
}

func TestParseFilter(t *testing.T) {
	f, ff, bad := parseFilter(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}, "team": {"ml"}, "degraded": {"true"}, "limit": {"5"}, "cursor": {"c"}})
	require.Empty(t, bad)
	require.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), f.From)
	require.Equal(t, time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), f.To, "a date 'to' includes that day")
	require.True(t, f.Degraded)
	require.Equal(t, 5, f.Limit)
	require.Equal(t, "c", f.Cursor)
	require.Equal(t, "degraded=true&from=2026-11-01&limit=5&team=ml&to=2026-11-02", ff.query().Encode(), "no cursor in links")

	f, _, bad = parseFilter(url.Values{"to": {"2026-11-02T10:00:00Z"}})
	require.Empty(t, bad)
	require.Equal(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), f.To)
	for _, q := range []url.Values{{"from": {"yesterday"}}, {"to": {"0001-01-01T00:00:00Z"}}, {"from": {"1969-12-31"}}, {"refused": {"maybe"}}, {"limit": {"0"}}, {"limit": {"1001"}}} {
		_, _, bad = parseFilter(q)
		require.NotEmpty(t, bad, q)
	}
}
