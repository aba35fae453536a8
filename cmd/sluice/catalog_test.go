package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/simulator"
)

const listings = "../../testdata/listings"

// readCatalog decodes a catalog file's models by slug.
func readCatalog(t *testing.T, path string) map[string]*guardrails.Model {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var d guardrails.Document
	require.NoError(t, json.Unmarshal(raw, &d))
	out := map[string]*guardrails.Model{}
	for _, m := range d.Models {
		out[m.Slug] = m
	}
	return out
}

// TestCatalogImportOffline: a saved listing merges into the demo's
// hand-written catalog, which keeps what was written by hand and still
// passes sluice check; the summary says what changed.
func TestCatalogImportOffline(t *testing.T) {
	dir := demoWith(t, func(s string) string { return s })
	before := readCatalog(t, filepath.Join(dir, "catalog.json"))
	code, out, errb := runCLI(t, "", "catalog", "import", "--config", dir, "--from", "openrouter",
		"--models", filepath.Join(listings, "documented/models.json"), "--endpoints", filepath.Join(listings, "documented/endpoints"),
		"--only", "meta-llama/**,anthropic/claude-haiku-4.5")
	require.Equal(t, 0, code, out+errb)
	require.Contains(t, out, "openrouter: 5 models listed, 3 imported")
	require.Contains(t, out, "+ model meta-llama/llama-3.1-70b-instruct:free")
	require.Contains(t, out, "wrote "+filepath.Join(dir, "catalog.json"))
	after := readCatalog(t, filepath.Join(dir, "catalog.json"))
	require.Len(t, after, len(before)+1, "one model added, none removed (the others are outside --only)")
	haiku := after["anthropic/claude-haiku-4.5"]
	require.Equal(t, before["anthropic/claude-haiku-4.5"].Native, haiku.Native, "native ids survive")
	require.Contains(t, haiku.Aliases, "anthropic/claude-4.5-haiku-20251001")
	for _, e := range haiku.Endpoints {
		if e.Provider == "anthropic" {
			require.Equal(t, guardrails.SourceOpenRouter, e.Source)
			require.NotNil(t, e.PriceCacheRead)
			require.Equal(t, 0.1, *e.PriceCacheRead)
		}
	}
	require.Equal(t, before["openai/gpt-4o"], after["openai/gpt-4o"], "a model outside --only is untouched")

	code, out, _ = runCLI(t, "", "check", "--config", dir)
	require.Equal(t, 0, code, out)

	// The same import again changes nothing.
	code, out, _ = runCLI(t, "", "catalog", "import", "--config", dir, "--from", "openrouter",
		"--models", filepath.Join(listings, "documented/models.json"), "--endpoints", filepath.Join(listings, "documented/endpoints"),
		"--only", "meta-llama/**,anthropic/claude-haiku-4.5")
	require.Equal(t, 0, code)
	require.Contains(t, out, "models: 0 added, 0 removed; endpoints: 0 added, 0 removed; 0 price changes")
	require.Contains(t, out, "is up to date")
}

// TestCatalogImportRefusesABadListing: a listing that fails validation
// changes nothing, exits 1 and says where, by JSON pointer.
func TestCatalogImportRefusesABadListing(t *testing.T) {
	dir := demoWith(t, func(s string) string { return s })
	before, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	require.NoError(t, err)
	bad := filepath.Join(listings, "cases/bad-price/models.json")
	code, out, errb := runCLI(t, "", "catalog", "import", "--config", dir, "--from", "openrouter", "--models", bad)
	require.Equal(t, 1, code)
	require.Contains(t, out, bad+`#/data/0/pricing/completion: listing_shape: "$10 per million" is not a decimal number of USD per token`)
	require.Contains(t, errb, "the listing was refused")
	after, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

// TestCatalogImportLive: a new user's first import, over real HTTP from
// the simulator's listings (with the key of the OpenRouter upstream), into
// a directory with no catalog, gives one that sluice check accepts; the
// Vercel listing then fills the Vercel provider's prices where OpenRouter
// has none. Progress goes to stderr.
func TestCatalogImportLive(t *testing.T) {
	sim := simulator.New(simulator.DefaultConfig())
	_, err := sim.Start()
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(`
[[upstreams]]
name = "market"
connector = "openrouter"
api_key_env = "SLUICE_TEST_OPENROUTER_KEY"
`), 0o644))
	t.Setenv("SLUICE_TEST_OPENROUTER_KEY", "sk-or-test")
	code, out, errb := runCLI(t, "", "catalog", "import", "--config", dir, "--from", "openrouter", "--base-url", sim.URL(simulator.KindOpenRouter))
	require.Equal(t, 0, code, out+errb)
	require.Contains(t, errb, "endpoint listings: 9/9")
	require.NotContains(t, errb, "without an API key")
	require.Contains(t, out, "models: 9 added")
	code, out, _ = runCLI(t, "", "check", "--config", dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "9 catalog models")
	cat := readCatalog(t, filepath.Join(dir, "catalog.json"))
	require.Equal(t, 450, cat["openai/gpt-4o"].Endpoints[0].LatencyMS)

	code, out, errb = runCLI(t, "", "catalog", "import", "--config", dir, "--from", "vercel", "--base-url", sim.URL(simulator.KindVercel))
	require.Equal(t, 0, code, out+errb)
	require.Contains(t, out, "vercel: 9 models listed, 9 imported")
	require.Contains(t, errb, "no vercel upstream")
	cat = readCatalog(t, filepath.Join(dir, "catalog.json"))
	var providers []string
	for _, e := range cat["google/gemini-2.5-flash"].Endpoints {
		providers = append(providers, e.Provider+":"+e.Source)
	}
	require.Equal(t, []string{"google-vertex:openrouter", "google-ai-studio:vercel"}, providers)
}

// TestCatalogImportNamesTheURL: a marketplace that cannot be reached fails
// the import with the URL, and writes nothing.
func TestCatalogImportNamesTheURL(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL + "/api/v1"
	srv.Close()
	dir := t.TempDir()
	code, out, errb := runCLI(t, "", "catalog", "import", "--config", dir, "--from", "openrouter", "--base-url", url, "--attempts", "1")
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(out, url+"/models: listing_fetch: "), out)
	require.Contains(t, errb, "was not changed")
	_, err := os.Stat(filepath.Join(dir, "catalog.json"))
	require.True(t, os.IsNotExist(err))
}
