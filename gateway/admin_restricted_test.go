package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdminNeverLeavesOnlyRestricted: no edit through the routes API leaves
// a route whose every target is restricted. Replacing the list and deleting
// the last ordinary target are refused with all_targets_restricted. Adding a
// target cannot do it, and the steps below show why: a target is added only
// to a stored route (an unknown one is 404 and nothing is created), a stored
// route always has an ordinary target (no list without one is accepted, nor
// an empty one), and adding keeps every target already there.
func TestAdminNeverLeavesOnlyRestricted(t *testing.T) {
	h := newHarness(t)
	req := func(method, path, body string) (int, string) {
		status, b := h.admin(method, path, adminToken, body)
		return status, string(b)
	}
	code := func(body string) string {
		var e apiError
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		return e.Error.Code
	}
	restricted := `{"upstream":"anthropic","model":"anthropic/claude-haiku-4.5","takes_over":["refusal"]}`

	// Replacing the list.
	for _, tc := range []struct{ targets, code string }{
		{`[` + restricted + `]`, "all_targets_restricted"},
		{`[]`, "validation_failed"}, // the schema wants a target
	} {
		status, b := req("PUT", "/api/v1/routes/solo", `{"targets":`+tc.targets+`}`)
		require.Equal(t, 422, status, b)
		require.Equal(t, tc.code, code(b), b)
	}
	// Adding: only to a stored route; an unknown one is not created.
	status, b := req("POST", "/api/v1/routes/solo/targets", restricted)
	require.Equal(t, 404, status, b)
	status, _ = req("GET", "/api/v1/routes/solo", "")
	require.Equal(t, 404, status, "adding a target creates no route")

	status, b = req("PUT", "/api/v1/routes/solo", `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"},{"upstream":"market","model":"openai/gpt-4o"}]}`)
	require.Equal(t, 201, status, b)
	status, b = req("POST", "/api/v1/routes/solo/targets", restricted)
	require.Equal(t, 201, status, b)
	var rt struct {
		Targets []struct {
			ID        string   `json:"id"`
			TakesOver []string `json:"takes_over"`
		} `json:"targets"`
	}
	require.NoError(t, json.Unmarshal([]byte(b), &rt))
	require.Len(t, rt.Targets, 3, "adding keeps the ordinary targets")
	require.Empty(t, rt.Targets[0].TakesOver)
	require.Equal(t, "t3", rt.Targets[2].ID)

	// Deleting: one ordinary target of two goes; the last one does not.
	status, b = req("DELETE", "/api/v1/routes/solo/targets/t1", "")
	require.Equal(t, 200, status, b)
	status, b = req("DELETE", "/api/v1/routes/solo/targets/t2", "")
	require.Equal(t, 422, status, b)
	require.Equal(t, "all_targets_restricted", code(b))
	status, b = req("GET", "/api/v1/routes/solo", "")
	require.Equal(t, 200, status)
	require.Contains(t, b, `"id":"t2"`, "a refused delete changes nothing")
}
