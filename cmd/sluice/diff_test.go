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

var updateDiff = flag.Bool("update-diff", false, "rewrite the expected outputs of testdata/diff")

const diffDir = "../../testdata/diff"

// TestDiff runs the testdata/diff corpus: each case is a base and a head
// configuration directory with the expected text output in want.txt (stdout,
// then stderr and the exit code) and, optionally, want.md and want.json.
// A few usage errors follow the corpus.
func TestDiff(t *testing.T) {
	cases, err := os.ReadDir(diffDir)
	require.NoError(t, err)
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(diffDir, c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			args := []string{"diff", "--base", filepath.Join(dir, "base"), "--head", filepath.Join(dir, "head")}
			code, out, errOut := runCLI(t, "", args...)
			got := out
			if errOut != "" {
				got += "--- stderr\n" + errOut
			}
			got += fmt.Sprintf("--- exit %d\n", code)
			golden(t, filepath.Join(dir, "want.txt"), got, true)
			for _, f := range []struct{ format, file string }{{"markdown", "want.md"}, {"json", "want.json"}} {
				path := filepath.Join(dir, f.file)
				if _, err := os.Stat(path); err != nil {
					continue // optional: create the file empty and run with -update-diff
				}
				fcode, fout, ferr := runCLI(t, "", append(args, "--format", f.format)...)
				require.Equal(t, code, fcode, ferr)
				golden(t, path, fout, false)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"needs base and head", []string{"diff", "--head", diffDir}, 2, "--base and --head are required"},
		{"unknown format", []string{"diff", "--base", "x", "--head", "y", "--format", "yaml"}, 2, "unknown --format"},
		{"unknown key", []string{"diff", "--base", diffDir + "/no-change/base", "--head", diffDir + "/no-change/head", "--keys", "k-plain,k-nope"}, 2, "no key k-nope"},
		{"selected key and model", []string{"diff", "--base", diffDir + "/rank-by-change/base", "--head", diffDir + "/rank-by-change/head", "--keys", "k-plain", "--models", "openai/gpt-4o"}, 0, "compared 1 keys × 1 models"},
		{"missing dir", []string{"diff", "--base", "/nonexistent", "--head", diffDir + "/no-change/head"}, 2, "base: sluice.toml: read_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out+errOut, tc.want)
		})
	}
}

// golden compares got with the file, or rewrites it under -update-diff.
func golden(t *testing.T, path, got string, create bool) {
	t.Helper()
	if *updateDiff {
		if _, err := os.Stat(path); err == nil || create {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, strings.TrimRight(string(want), "\n"), strings.TrimRight(got, "\n"))
}
