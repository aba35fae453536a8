package guardrails

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/sluicegw/sluice/profiles"
)

// CheckPrincipals evaluates the policy for every principal and type-checks
// every rule value, as [Issuer.Decide] would at request time, so that a
// configuration that cannot decide for a principal it names is refused at
// load instead of answering its requests 500. A failure is a diagnostic with
// code [CodeBadOutput] (naming the rule and the type it got) or
// [CodeEvalError] (OPA's message, e.g. a conflict), located at the rule in
// its guardrails/FILE:LINE:COL. Principals failing the same way at the same
// place share one diagnostic, which names the first of them and how many
// more there are. The policy is evaluated on up to GOMAXPROCS goroutines and
// no literal set is expanded: the check costs one evaluation per principal.
func (pol *Policy) CheckPrincipals(ctx context.Context, ps []profiles.Principal) profiles.Diagnostics {
	if pol == nil || pol.prepared == nil || len(ps) == 0 {
		return nil
	}
	errs := make([]error, len(ps))
	workers := min(runtime.GOMAXPROCS(0), len(ps))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				j := i
				i++
				next.Unlock()
				if j >= len(ps) {
					return
				}
				_, errs[j] = pol.patterns(ctx, ps[j])
			}
		}()
	}
	wg.Wait()

	type group struct {
		d     profiles.Diagnostic
		first profiles.Principal
		n     int
	}
	groups := map[profiles.Diagnostic]*group{}
	var order []profiles.Diagnostic
	for j, err := range errs {
		if err == nil {
			continue
		}
		d := pol.locate(err)
		g := groups[d]
		if g == nil {
			g = &group{d: d, first: ps[j]}
			groups[d] = g
			order = append(order, d)
		}
		g.n++
	}
	out := make(profiles.Diagnostics, 0, len(order))
	for _, k := range order {
		g := groups[k]
		d := g.d
		d.Message += fmt.Sprintf(" (principal %s", g.first)
		if g.n > 1 {
			d.Message += fmt.Sprintf(" and %d more", g.n-1)
		}
		d.Message += ")"
		out = append(out, d)
	}
	out.Sort()
	return out
}

// locate turns a decision error into a diagnostic without the principal:
// at OPA's location for an evaluation error, at the rule that produced the
// value for a wrong type.
func (pol *Policy) locate(err error) profiles.Diagnostic {
	d := profiles.Diagnostic{File: GuardrailsDir, Code: CodeEvalError, Message: err.Error()}
	var oe *OutputError
	if errors.As(err, &oe) {
		d.Code = CodeBadOutput
		d.Message = "rule " + oe.Output + ": " + oe.Error()
		if loc := pol.ruleLocation(oe.Output); loc != nil {
			d.File, d.Line, d.Col = relPath(pol.dir, loc.File), loc.Row, loc.Col
		}
		return d
	}
	var te *topdown.Error
	if errors.As(err, &te) {
		// OPA names the modules by their paths; the diagnostic names them
		// as the rest do, relative to the configuration directory.
		msg := te.Message
		for _, prefix := range []string{pol.dir + "/", strings.TrimPrefix(pol.dir, "/") + "/"} {
			msg = strings.ReplaceAll(msg, prefix, "")
		}
		d.Message = te.Code + ": " + msg
		if te.Location != nil {
			d.File, d.Line, d.Col = relPath(pol.dir, te.Location.File), te.Location.Row, te.Location.Col
		}
	}
	return d
}

// ruleLocation finds where the guardrails define the output: the first
// definition whose value alone already has the wrong type (`quantizations
// := 42`), else the first definition (its value is computed, so the bad
// one cannot be told apart without tracing), or nil when no module defines
// it in package sluice.guardrails.
func (pol *Policy) ruleLocation(name string) *ast.Location {
	var first *ast.Location
	for _, f := range pol.files {
		m := pol.modules[f]
		if m == nil || m.Package.Path.String() != Query {
			continue
		}
		for _, r := range m.Rules {
			ref := r.Head.Ref()
			if len(ref) != 1 {
				continue
			}
			if v, ok := ref[0].Value.(ast.Var); !ok || string(v) != name {
				continue
			}
			if first == nil {
				first = r.Location
			}
			if constantIsBad(name, r.Head) {
				return r.Location
			}
		}
	}
	return first
}

// constantIsBad reports whether a rule head's value is a constant that the
// output's type check refuses.
func constantIsBad(name string, h *ast.Head) bool {
	var v any
	switch {
	case h.Value != nil && h.Value.IsGround():
		x, err := ast.JSON(h.Value.Value)
		if err != nil {
			return false
		}
		v = x
	case h.Value == nil && h.Key != nil && h.Key.IsGround(): // name contains KEY
		x, err := ast.JSON(h.Key.Value)
		if err != nil {
			return false
		}
		v = []any{x}
	default:
		return false
	}
	_, err := readPatterns(map[string]any{name: v})
	var oe *OutputError
	return errors.As(err, &oe) && oe.Output == name
}
