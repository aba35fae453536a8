package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
)

// TestCommandsWithRequestLogOff: with [store] kind = "off", rows says there
// is nothing to read (and fails), and migrate has nothing to do.
func TestCommandsWithRequestLogOff(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(b), `kind = "sqlite"`)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), `kind = "sqlite"`, `kind = "off"`, 1)), 0o644))

	code, out, errOut := runCLI(t, "", "rows", "--config", dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, `the request log is off ([store] kind = "off")`)

	code, out, _ = runCLI(t, "", "migrate", "--config", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "nothing to migrate")
	_, err = os.Stat(filepath.Join(dir, "data", "requests.db"))
	require.True(t, os.IsNotExist(err), "no database is created")
}
