// Package schemas embeds sluice's JSON Schemas (draft 2020-12) and validates
// decoded documents against them, reporting every violation with the JSON
// pointer of the offending value.
//
// The schemas are also meant for editors: each has an $id under [BaseID], so a
// TOML or JSON file can point its "$schema" (Taplo, VS Code) at the file in this
// directory.
package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Names of the embedded schemas.
const (
	// Sluice is the schema of sluice.toml.
	Sluice = "sluice.schema.json"
	// Profile is the schema of a routing profile file (profiles/**.toml).
	Profile = "profile.schema.json"
	// Routing is the schema of the "routing" object in a request body.
	Routing = "routing.schema.json"
	// Catalog is the schema of catalog.json.
	Catalog = "catalog.schema.json"
)

// BaseID is the prefix of every embedded schema's $id.
const BaseID = "https://github.com/sluicegw/sluice/schemas/"

//go:embed *.schema.json
var files embed.FS

// FS returns the embedded schema files, e.g. for serving them over HTTP.
func FS() embed.FS { return files }

// Violation is one schema violation.
type Violation struct {
	// Pointer is the JSON pointer of the offending value ("" for the document root).
	Pointer string
	// Message explains what is wrong.
	Message string
}

// compiled holds each embedded schema, compiled when it is first used: a
// configuration without profiles never compiles the profile and routing
// schemas, and keeps none of their compiled form.
var compiled = map[string]func() (*jsonschema.Schema, error){
	Sluice:  sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(Sluice) }),
	Profile: sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(Profile) }),
	Routing: sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(Routing) }),
	Catalog: sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(Catalog) }),
}

// newCompiler returns a draft 2020-12 compiler holding every embedded schema.
func newCompiler() (*jsonschema.Compiler, []string, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, nil, err
		}
		if err := c.AddResource(BaseID+e.Name(), bytes.NewReader(b)); err != nil {
			return nil, nil, fmt.Errorf("schema %s: %w", e.Name(), err)
		}
		names[i] = e.Name()
	}
	return c, names, nil
}

// compile compiles the named embedded schema (and what it refers to).
func compile(name string) (*jsonschema.Schema, error) {
	c, _, err := newCompiler()
	if err != nil {
		return nil, err
	}
	s, err := c.Compile(BaseID + name)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return s, nil
}

// Validate checks a decoded document against the named embedded schema and
// returns every violation, sorted by pointer. The document may come from a JSON
// or a TOML decoder: it is normalised first (see [Normalize]). Validate panics
// if the embedded schemas do not compile or name is unknown: both are
// programming errors caught by this package's tests.
func Validate(name string, doc any) []Violation {
	get, ok := compiled[name]
	if !ok {
		panic("schemas: unknown schema " + name)
	}
	s, err := get()
	if err != nil {
		panic(err)
	}
	return violations(s, doc)
}

var (
	defsMu sync.Mutex
	defs   = map[string]*jsonschema.Schema{}
)

// ValidateDef checks a document against one definition of an embedded
// schema, e.g. ValidateDef(Sluice, "route", body) for the admin API's route
// bodies, so that the API and the file accept exactly the same shapes.
func ValidateDef(name, def string, doc any) []Violation {
	url := BaseID + name + "#/$defs/" + def
	defsMu.Lock()
	s, ok := defs[url]
	if !ok {
		c, _, err := newCompiler()
		if err != nil {
			defsMu.Unlock()
			panic(err)
		}
		if s, err = c.Compile(url); err != nil {
			defsMu.Unlock()
			panic(fmt.Sprintf("schemas: %s: %v", url, err))
		}
		defs[url] = s
	}
	defsMu.Unlock()
	return violations(s, doc)
}

func violations(s *jsonschema.Schema, doc any) []Violation {
	err := s.Validate(Normalize(doc))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	collect(ve, &out)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pointer != out[j].Pointer {
			return out[i].Pointer < out[j].Pointer
		}
		return out[i].Message < out[j].Message
	})
	// Drop exact duplicates, which "oneOf"/"anyOf" branches can produce.
	dedup := out[:0]
	for i, v := range out {
		if i > 0 && v == out[i-1] {
			continue
		}
		dedup = append(dedup, v)
	}
	return dedup
}

// collect appends the leaves of a validation error tree: the leaves are the
// specific violations, the inner nodes only say "doesn't validate with ...".
func collect(ve *jsonschema.ValidationError, out *[]Violation) {
	if len(ve.Causes) == 0 {
		*out = append(*out, Violation{Pointer: ve.InstanceLocation, Message: ve.Message})
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}

// Normalize converts a decoded document into the JSON data model the validator
// accepts: typed slices and maps become []any and map[string]any, times become
// RFC 3339 strings, and integer types become int64 or float64.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = Normalize(e)
		}
		return s
	case []map[string]any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = Normalize(e)
		}
		return s
	case []string:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case int16:
		return int64(x)
	case uint16:
		return int64(x)
	case float32:
		return float64(x)
	default:
		return v
	}
}

// Pointer joins reference tokens into a JSON pointer, escaping "~" and "/".
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}
