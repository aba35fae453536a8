package diff

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// jsonDiff lists the members that differ between two JSON documents, by JSON
// pointer, sorted. Objects are compared member by member; arrays and scalars
// are compared whole, so a reordered provider list reads as one change
// rather than one per index. A member absent on one side has that side
// omitted. Documents that do not parse are compared whole, at "".
func jsonDiff(a, b []byte) []FieldChange {
	var av, bv any
	if decode(a, &av) != nil || decode(b, &bv) != nil {
		if bytes.Equal(a, b) {
			return nil
		}
		return []FieldChange{{Field: "", Base: compact(a), Head: compact(b)}}
	}
	var out []FieldChange
	walk("", av, bv, true, true, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func decode(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func walk(ptr string, a, b any, hasA, hasB bool, out *[]FieldChange) {
	ao, aObj := a.(map[string]any)
	bo, bObj := b.(map[string]any)
	if hasA && hasB && aObj && bObj {
		for k, av := range ao {
			bv, ok := bo[k]
			walk(ptr+"/"+escape(k), av, bv, true, ok, out)
		}
		for k, bv := range bo {
			if _, ok := ao[k]; !ok {
				walk(ptr+"/"+escape(k), nil, bv, false, true, out)
			}
		}
		return
	}
	var aj, bj json.RawMessage
	if hasA {
		aj = mustJSON(a)
	}
	if hasB {
		bj = mustJSON(b)
	}
	if hasA && hasB && bytes.Equal(aj, bj) {
		return
	}
	*out = append(*out, FieldChange{Field: ptr, Base: aj, Head: bj})
}

// escape escapes a member name for a JSON pointer (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return mustJSON(string(b))
	}
	return buf.Bytes()
}
