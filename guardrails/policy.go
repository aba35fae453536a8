package guardrails

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/sluicegw/sluice/profiles"
)

// GuardrailsDir is the name of the policy directory inside a configuration directory.
const GuardrailsDir = "guardrails"

// Query is the one query a policy is prepared for.
const Query = "data.sluice.guardrails"

// CodeRegoError is the diagnostic code used when a Rego error carries no code of
// its own. Errors from OPA keep theirs (rego_parse_error, rego_type_error, ...).
const CodeRegoError = "rego_error"

// Policy is a loaded, compiled set of guardrail modules with its query prepared
// once. It is immutable and safe for concurrent use.
type Policy struct {
	revision string
	dir      string // the configuration directory, for locating diagnostics
	files    []string
	modules  map[string]*ast.Module  // by path relative to the configuration directory
	prepared *rego.PreparedEvalQuery // nil when there are no modules: allow everything
}

// Revision returns the hex SHA-256 of the module sources (file names and bytes,
// in name order). A policy with no modules has the hash of nothing.
func (p *Policy) Revision() string { return p.revision }

// Files returns the loaded module paths relative to the configuration
// directory, e.g. "guardrails/org.rego", sorted.
func (p *Policy) Files() []string { return append([]string(nil), p.files...) }

// isTestFile reports whether a Rego file holds unit tests only.
func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// LoadPolicy loads DIR/guardrails/*.rego (not the *_test.rego files), compiles
// the modules and prepares [Query]. A missing directory or one without modules
// yields a policy that allows everything. Parse and compile errors come back as
// diagnostics located at guardrails/FILE:ROW:COL with OPA's error code.
func LoadPolicy(dir string) (*Policy, profiles.Diagnostics) {
	return loadPolicy(context.Background(), dir)
}

func loadPolicy(ctx context.Context, dir string) (*Policy, profiles.Diagnostics) {
	gdir := filepath.Join(dir, GuardrailsDir)
	empty := sha256.Sum256(nil)
	info, err := os.Stat(gdir)
	if errors.Is(err, fs.ErrNotExist) {
		return &Policy{revision: hex.EncodeToString(empty[:])}, nil
	}
	if err != nil {
		return nil, profiles.Diagnostics{{File: GuardrailsDir, Code: profiles.CodeReadError, Message: err.Error()}}
	}
	if !info.IsDir() {
		return nil, profiles.Diagnostics{{File: GuardrailsDir, Code: profiles.CodeReadError, Message: "not a directory"}}
	}
	res, err := loader.NewFileLoader().
		WithRegoVersion(ast.RegoV1).
		Filtered([]string{gdir}, func(_ string, fi fs.FileInfo, depth int) bool {
			if fi.IsDir() {
				return depth > 0 // only DIR/guardrails itself, no subdirectories
			}
			return filepath.Ext(fi.Name()) != ".rego" || isTestFile(fi.Name())
		})
	if err != nil {
		return nil, regoDiags(dir, err)
	}
	names := make([]string, 0, len(res.Modules))
	for name := range res.Modules {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	opts := []func(*rego.Rego){rego.Query(Query), rego.SetRegoVersion(ast.RegoV1), rego.Capabilities(capabilities())}
	files := make([]string, 0, len(names))
	modules := make(map[string]*ast.Module, len(names))
	for _, name := range names {
		f := res.Modules[name]
		rel := relPath(dir, name)
		files = append(files, rel)
		modules[rel] = f.Parsed
		h.Write([]byte(rel))
		h.Write([]byte{0})
		h.Write(f.Raw)
		h.Write([]byte{0})
		opts = append(opts, rego.ParsedModule(f.Parsed))
	}
	p := &Policy{revision: hex.EncodeToString(h.Sum(nil)), dir: dir, files: files, modules: modules}
	if len(names) == 0 {
		return p, nil
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, regoDiags(dir, err)
	}
	p.prepared = &pq
	return p, nil
}

// DeniedBuiltins are the OPA built-in functions a guardrail may not call:
// those that reach the network (http.send, net.lookup_ip_addr) and
// opa.runtime, which reads the gateway's environment (its platform keys
// among it). A decision is a function of the principal and the policy
// alone. A module that calls one fails to compile, located at the call
// (rego_type_error: undefined function).
var DeniedBuiltins = []string{"http.send", "net.lookup_ip_addr", "opa.runtime"}

// capabilities are OPA's own for this version without [DeniedBuiltins]
// and with no network host allowed.
func capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if !slices.Contains(DeniedBuiltins, b.Name) {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}

func relPath(dir, file string) string {
	candidates := []string{file}
	if filepath.IsAbs(dir) && !filepath.IsAbs(file) {
		// OPA's loader names modules loaded from an absolute directory
		// without the leading slash.
		candidates = append(candidates, string(filepath.Separator)+file)
	}
	for _, f := range candidates {
		if rel, err := filepath.Rel(dir, f); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(file)
}

// regoDiags turns loader and compiler errors into located diagnostics.
func regoDiags(dir string, err error) profiles.Diagnostics {
	var out profiles.Diagnostics
	var add func(error)
	add = func(e error) {
		var le loader.Errors
		var aes ast.Errors
		var ae *ast.Error
		switch {
		case errors.As(e, &le):
			for _, x := range le {
				add(x)
			}
		case errors.As(e, &aes):
			for _, x := range aes {
				add(x)
			}
		case errors.As(e, &ae):
			d := profiles.Diagnostic{File: GuardrailsDir, Code: ae.Code, Message: ae.Message}
			if d.Code == "" {
				d.Code = CodeRegoError
			}
			if ae.Location != nil {
				d.File = relPath(dir, ae.Location.File)
				d.Line, d.Col = ae.Location.Row, ae.Location.Col
			}
			out = append(out, d)
		default:
			out = append(out, profiles.Diagnostic{File: GuardrailsDir, Code: CodeRegoError, Message: e.Error()})
		}
	}
	add(err)
	out.Sort()
	return out
}
