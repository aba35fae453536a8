package guardrails

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/tester"
)

// RunTests runs the guardrails' Rego unit tests (DIR/guardrails/*_test.rego,
// with the policy modules they test) and writes an `opa test`-style report to
// w: a PASS/FAIL line per test with its file and line in verbose mode, the
// failures and a summary otherwise. run, when non-nil, selects tests by name
// like `opa test --run`. passed is false when any test fails or errors, or when
// there is no test at all; err reports a load or compile problem.
func RunTests(ctx context.Context, dir string, run *regexp.Regexp, verbose bool, w io.Writer) (passed bool, err error) {
	gdir := filepath.Join(dir, GuardrailsDir)
	if _, err := os.Stat(gdir); err != nil {
		return false, fmt.Errorf("guardrails: running tests: %w", err)
	}
	modules, store, err := tester.LoadWithRegoVersion([]string{gdir}, func(_ string, fi fs.FileInfo, depth int) bool {
		if fi.IsDir() {
			return depth > 0
		}
		return filepath.Ext(fi.Name()) != ".rego"
	}, ast.RegoV1)
	if err != nil {
		if ds := regoDiags(dir, err); len(ds) > 0 {
			return false, fmt.Errorf("guardrails: loading tests: %w", ds)
		}
		return false, fmt.Errorf("guardrails: loading tests: %w", err)
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return false, fmt.Errorf("guardrails: running tests: %w", err)
	}
	defer store.Abort(ctx, txn)

	compiler := ast.NewCompiler().
		WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn)).
		WithEnablePrintStatements(true)
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		EnableTracing(verbose).
		SetDefaultRegoVersion(ast.RegoV1)
	if run != nil {
		runner = runner.Filter(run.String())
	}
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		var ae ast.Errors
		if errors.As(err, &ae) {
			return false, fmt.Errorf("guardrails: compiling tests: %w", regoDiags(dir, err))
		}
		return false, fmt.Errorf("guardrails: running tests: %w", err)
	}
	passed = true
	ran := 0
	dup := make(chan *tester.Result)
	go func() {
		defer close(dup)
		for r := range ch {
			ran++
			if !r.Pass() && !r.Skip {
				passed = false
			}
			dup <- r
		}
	}()
	rep := tester.PrettyReporter{Output: w, Verbose: verbose}
	if err := rep.Report(dup); err != nil {
		return false, fmt.Errorf("guardrails: reporting tests: %w", err)
	}
	if ran == 0 {
		if run != nil {
			return false, fmt.Errorf("guardrails: no test name matches %q", run.String())
		}
		return false, fmt.Errorf("guardrails: no tests in %s (a test is a rule named test_* in a .rego file there)", gdir)
	}
	return passed, nil
}
