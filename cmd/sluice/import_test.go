package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/store/state"
)

func TestImport(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	dbPath := filepath.Join(dir, "data", state.File)

	// An invalid file is refused before anything is written: a target on
	// an unknown upstream, a route whose every target is restricted.
	toml := filepath.Join(dir, "sluice.toml")
	good, err := os.ReadFile(toml)
	require.NoError(t, err)
	for _, bad := range []struct{ old, new, code string }{
		{"model = \"anthropic/claude-sonnet-4.5\"\ntakes_over = [\"refusal\"]",
			"model = \"anthropic/claude-sonnet-4.5\"\ntakes_over = [\"refusal\"]\n[[routes.targets]]\nupstream = \"ghost\"", "unknown_upstream"},
		{"model = \"meta-llama/llama-3.1-70b-instruct\"\n[[routes.targets]]",
			"model = \"meta-llama/llama-3.1-70b-instruct\"\ntakes_over = [\"throttled\"]\n[[routes.targets]]", "all_targets_restricted"},
	} {
		edited := strings.Replace(string(good), bad.old, bad.new, 1)
		require.NotEqual(t, string(good), edited)
		require.NoError(t, os.WriteFile(toml, []byte(edited), 0o644))
		code, out, _ := runCLI(t, "", "import", "--config", dir)
		require.Equal(t, 1, code, bad.code)
		require.Contains(t, out, bad.code)
		_, err = os.Stat(dbPath)
		require.True(t, os.IsNotExist(err), "nothing written (%s)", bad.code)
	}

	require.NoError(t, os.WriteFile(toml, good, 0o644))
	code, out, errOut := runCLI(t, "", "import", "--config", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "imported 4 routes")
	st, err := state.OpenSQLite(dbPath)
	require.NoError(t, err)
	routes, err := st.Routes(context.Background())
	require.NoError(t, err)
	require.Len(t, routes, 4)
	entries, _, err := st.Audit(context.Background(), 10, "")
	require.NoError(t, err)
	require.Equal(t, "import", entries[0].Action)
	require.NoError(t, st.Close())

	// check is quiet while file and store agree, and warns once they differ.
	code, _, errOut = runCLI(t, "", "check", "--config", dir)
	require.Equal(t, 0, code)
	require.NotContains(t, errOut, "warning")
	edited := strings.Replace(string(good), "model = \"free-pool\"", "model = \"free-pool-2\"", 1)
	require.NoError(t, os.WriteFile(toml, []byte(edited), 0o644))
	code, _, errOut = runCLI(t, "", "check", "--config", dir)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "warning: the routes in")
}

// TestCheckAfterImportWithoutRoutes: a configuration with no routes,
// imported, agrees with its (empty) store: check warns of nothing.
func TestCheckAfterImportWithoutRoutes(t *testing.T) {
	dir := demoWith(t, func(toml string) string {
		i := strings.Index(toml, "[[routes]]")
		require.Positive(t, i)
		return toml[:i]
	})
	code, out, errOut := runCLI(t, "", "import", "--config", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "imported 0 routes")
	code, out, errOut = runCLI(t, "", "check", "--config", dir)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, out+errOut, "warning")
}
