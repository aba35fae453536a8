package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
)

// TestDecisionCheckSeesNewPrincipals: a guardrail wrong only for a team no
// key names loads; the same guardrails with a key of that team added are
// refused, located at the rule, though the policy revision is one that
// passed before (the check remembers only principals, never a verdict on
// the policy as a whole).
func TestDecisionCheckSeesNewPrincipals(t *testing.T) {
	dir := demoWith(t, "sluice.toml")
	bad := []byte("package sluice.guardrails\n\ncontent_filter := 42 if input.principal.team == \"support\"\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "guardrails", "support.rego"), bad, 0o644))
	_, diags := Load(dir)
	require.Empty(t, diags, "no key of the support team: nothing to refuse")

	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b = append(b, "\n[[keys]]\nid = \"k-support\"\nsha256 = \""+
		"1111111111111111111111111111111111111111111111111111111111111111\"\norg = \"acme\"\nteam = \"support\"\nproject = \"desk\"\n"...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	snap, diags := Load(dir)
	require.Nil(t, snap)
	require.Len(t, diags, 1, "%v", diags)
	require.Equal(t, guardrails.CodeBadOutput, diags[0].Code)
	require.Equal(t, "guardrails/support.rego:3:1", diags[0].Location())
	require.Contains(t, diags[0].Message, "content_filter must be a string, got number (principal acme/support// and 2 more)")
}
