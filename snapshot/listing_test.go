package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/snapshot"
)

func documentedImport(t *testing.T) *listing.Import {
	t.Helper()
	dir := "../testdata/listings/documented"
	imp, err := (&listing.OpenRouter{ModelsFile: filepath.Join(dir, "models.json"), EndpointsDir: filepath.Join(dir, "endpoints")}).Import(context.Background())
	require.NoError(t, err)
	return imp
}

// TestLoadWithListing: a listing merged over catalog.json is the catalog a
// snapshot serves — the hand-written models stay, the listed ones come in —
// and its revision is the merge's; without catalog.json the listing alone
// is the catalog.
func TestLoadWithListing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	plain, diags := snapshot.Load(dir)
	require.Empty(t, diags)
	imp := documentedImport(t)
	merged, diags := snapshot.LoadWith(dir, snapshot.Options{Listing: imp})
	require.Empty(t, diags)
	require.Equal(t, plain.Catalog.Len()+1, merged.Catalog.Len(), "the :free variant is added")
	_, ok := merged.Catalog.Model("meta-llama/llama-3.1-70b-instruct:free")
	require.True(t, ok)
	x, ok := merged.Catalog.Model("x-ai/grok-4")
	require.True(t, ok, "a hand-written model outside the listing stays")
	require.NotEmpty(t, x.Endpoints)
	require.NotEqual(t, plain.Catalog.Revision(), merged.Catalog.Revision())
	require.NotEqual(t, plain.Revision, merged.Revision)

	require.NoError(t, os.Remove(filepath.Join(dir, "catalog.json")))
	alone, diags := snapshot.LoadWith(dir, snapshot.Options{Listing: imp})
	require.Empty(t, diags, "guardrails expand against the listing's catalog")
	require.Equal(t, 3, alone.Catalog.Len())
}

// TestLoadWithListingNamesTheMerge: a merge the catalog refuses is
// reported against catalog.json+openrouter, and nothing loads.
func TestLoadWithListingNamesTheMerge(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	imp := documentedImport(t)
	for _, m := range imp.Models {
		if m.Slug == "meta-llama/llama-3.1-70b-instruct:free" {
			// A saved import that was edited by hand: the new model's
			// upstream id is another model's slug.
			m.UpstreamIDs = map[string]string{"vercel": "openai/gpt-4o"}
		}
	}
	snap, diags := snapshot.LoadWith(dir, snapshot.Options{Listing: imp})
	require.Nil(t, snap)
	require.NotEmpty(t, diags)
	require.Equal(t, "catalog.json+openrouter", diags[0].File)
	require.Equal(t, "duplicate_alias", diags[0].Code)
}
