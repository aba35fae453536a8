package sluice_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The manual is docs/*.md. TestDocsComplete fails when something a user
// writes, runs or reads back is documented nowhere in it:
//
//   - a configuration key: every property name the JSON Schemas in schemas/
//     declare, at any depth (see schemaKeys);
//   - a command of the binary: every entry of cmd/sluice's command table,
//     and every subcommand its run function dispatches on (keys hash,
//     catalog import; see cliCommands);
//   - a stable error code: every Code* string constant of the packages that
//     define the codes callers, `sluice check` and `sluice catalog import`
//     report (see errorCodes).
//
// Documented means written in code in some page: inside an inline code span
// or a fenced block, as a whole word (a key or a code) or as the words
// "sluice <command>" (a command). Code rather than prose, because a key or a
// code is written the way a user types it; a whole word, because a key such
// as `on` or `kind` would otherwise be found inside every sentence. A key
// shown in a TOML or JSON example counts: that is where most are documented,
// with their defaults.

// docsDir is the manual.
const docsDir = "docs"

// codePackages are the directories whose Code* constants are sluice's stable
// error codes: the gateway's answers (gateway/apierr), the configuration
// loader's diagnostics (profiles), the compiler's refusals, the catalog's and
// the guardrails' errors, the marketplace listings' import errors and the
// connectors' translation refusals.
var codePackages = []string{"gateway/apierr", "profiles", "compiler", "guardrails", "guardrails/listing", "connectors"}

func TestDocsComplete(t *testing.T) {
	code := readDocs(t, docsDir)

	keys := schemaKeys(t, "schemas")
	require.Greater(t, len(keys), 50, "the schemas declare the configuration's keys")
	require.Empty(t, undocumented(keys, code.hasWord), "configuration keys of schemas/*.json documented nowhere in docs/*.md")

	cmds := cliCommands(t, filepath.Join("cmd", "sluice"))
	require.Contains(t, cmds, "serve")
	require.Contains(t, cmds, "keys hash")
	require.Empty(t, undocumented(cmds, code.hasCommand), "commands of cmd/sluice documented nowhere in docs/*.md")

	codes := errorCodes(t, codePackages)
	require.Contains(t, codes, "model_forbidden")
	require.Contains(t, codes, "toml_syntax")
	require.Empty(t, undocumented(codes, code.hasWord), "stable error codes documented nowhere in docs/*.md")

	t.Logf("%d configuration keys, %d commands, %d error codes, all documented", len(keys), len(cmds), len(codes))
}

// TestDocsCheckerFindsGaps: the checker reports what a page does not hold
// in code, and only that, so TestDocsComplete can fail.
func TestDocsCheckerFindsGaps(t *testing.T) {
	for _, c := range []struct {
		name     string
		page     string
		words    []string
		commands []string
		missing  []string
	}{
		{name: "inline code", page: "Set `max_retries` and `[cache] ttl = \"5m\"`.", words: []string{"max_retries", "ttl", "enabled"}, missing: []string{"enabled"}},
		{name: "fenced block", page: "Example:\n\n```toml\n[store]\nkind = \"sqlite\"\n```\n", words: []string{"kind", "store", "data_dir"}, missing: []string{"data_dir"}},
		{name: "tilde fence", page: "~~~\nrate_limited\n~~~\n", words: []string{"rate_limited", "budget_exhausted"}, missing: []string{"budget_exhausted"}},
		{name: "prose does not count", page: "The kind of store, and `data_dir`.", words: []string{"kind", "data_dir"}, missing: []string{"kind"}},
		{name: "whole words only", page: "`max_entries_total` and `upstreams`", words: []string{"max_entries", "upstream"}, missing: []string{"max_entries", "upstream"}},
		{name: "a span across a line break", page: "errors as (`sluice.toml:N:\nmissing_env`) do", words: []string{"missing_env"}},
		{name: "double backticks", page: "``a `tick` and invalid_json``", words: []string{"invalid_json", "tick"}},
		{name: "dollar keys", page: "a top-level `\"$schema\"` member", words: []string{"$schema", "schema"}, missing: []string{"schema"}},
		{name: "commands", page: "Run `sluice keys hash` or:\n\n```sh\nsluice catalog  import --from vercel\n```\n", commands: []string{"keys hash", "catalog import", "keys new", "keys"}, missing: []string{"keys new"}},
		{name: "a command needs the binary's name", page: "`serve --config DIR`, `sluice migrate`", commands: []string{"serve", "migrate"}, missing: []string{"serve"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := docsFromPages(map[string]string{"page.md": c.page})
			var got []string
			got = append(got, undocumented(c.words, code.hasWord)...)
			got = append(got, undocumented(c.commands, code.hasCommand)...)
			require.ElementsMatch(t, c.missing, got)
		})
	}
}

// TestDocsSourcesFound: the three lists come from the code, not from a list
// kept here: a schema's nested, array, $defs and additionalProperties keys;
// the command table and its subcommands; the Code constants.
func TestDocsSourcesFound(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.schema.json"), []byte(`{
		"properties": {
			"server": {"type": "object", "properties": {"listen": {}}},
			"upstreams": {"type": "array", "items": {"properties": {"name": {}}}},
			"byok": {"patternProperties": {"^[a-z]+_env$": {"type": "string"}}},
			"routes": {"items": {"$ref": "#/$defs/route"}}
		},
		"$defs": {
			"route": {"properties": {"then": {"properties": {"on": {}}}}, "if": {"properties": {"strategy": {}}}},
			"names": {"additionalProperties": {"properties": {"send": {}}}}
		}}`), 0o644))
	require.ElementsMatch(t, []string{"server", "listen", "upstreams", "name", "byok", "routes", "then", "on", "strategy", "send"}, schemaKeys(t, dir))

	cmd := filepath.Join(dir, "cmd")
	require.NoError(t, os.Mkdir(cmd, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cmd, "main.go"), []byte(`package main
type command struct{ name, summary string; run func([]string) int }
func commands() []command {
	return []command{{"serve", "serve", runServe}, {name: "keys", summary: "keys", run: runKeys}}
}
func runServe(args []string) int { mode := ""; switch mode { case "not-a-subcommand": }; return 0 }
func runKeys(args []string) int {
	switch args[0] {
	case "hash", "new":
	}
	return 0
}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(cmd, "main_test.go"), []byte("package main\nfunc commands2() []command { return []command{{\"ghost\", \"\", nil}} }\n"), 0o644))
	require.ElementsMatch(t, []string{"serve", "keys", "keys hash", "keys new"}, cliCommands(t, cmd))

	pkg := filepath.Join(dir, "pkg")
	require.NoError(t, os.Mkdir(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "codes.go"), []byte(`package pkg
const (
	CodeA = "code_a"
	// CodeB is documented.
	CodeB, CodeC = "code_b", "code_c"
	CodeAlias = CodeA
	NotACode = "not_a_code"
)
const CodeTyped string = "code_typed"
var CodeVar = "code_var"
`), 0o644))
	require.ElementsMatch(t, []string{"code_a", "code_b", "code_c", "code_typed"}, errorCodes(t, []string{pkg}))
}

// undocumented returns the items documented reports false for, sorted.
func undocumented(items []string, documented func(string) bool) []string {
	var out []string
	for _, it := range items {
		if !documented(it) {
			out = append(out, it)
		}
	}
	sort.Strings(out)
	return out
}

// docsCode is what the manual's pages hold in code: the text of every
// inline code span and fenced block, one piece a line.
type docsCode struct {
	text  string
	words map[string]bool
}

// wordRE is a word of code: a key, a code or a command's name. `$` belongs
// to words so that "$schema" is a key of its own.
var wordRE = regexp.MustCompile(`[$A-Za-z0-9_]+`)

func (d docsCode) hasWord(w string) bool { return d.words[w] }

// hasCommand: the words "sluice" and the command's own, separated by
// spaces, as a command line writes them.
func (d docsCode) hasCommand(cmd string) bool {
	parts := strings.Fields(cmd)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile(`(^|[^$A-Za-z0-9_/.-])sluice[ \t]+` + strings.Join(parts, `[ \t]+`) + `($|[^$A-Za-z0-9_-])`)
	return re.MatchString(d.text)
}

func readDocs(t *testing.T, dir string) docsCode {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "the manual is %s/*.md", dir)
	pages := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pages[f] = string(b)
	}
	return docsFromPages(pages)
}

func docsFromPages(pages map[string]string) docsCode {
	var pieces []string
	for _, p := range pages {
		pieces = append(pieces, codeOf(p)...)
	}
	d := docsCode{text: strings.Join(pieces, "\n"), words: map[string]bool{}}
	for _, w := range wordRE.FindAllString(d.text, -1) {
		d.words[w] = true
	}
	return d
}

// codeOf returns the code of a markdown page: each fenced block (``` or
// ~~~, closed by a fence of the same character at least as long) and each
// inline code span outside them (a run of backticks up to the next run of
// the same length; a span may cross a line break).
func codeOf(page string) []string {
	var code, prose []string
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		fence := fenceOf(lines[i])
		if fence == "" {
			prose = append(prose, lines[i])
			continue
		}
		var block []string
		for i++; i < len(lines); i++ {
			if f := fenceOf(lines[i]); f != "" && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(lines[i]) == f {
				break
			}
			block = append(block, lines[i])
		}
		code = append(code, strings.Join(block, "\n"))
	}
	text := strings.Join(prose, "\n")
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := backticks(text, i)
		end := -1
		for j := i + n; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := backticks(text, j)
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 { // an unclosed run is literal text
			i += n
			continue
		}
		code = append(code, text[i+n:end])
		i = end + n
	}
	return code
}

// fenceOf returns a line's opening fence (its run of ``` or ~~~), or "".
func fenceOf(line string) string {
	s := strings.TrimLeft(line, " ")
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

func backticks(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// schemaKeys returns every configuration key the JSON Schemas in dir
// declare (*.json): each property name under "properties", at any depth —
// a table's keys, an array's items' keys, the keys of a definition in $defs
// that a $ref names, the keys of additionalProperties' and
// patternProperties' value schemas, and those inside allOf/anyOf/oneOf,
// if/then/else, not, prefixItems and contains. These are the names a user
// writes in sluice.toml, a profile, a request's routing object or
// catalog.json. What patternProperties matches (a byok entry's
// <upstream>_env) is a pattern, not a key, and JSON Schema's own keywords
// are never keys.
func schemaKeys(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	keys := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(b, &doc), f)
		walkSchema(doc, keys)
	}
	return sortedKeys(keys)
}

// walkSchema adds the property names of a schema node and of the schemas
// nested in it to keys.
func walkSchema(node any, keys map[string]bool) {
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			keys[k] = true
			walkSchema(v, keys)
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"} {
		walkSchema(m[kw], keys)
	}
	for _, kw := range []string{"$defs", "definitions", "patternProperties", "dependentSchemas"} {
		if defs, ok := m[kw].(map[string]any); ok {
			for _, v := range defs {
				walkSchema(v, keys)
			}
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if list, ok := m[kw].([]any); ok {
			for _, v := range list {
				walkSchema(v, keys)
			}
		}
	}
}

// cliCommands returns the commands of the binary whose package is dir, read
// from its source: each entry of the []command literal that commands()
// returns (its first field, the name), and, for each, the string cases of
// a `switch args[0]` in its run function ("keys hash", "catalog import").
func cliCommands(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	var fields []string // the command struct's fields, in order
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = fd
			}
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == "command" {
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								fields = append(fields, n.Name)
							}
						}
					}
				}
			}
		}
	}
	require.Contains(t, fields, "name", "%s declares type command with a name field", dir)
	table := funcs["commands"]
	require.NotNil(t, table, "%s has a commands() table", dir)
	var cmds []string
	ast.Inspect(table, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		arr, ok := lit.Type.(*ast.ArrayType)
		if !ok || !isIdent(arr.Elt, "command") {
			return true
		}
		for _, el := range lit.Elts {
			entry, ok := el.(*ast.CompositeLit)
			require.True(t, ok, "a command table entry is a literal")
			name, run := commandFields(entry, fields)
			require.NotEmpty(t, name, "a command table entry has a name")
			cmds = append(cmds, name)
			if fd := funcs[run]; fd != nil {
				for _, sub := range subcommands(fd) {
					cmds = append(cmds, name+" "+sub)
				}
			}
		}
		return false
	})
	return cmds
}

// commandFields returns a command entry's name and the name of its run
// function, positional ({"keys", "…", runKeys}, in the order of the
// struct's fields) or keyed.
func commandFields(entry *ast.CompositeLit, fields []string) (name, run string) {
	for i, el := range entry.Elts {
		field := ""
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				field = id.Name
			}
			el = kv.Value
		} else if i < len(fields) {
			field = fields[i]
		}
		switch field {
		case "name":
			name = stringLit(el)
		case "run":
			if id, ok := el.(*ast.Ident); ok {
				run = id.Name
			}
		}
	}
	return name, run
}

// subcommands returns the string cases of every `switch args[0]` in fd.
func subcommands(fd *ast.FuncDecl) []string {
	var subs []string
	ast.Inspect(fd, func(n ast.Node) bool {
		sw, ok := n.(*ast.SwitchStmt)
		if !ok {
			return true
		}
		ix, ok := sw.Tag.(*ast.IndexExpr)
		if !ok || !isIdent(ix.X, "args") {
			return true
		}
		if lit, ok := ix.Index.(*ast.BasicLit); !ok || lit.Value != "0" {
			return true
		}
		for _, st := range sw.Body.List {
			for _, e := range st.(*ast.CaseClause).List {
				if s := stringLit(e); s != "" {
					subs = append(subs, s)
				}
			}
		}
		return true
	})
	return subs
}

// errorCodes returns the values of the string constants named Code… in the
// non-test Go files of dirs: the stable codes. A constant defined as
// another (CodeX = pkg.CodeY) is that one's code, found where it is
// defined.
func errorCodes(t *testing.T, dirs []string) []string {
	t.Helper()
	codes := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		n := 0
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
							continue
						}
						if s := stringLit(vs.Values[i]); s != "" {
							codes[s] = true
							n++
						}
					}
				}
			}
		}
		require.Positive(t, n, "%s defines Code constants", dir)
	}
	return sortedKeys(codes)
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
