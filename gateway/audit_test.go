package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/admin"
	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/store/state"
)

// auditTrail reads the newest entries of the audit trail through the admin
// API, checked against its OpenAPI schema.
func (h *harness) auditTrail(limit string) []state.AuditEntry {
	h.t.Helper()
	status, b := h.admin("GET", "/api/v1/audit?limit="+limit, adminToken, "")
	require.Equal(h.t, 200, status, string(b))
	conforms(h.t, openAPISchemas(h.t)("AuditList"), b)
	var list admin.AuditList
	require.NoError(h.t, json.Unmarshal(b, &list))
	return list.Data
}

// TestAuditOrigin: a route change through the admin API is audited with
// who made it (the admin token's fingerprint, never a part of it), the
// address it came from and the request id its answer carried. The address
// is the connection's peer, or, behind a trusted proxy, the nearest hop of
// X-Forwarded-For that is not one; a hop the client wrote before it is not
// believed, nor the header of a peer that is not trusted.
func TestAuditOrigin(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		xff     string
		client  string
	}{
		{"no proxy: the peer", "", "", "127.0.0.1"},
		{"untrusted peer: its header ignored", "", "203.0.113.5", "127.0.0.1"},
		{"trusted proxy: the first untrusted hop", `["127.0.0.0/8", "::1", "10.0.0.0/8"]`, "198.51.100.9, 203.0.113.5, 10.1.2.3", "203.0.113.5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var edits [][2]string
			if tc.trusted != "" {
				edits = append(edits, [2]string{"[server]\n", "[server]\ntrusted_proxies = " + tc.trusted + "\n"})
			}
			h := newHarness(t, edits...)
			var headers []string
			if tc.xff != "" {
				headers = []string{"X-Forwarded-For", tc.xff}
			}
			resp, b := h.do("PUT", "/api/v1/routes/summaries", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`, headers...)
			require.Equal(t, 201, resp.StatusCode, string(b))
			id := resp.Header.Get(gateway.HeaderRequestID)
			require.Regexp(t, `^[0-9a-f]{32}$`, id, "an admin answer carries a request id")
			e := h.auditTrail("1")[0]
			require.Equal(t, "route.put", e.Action)
			require.Equal(t, "summaries", e.RouteID)
			require.Equal(t, access.Actor(adminToken), e.Actor)
			require.Regexp(t, `^admin:[0-9a-f]{12}$`, e.Actor)
			require.NotContains(t, adminToken, e.Actor[len("admin:"):], "no part of the secret")
			require.Equal(t, tc.client, e.Client)
			require.Equal(t, id, e.RequestID)
		})
	}
}

// failingAppend is a state store whose audit entries written alone fail.
type failingAppend struct{ state.Store }

// Append implements [state.Store.Append].
func (failingAppend) Append(context.Context, state.AuditEntry) error {
	return errors.New("the audit trail is full")
}

// TestReloadAudited: every reload, applied or refused, is audited with what
// triggered it and the files that changed; a store that cannot write the
// entry never holds the reload up (the failure is logged).
func TestReloadAudited(t *testing.T) {
	h := newHarness(t)
	toml := filepath.Join(h.dir, "sluice.toml")
	good, err := os.ReadFile(toml)
	require.NoError(t, err)
	reloads := []struct {
		name    string
		by      string
		content []byte
		outcome string
	}{
		{"applied", gateway.ReloadSIGHUP, append(append([]byte{}, good...), "\n# touched\n"...), "applied"},
		{"refused", gateway.ReloadFileWatch, []byte("[server\n"), "refused"},
		{"called", gateway.ReloadCall, good, "applied"},
	}
	for _, rl := range reloads {
		t.Run(rl.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(toml, rl.content, 0o644))
			diags := h.srv.ReloadBy(rl.by)
			require.Equal(t, rl.outcome == "refused", len(diags) > 0, "%v", diags)
			h.srv.WaitAudits()
			e := h.auditTrail("1")[0]
			require.Equal(t, "config.reload", e.Action)
			require.Equal(t, rl.by, e.Actor)
			require.Empty(t, e.Client)
			require.Empty(t, e.RequestID)
			var after struct {
				Outcome string
				Changed []string
				Errors  int
				First   string
			}
			require.NoError(t, json.Unmarshal(e.After, &after), string(e.After))
			require.Equal(t, rl.outcome, after.Outcome)
			require.Equal(t, []string{"sluice.toml"}, after.Changed)
			if rl.outcome == "refused" {
				require.Positive(t, after.Errors)
				require.Contains(t, after.First, "sluice.toml")
			}
		})
	}

	t.Run("entry not written", func(t *testing.T) {
		st, err := state.OpenSQLite(filepath.Join(t.TempDir(), state.File))
		require.NoError(t, err)
		f := newHarnessOpts(t, nil, nil, func(o *gateway.Options) { o.State = failingAppend{st} })
		require.Empty(t, f.srv.ReloadBy(gateway.ReloadSIGHUP), "the reload is applied")
		f.srv.WaitAudits()
		require.Contains(t, f.logs.String(), "a reload's audit entry could not be written")
		require.Contains(t, f.logs.String(), "the audit trail is full")
	})
}
