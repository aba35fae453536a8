package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const checkCorpus = "../../testdata/check"

var updateCheck = flag.Bool("update-check", false, "rewrite the expected outputs of testdata/check")

// TestCheckCorpus runs `sluice check` on every directory of testdata/check:
// a case is a config directory, args (optional) its extra flags, and
// want.txt the exit code, stdout and stderr. Run with -update to rewrite
// want.txt, and review the diff.
func TestCheckCorpus(t *testing.T) {
	cases, err := os.ReadDir(checkCorpus)
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		dir := filepath.Join(checkCorpus, c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			args := []string{"check", "--config", dir}
			if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
				args = append(args, strings.Fields(string(b))...)
			}
			code, out, errOut := runCLI(t, "", args...)
			got := fmt.Sprintf("--- exit %d\n--- stdout\n%s--- stderr\n%s", code, out, strings.ReplaceAll(errOut, dir, "DIR"))
			wantFile := filepath.Join(dir, "want.txt")
			if *updateCheck {
				require.NoError(t, os.WriteFile(wantFile, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(wantFile)
			require.NoError(t, err, "missing %s (run go test ./cmd/sluice -run TestCheckCorpus -update-check)", wantFile)
			require.Equal(t, string(want), got)
		})
	}
}
