package guardrails

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

const demoDir = "../testdata/demo"

func TestDemoRegoUnitTestsPass(t *testing.T) {
	var out bytes.Buffer
	passed, err := RunTests(context.Background(), demoDir, nil, true, &out)
	require.NoError(t, err)
	require.True(t, passed, out.String())
	require.Contains(t, out.String(), "PASS")
	require.NotContains(t, out.String(), "FAIL")
}

func TestRunTestsReportsFailure(t *testing.T) {
	dir := t.TempDir()
	gdir := filepath.Join(dir, GuardrailsDir)
	require.NoError(t, os.MkdirAll(gdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gdir, "p.rego"), []byte("package sluice.guardrails\n\ndeny_models contains \"x/*\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(gdir, "p_test.rego"), []byte(
		"package sluice.guardrails_test\n\nimport data.sluice.guardrails\n\n"+
			"test_ok if \"x/*\" in guardrails.deny_models\n\n"+
			"test_wrong if \"y/*\" in guardrails.deny_models\n"), 0o644))
	var out bytes.Buffer
	passed, err := RunTests(context.Background(), dir, nil, false, &out)
	require.NoError(t, err)
	require.False(t, passed)
	require.Contains(t, out.String(), "FAIL")
	require.Contains(t, out.String(), "p_test.rego:7")

	// Selecting only the passing test passes.
	out.Reset()
	passed, err = RunTests(context.Background(), dir, regexp.MustCompile("test_ok"), true, &out)
	require.NoError(t, err)
	require.True(t, passed, out.String())

	// A filter that selects nothing fails, and says so.
	out.Reset()
	passed, err = RunTests(context.Background(), dir, regexp.MustCompile("test_missing"), false, &out)
	require.EqualError(t, err, `guardrails: no test name matches "test_missing"`)
	require.False(t, passed)

	// So does a directory without tests.
	require.NoError(t, os.Remove(filepath.Join(gdir, "p_test.rego")))
	passed, err = RunTests(context.Background(), dir, nil, false, &out)
	require.ErrorContains(t, err, "guardrails: no tests in ")
	require.False(t, passed)
}

func TestDemoDecisions(t *testing.T) {
	cat, ds := LoadCatalog(demoDir)
	require.Empty(t, ds)
	pol, ds := LoadPolicy(demoDir)
	require.Empty(t, ds)
	s := NewIssuer(pol, cat)
	ctx := context.Background()
	require.Equal(t, 20, cat.Len())

	ml, err := s.Decide(ctx, profiles.Principal{Org: "acme", Team: "ml", Project: "p", Key: "k"})
	require.NoError(t, err)
	require.True(t, ml.ModelAllowed("OpenAI/GPT-4o"))
	require.False(t, ml.ModelAllowed("google/gemini-2.5-pro"))
	require.False(t, ml.ModelAllowed("x-ai/grok-4"))
	require.Equal(t, []string{"deepinfra/fp4"}, ml.DeniedProviders())
	require.Nil(t, ml.AllowedProviders())

	fin, err := s.Decide(ctx, profiles.Principal{Org: "acme", Team: "finance"})
	require.NoError(t, err)
	require.Equal(t, []string{"amazon-bedrock", "anthropic", "azure", "openai"}, fin.AllowedProviders())
	require.True(t, fin.ModelAllowed("google/gemini-2.5-pro"))
	require.False(t, fin.ModelAllowed("x-ai/grok-4"))

	res, err := s.Decide(ctx, profiles.Principal{Org: "acme", Team: "research"})
	require.NoError(t, err)
	require.Equal(t, "pii-redact", res.ContentFilter())
}
