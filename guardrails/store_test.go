package guardrails

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

// copyDemo copies the demo configuration into a temporary directory.
func copyDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(demoDir)))
	return dir
}

func quietStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, ds := NewStore(dir)
	require.Empty(t, ds)
	s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return s
}

func TestReloadKeepsLastGood(t *testing.T) {
	dir := copyDemo(t)
	s := quietStore(t, dir)
	ctx := context.Background()
	ml := profiles.Principal{Org: "acme", Team: "ml"}
	first := s.Current()

	// A broken policy: the old one stays in force, the error is recorded.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "guardrails", "bad.rego"), []byte("package sluice.guardrails\nallow_models contains \n"), 0o644))
	ds := s.Reload()
	require.NotEmpty(t, ds)
	require.Equal(t, "guardrails/bad.rego", ds[0].File)
	require.Same(t, first, s.Current())
	require.Error(t, s.LastError())
	d, err := s.Decide(ctx, ml)
	require.NoError(t, err)
	require.False(t, d.ModelAllowed("google/gemini-2.5-pro"))

	// A broken catalog at the same time: both reported, still the old snapshot.
	require.NoError(t, os.WriteFile(filepath.Join(dir, CatalogFile), []byte(`{"models": []}`), 0o644))
	ds = s.Reload()
	require.Equal(t, CodeEmptyCatalog, ds[0].Code)
	require.Equal(t, "guardrails/bad.rego", ds[len(ds)-1].File)
	require.Same(t, first, s.Current())

	// Fixing the policy swaps it in while the broken catalog keeps the old one.
	require.NoError(t, os.Remove(filepath.Join(dir, "guardrails", "bad.rego")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "guardrails", "teams.rego"), []byte("package sluice.guardrails\n"), 0o644))
	ds = s.Reload()
	require.Len(t, ds, 1)
	require.Equal(t, CodeEmptyCatalog, ds[0].Code)
	require.NotSame(t, first, s.Current())
	require.Same(t, first.Catalog, s.Current().Catalog)
	d, err = s.Decide(ctx, ml)
	require.NoError(t, err)
	require.True(t, d.ModelAllowed("google/gemini-2.5-pro"), "new policy in force")
	require.False(t, d.ModelAllowed("x-ai/grok-4"), "org.rego still applies")

	// Everything fixed: no error.
	b, err := os.ReadFile(filepath.Join(demoDir, CatalogFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CatalogFile), b, 0o644))
	require.Empty(t, s.Reload())
	require.NoError(t, s.LastError())
	okN, failN := s.ReloadCounts()
	require.Equal(t, uint64(2), okN)
	require.Equal(t, uint64(3), failN)
	require.False(t, s.LastReload().IsZero())
}

func TestReloadConcurrent(t *testing.T) {
	s := quietStore(t, copyDemo(t))
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); s.Reload() }()
		go func() {
			defer wg.Done()
			d, err := s.Decide(ctx, profiles.Principal{Org: "acme", Team: "finance"})
			require.NoError(t, err)
			require.NotNil(t, d.AllowedProviders())
		}()
	}
	wg.Wait()
}

func TestNewStoreRefusesBrokenConfig(t *testing.T) {
	dir := copyDemo(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CatalogFile), []byte(`{"models": [}`), 0o644))
	s, ds := NewStore(dir)
	require.Nil(t, s)
	require.Equal(t, profiles.CodeJSONSyntax, ds[0].Code)
}

func TestWatchReloadsOnRename(t *testing.T) {
	dir := copyDemo(t)
	s := quietStore(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	time.Sleep(100 * time.Millisecond) // let the watcher start
	before := s.Current().Policy.Revision()

	// Save the way many editors do: write a temporary file, rename it over.
	tmp := filepath.Join(dir, "guardrails", ".teams.rego.swp")
	require.NoError(t, os.WriteFile(tmp, []byte("package sluice.guardrails\n\nallow_models contains \"openai/*\"\n"), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "guardrails", "teams.rego")))
	require.Eventually(t, func() bool { return s.Current().Policy.Revision() != before }, 5*time.Second, 20*time.Millisecond)

	d, err := s.Decide(context.Background(), profiles.Principal{Team: "anyone"})
	require.NoError(t, err)
	require.Equal(t, []string{"openai/gpt-4o", "openai/gpt-4o-mini"}, d.AllowedModels())
}
