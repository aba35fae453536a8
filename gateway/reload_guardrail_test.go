package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
)

// TestReloadRefusesAnUndecidableGuardrail: a guardrail whose rule value has
// the wrong type for a principal the configuration names (quantizations
// := 42, content_filter := 42) is refused when the reload loads it, located
// at the rule: the last good configuration keeps serving, and /readyz and
// sluice_config_last_reload_ok say the reload failed. Before the load-time
// check such a file reloaded "ok" and every request answered 500.
func TestReloadRefusesAnUndecidableGuardrail(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ rule, output string }{
		{"quantizations := 42\n", "quantizations"},
		{"content_filter := 42\n", "content_filter"},
	} {
		good := h.srv.Snapshot().Revision
		p := filepath.Join(h.dir, "guardrails", "bad.rego")
		require.NoError(t, os.WriteFile(p, []byte("package sluice.guardrails\n\n"+tc.rule), 0o644))
		diags := h.srv.Reload()
		// (content_filter := 42 also conflicts with the demo's own filter
		// for research: a second diagnostic.)
		require.NotEmpty(t, diags)
		require.Equal(t, guardrails.CodeBadOutput, diags[0].Code, "%v", diags)
		require.Equal(t, "guardrails/bad.rego:3:1", diags[0].Location())
		require.True(t, strings.HasPrefix(diags[0].Message, "rule "+tc.output+": "), diags[0].Message)
		require.Contains(t, diags[0].Message, "got number")

		require.Equal(t, good, h.srv.Snapshot().Revision, "the last good configuration keeps serving")
		_, rb := h.get("/readyz", "")
		require.Contains(t, string(rb), `"last_reload_failed":true`)
		require.Contains(t, string(rb), "guardrail_bad_output")
		require.Equal(t, 0.0, metric(t, h, "sluice_config_last_reload_ok"))
		resp, b := h.post(secretChat, chatBody("openai/gpt-4o", ""))
		require.Equal(t, 200, resp.StatusCode, "%s", b)

		require.NoError(t, os.Remove(p))
		require.Empty(t, h.srv.Reload())
		require.Equal(t, 1.0, metric(t, h, "sluice_config_last_reload_ok"))
	}
}
