package sluice_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkCallers returns "file: call" for every call of the compiler's
// expressibility check (compiler.Check, under whatever name the file
// imports the compiler) in the module's non-test Go files under root.
func checkCallers(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/compiler" {
				name := "compiler"
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = true
			}
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Check" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] {
				out = append(out, filepath.ToSlash(rel)+": "+x.Name+".Check")
			}
			return true
		})
		// Inside the compiler itself the check is a plain identifier.
		if strings.HasPrefix(filepath.ToSlash(rel), "compiler/") && f.Name.Name == "compiler" {
			ast.Inspect(f, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "Check" {
						out = append(out, filepath.ToSlash(rel)+": Check")
					}
				}
				return true
			})
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestExpressibilityCheckedOnceOutsideConnectors: what an upstream may be
// asked to do is decided once, before translation and outside every
// connector — a connector asked to police its own decision could forget
// to. The only call of compiler.Check is the snapshot's compile step; no
// connector calls it (nor refers to it as a value).
func TestExpressibilityCheckedOnceOutsideConnectors(t *testing.T) {
	require.Equal(t, []string{"snapshot/compile.go: compiler.Check"}, checkCallers(t, "."))
}
