package sluice_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/sluicegw/sluice"

// stages lists the top-level rooms in order: a package may import only
// packages of earlier rooms and of its own room (its subpackages). schemas
// and the module root (the embedded data files) come before every stage;
// the stores right after profiles, the only stage they may read; the
// review tools and the simulator after the gateway, which imports neither;
// the binary that wires them all, the benchmarks and deploy (the image,
// compose file and chart, with tests that load their configurations) last.
var stages = []string{"", "schemas", "profiles", "store", "guardrails", "compiler", "connectors", "snapshot", "gateway", "review", "simulator", "cmd", "bench", "deploy"}

// barred lists, for a room, earlier rooms it still may not import. The
// review tools read the stores and compile through snapshot, never the
// gateway. The simulator is the upstreams' test double: it reads the model
// catalog it serves (guardrails) and the recorded error answers (the
// module root), and no other stage, least of all the code whose wire
// formats it checks.
var barred = map[string][]string{
	"review":    {"gateway"},
	"simulator": {"schemas", "profiles", "store", "compiler", "connectors", "snapshot", "gateway", "review"},
}

// roomOf returns the top-level room of an import path inside the module
// ("" for the module root), and false for a path outside it.
func roomOf(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(rest, "/")
	return top, true
}

// stageOf returns the stage index of an import path inside the module, or
// -1 for a path outside it.
func stageOf(path string) int {
	top, ok := roomOf(path)
	if !ok {
		return -1
	}
	if i := slices.Index(stages, top); i >= 0 {
		return i
	}
	return len(stages) // an unknown top-level directory ranks after everything
}

// backwardImports returns "pkg imports dep" for every import of a later
// stage, and of an earlier one the package's room is barred from.
func backwardImports(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		own := stageOf(pkg)
		room, _ := roomOf(pkg)
		for _, dep := range deps {
			depRoom, inModule := roomOf(dep)
			if !inModule || depRoom == room {
				continue
			}
			if stageOf(dep) > own || slices.Contains(barred[room], depRoom) {
				bad = append(bad, pkg+" imports "+dep)
			}
		}
	}
	return bad
}

// TestStagesImportForwardOnly: no package imports a later stage of the
// pipeline (profiles → guardrails → compiler → connectors → snapshot →
// gateway, then the review tools, the simulator and the binary), nor a room
// it is barred from. Test files may use later stages as harnesses; the
// packages themselves may not.
func TestStagesImportForwardOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	require.NoError(t, err, string(out))
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		require.Less(t, stageOf(f[0]), len(stages), "%s is in a top-level directory that is no stage: add it to stages", f[0])
	}
	for _, p := range []string{"gateway", "store/requestlog", "store/state", "review/diff", "review/ui", "simulator"} {
		require.Contains(t, imports, module+"/"+p)
	}
	require.Empty(t, backwardImports(imports))
}

// TestBackwardImportsFound: the rule itself sees a backward import and a
// barred one, and allows forward and same-room ones.
func TestBackwardImportsFound(t *testing.T) {
	got := backwardImports(map[string][]string{
		module + "/compiler":              {module + "/profiles", module + "/gateway/apierr", "fmt"},
		module + "/review/ui":             {module + "/store/requestlog", module + "/snapshot", module + "/profiles/access"},
		module + "/review/diff":           {module + "/review/ui", module + "/gateway"},
		module + "/snapshot":              {module + "/compiler/failover"},
		module + "/connectors":            {module + "/review/diff"},
		module + "/store/requestlog":      {module + "/profiles", module + "/guardrails"},
		module + "/store/state":           {module + "/store/requestlog"},
		module + "/simulator":             {module, module + "/simulator/errorbodies", module + "/guardrails", module + "/connectors"},
		module + "/simulator/errorbodies": {module},
		module + "/gateway":               {module + "/store/state", module + "/simulator"},
	})
	require.ElementsMatch(t, []string{
		module + "/compiler imports " + module + "/gateway/apierr",
		module + "/connectors imports " + module + "/review/diff",
		module + "/review/diff imports " + module + "/gateway",
		module + "/store/requestlog imports " + module + "/guardrails",
		module + "/simulator imports " + module + "/connectors",
		module + "/gateway imports " + module + "/simulator",
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

// TestWirePackagesImportNothingOfSluice: the wire packages under
// connectors/wire hold each API's shapes for every stage that speaks it,
// so they import nothing of the module, not even the connectors' own
// internal packages.
func TestWirePackagesImportNothingOfSluice(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/connectors/wire/...").CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.GreaterOrEqual(t, len(lines), 3, "connectors/wire holds chat, messages and responses")
	for _, line := range lines {
		f := strings.Fields(line)
		for _, dep := range f[1:] {
			_, inModule := roomOf(dep)
			require.False(t, inModule, "%s imports %s", f[0], dep)
		}
	}
}

// maxFileLines bounds a source file of the connectors and the gateway: past
// it, a file holds more than one concern and is split by concern, as the
// translate_* files are (request, turns, answer, stream).
const maxFileLines = 900

// TestSourceFilesStaySmall: no non-test .go file under connectors/ or
// gateway/ (subpackages included) is longer than maxFileLines lines.
func TestSourceFilesStaySmall(t *testing.T) {
	seen := 0
	for _, root := range []string{"connectors", "gateway"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seen++
			n := bytes.Count(b, []byte("\n"))
			if len(b) > 0 && b[len(b)-1] != '\n' {
				n++
			}
			if n > maxFileLines {
				t.Errorf("%s has %d lines, over the bound of %d: split it by concern (see the translate_*_{turns,answer,stream}.go files)", path, n, maxFileLines)
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Greater(t, seen, 20, "the walk found the connectors' and the gateway's source files")
}
