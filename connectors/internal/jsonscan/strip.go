package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
)

// StripMembers removes top-level members from a JSON object; the body is
// returned unchanged when it has none of them.
func StripMembers(b []byte, names ...string) []byte {
	out, _ := StripInto(nil, b, names)
	return out
}

// StripInto is [StripMembers] appending the stripped object to dst (a
// stream reuses one buffer); stripped is false, and b returned as it is,
// when b holds none of the names. The other members keep their bytes and
// order; an object the byte walk cannot take (an escaped key, invalid JSON)
// is decoded and written back with its members in sorted order.
func StripInto(dst, b []byte, names []string) (_ []byte, stripped bool) {
	if !MayHoldMember(b, names) {
		return b, false
	}
	if out, ok := appendStripped(dst, b, names); ok {
		return out, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b, false
	}
	for _, n := range names {
		delete(m, n)
	}
	return appendSorted(dst, m), true
}

// appendSorted appends an object of raw members in sorted key order.
func appendSorted(dst []byte, m map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, m[k]...)
	}
	return append(dst, '}')
}

// MayHoldMember is the cheap test before looking for members (at any
// depth): false when no name can be a member of b, because none appears in
// quotes and there is no \u escape (the only way a key can spell a name of
// letters and underscores differently), and always false for no names.
func MayHoldMember(b []byte, names []string) bool {
	for _, n := range names {
		if hasQuoted(b, n) {
			return true
		}
	}
	return len(names) > 0 && bytes.Contains(b, []byte(`\u`))
}

// hasQuoted reports whether b holds name between double quotes.
func hasQuoted(b []byte, name string) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(name))
		if j < 0 {
			return false
		}
		j += i
		if j > 0 && j+len(name) < len(b) && b[j-1] == '"' && b[j+len(name)] == '"' {
			return true
		}
		i = j + 1
	}
}

// appendStripped appends the JSON object b to dst without its top-level
// members named in names; every other member is copied byte for byte, in
// order (whitespace between members is dropped). ok is false, and dst is
// returned unchanged, when b is not an object it can walk exactly: a key
// with escapes (it might spell a name), invalid JSON, nesting deeper than
// [MaxDepth].
func appendStripped(dst, b []byte, names []string) (_ []byte, ok bool) {
	s := NewScanner(b)
	i := s.Space(0)
	if i >= len(b) || b[i] != '{' {
		return dst, false
	}
	// What is kept fits in b's length: grown once, not member by member.
	out := append(slices.Grow(dst, len(b)), '{')
	kept := false
	end, ok := s.List(i, 0, '}', func(m int) (int, bool) {
		key, v, ok := s.Key(m)
		if !ok {
			return 0, false
		}
		end, ok := s.Value(v, 1)
		if !ok {
			return 0, false
		}
		for _, n := range names {
			if string(key) == n {
				return end, true // dropped
			}
		}
		if kept {
			out = append(out, ',')
		}
		out, kept = append(out, b[m:end]...), true
		return end, true
	})
	if !ok || s.Space(end) != len(b) {
		return dst, false
	}
	return append(out, '}'), true
}
