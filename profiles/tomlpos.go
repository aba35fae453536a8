package profiles

import (
	"errors"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/sluicegw/sluice/schemas"
)

// positions maps JSON pointers into a TOML document to the line that defines
// them, so that a problem found in the decoded document (a schema violation, a
// duplicate id) can be reported at a line a user can jump to.
type positions map[string]int

// decodeTOML decodes data into a generic document and indexes the line of every
// key, table and array element. A syntax error comes back as a located
// diagnostic.
func decodeTOML(file string, data []byte) (map[string]any, positions, *Diagnostic) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		d := Diagnostic{File: file, Code: CodeTOMLSyntax, Message: err.Error()}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			d.Line, d.Col = de.Position()
			d.Message = strings.TrimPrefix(de.Error(), "toml: ")
		}
		return nil, nil, &d
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return doc, indexTOML(data), nil
}

// indexTOML walks the document's expressions with go-toml's parser and records
// the line of every key path. The document is known to be valid TOML.
func indexTOML(data []byte) positions {
	pos := positions{}
	var p unstable.Parser
	p.Reset(data)
	line := func(n *unstable.Node) int {
		if n == nil || n.Raw.Length == 0 {
			return 0
		}
		return p.Shape(n.Raw).Start.Line
	}
	// arrays counts the elements seen so far of every array of tables, keyed by
	// its resolved pointer.
	arrays := map[string]int{}
	// resolve turns a dotted header key into pointer tokens, stepping into the
	// current (last) element of every array of tables on the way.
	resolve := func(keys []string) []string {
		var toks []string
		for _, k := range keys {
			toks = append(toks, k)
			if n, ok := arrays[schemas.Pointer(toks...)]; ok && n > 0 {
				toks = append(toks, strconv.Itoa(n-1))
			}
		}
		return toks
	}
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		keys, first := keyParts(e)
		switch e.Kind {
		case unstable.Table:
			table = resolve(keys)
			pos.set(schemas.Pointer(table...), line(first))
		case unstable.ArrayTable:
			base := resolve(keys[:len(keys)-1])
			base = append(base, keys[len(keys)-1])
			ptr := schemas.Pointer(base...)
			n := arrays[ptr]
			arrays[ptr] = n + 1
			pos.set(ptr, line(first))
			table = append(base, strconv.Itoa(n))
			pos.set(schemas.Pointer(table...), line(first))
		case unstable.KeyValue:
			full := append(append([]string(nil), table...), keys...)
			l := line(first)
			pos.set(schemas.Pointer(full...), l)
			indexValue(pos, full, e.Value(), l, line)
		}
	}
	return pos
}

func indexValue(pos positions, path []string, v *unstable.Node, parentLine int, line func(*unstable.Node) int) {
	switch v.Kind {
	case unstable.Array:
		it := v.Children()
		i := 0
		for it.Next() {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			l := line(c)
			if l == 0 {
				l = parentLine
			}
			child := append(append([]string(nil), path...), strconv.Itoa(i))
			pos.set(schemas.Pointer(child...), l)
			indexValue(pos, child, c, l, line)
			i++
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			keys, first := keyParts(kv)
			l := line(first)
			if l == 0 {
				l = parentLine
			}
			child := append(append([]string(nil), path...), keys...)
			pos.set(schemas.Pointer(child...), l)
			indexValue(pos, child, kv.Value(), l, line)
		}
	}
}

func keyParts(e *unstable.Node) ([]string, *unstable.Node) {
	var keys []string
	var first *unstable.Node
	it := e.Key()
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		keys = append(keys, string(n.Data))
	}
	return keys, first
}

func (p positions) set(ptr string, line int) {
	if _, ok := p[ptr]; !ok && line > 0 {
		p[ptr] = line
	}
}

// line returns the line of the pointer, or of its nearest indexed ancestor.
func (p positions) line(ptr string) int {
	for {
		if l, ok := p[ptr]; ok {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}

// schemaLine locates a schema violation: the line of the offending value, or
// for a property that is not allowed, the line of that property itself
// (the violation's pointer names the table that holds it).
func (p positions) schemaLine(v schemas.Violation) int {
	if rest, ok := strings.CutPrefix(v.Message, "additionalProperties '"); ok {
		if name, _, ok := strings.Cut(rest, "'"); ok {
			if l, ok := p[v.Pointer+"/"+name]; ok {
				return l
			}
		}
	}
	return p.line(v.Pointer)
}
