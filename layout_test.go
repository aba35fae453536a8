package sluice_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/sluicegw/sluice"

// stages lists the top-level packages in pipeline order: a package may
// import only packages of earlier stages, and its own stage's packages
// (a stage's subpackages). schemas and the module root (the embedded data
// files) come before every stage; deploy (the image, compose file and
// chart, with tests that load their configurations) after every one.
var stages = []string{"", "schemas", "profiles", "store", "guardrails", "compiler", "connectors", "snapshot", "gateway", "review", "cmd", "bench", "deploy"}

// stageOf returns the stage index of an import path inside the module, or
// -1 for a path outside it.
func stageOf(path string) int {
	if path == module {
		return 0
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return -1
	}
	top, _, _ := strings.Cut(rest, "/")
	for i, s := range stages {
		if s == top {
			return i
		}
	}
	return len(stages) // an unknown top-level directory ranks after everything
}

// backwardImports returns "pkg imports dep" for every import of a later stage.
func backwardImports(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		own := stageOf(pkg)
		for _, dep := range deps {
			if s := stageOf(dep); s >= 0 && s > own {
				bad = append(bad, pkg+" imports "+dep)
			}
		}
	}
	return bad
}

// TestStagesImportForwardOnly: no package imports a later stage of the
// pipeline (profiles → guardrails → compiler → connectors → snapshot →
// gateway, then the review tools and the binary). Test files may use later
// stages as harnesses; the packages themselves may not.
func TestStagesImportForwardOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	require.NoError(t, err, string(out))
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		require.Less(t, stageOf(f[0]), len(stages), "%s is in a top-level directory that is no stage: add it to stages", f[0])
	}
	require.Contains(t, imports, module+"/gateway")
	require.Empty(t, backwardImports(imports))
}

// TestBackwardImportsFound: the rule itself sees a backward import and
// allows forward and same-stage ones.
func TestBackwardImportsFound(t *testing.T) {
	got := backwardImports(map[string][]string{
		module + "/compiler":          {module + "/profiles", module + "/gateway/apierr", "fmt"},
		module + "/review/ui":         {module + "/store/requestlog", module + "/snapshot"},
		module + "/snapshot":          {module + "/compiler/failover"},
		module + "/connectors":        {module + "/review/diff"},
		module + "/gateway/simulator": {module},
	})
	require.ElementsMatch(t, []string{
		module + "/compiler imports " + module + "/gateway/apierr",
		module + "/connectors imports " + module + "/review/diff",
	}, got)
}

// TestREADMEListsEveryPackage: the README's package list (the code block
// under "## Development", a line a package, nesting by indentation) names
// every package of the module (bench's tools under its one line).
func TestREADMEListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, dev, ok := strings.Cut(string(readme), "\n## Development\n")
	require.True(t, ok, "README has a Development section")
	_, block, ok := strings.Cut(dev, "```\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	listed := map[string]bool{}
	var stack []string
	for _, line := range strings.Split(block, "\n") {
		name, _, _ := strings.Cut(strings.TrimLeft(line, " "), " ")
		if !strings.HasSuffix(name, "/") {
			continue
		}
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		stack = append(stack[:min(depth, len(stack))], strings.TrimSuffix(name, "/"))
		listed[strings.Join(stack, "/")] = true
	}
	out, err := exec.Command("go", "list", module+"/...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue // the module root: the embedded data files
		}
		parts := strings.Split(rel, "/")
		if parts[0] == "bench" {
			parts = parts[:1] // one line for the benchmark tools
		}
		key := strings.Join(parts, "/")
		require.True(t, listed[key], "README's package list has no line for %s", key)
	}
}
