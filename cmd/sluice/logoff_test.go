package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommandsWithRequestLogOff: with [store] kind = "off", rows says there
// is nothing to read (and fails), and migrate has nothing to do.
func TestCommandsWithRequestLogOff(t *testing.T) {
	dir := demoWith(t, func(toml string) string {
		require.Contains(t, toml, `kind = "sqlite"`)
		return strings.Replace(toml, `kind = "sqlite"`, `kind = "off"`, 1)
	})

	code, out, errOut := runCLI(t, "", "rows", "--config", dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, `the request log is off ([store] kind = "off")`)

	code, out, _ = runCLI(t, "", "migrate", "--config", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "nothing to migrate")
	_, err := os.Stat(filepath.Join(dir, "data", "requests.db"))
	require.True(t, os.IsNotExist(err), "no database is created")
}
