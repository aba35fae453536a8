package connectors

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// errCanonical is a document AppendCanonicalJSON cannot read.
var errCanonical = errors.New("connectors: not a JSON document")

// AppendCanonicalJSON appends b re-encoded with every object's members in
// sorted order (by their key as written; equal keys keep their order) and
// no insignificant whitespace, strings and numbers as written, so that
// equal requests written in a different member order or spacing compare
// equal (response-cache keys). Two documents that differ otherwise (a
// string escaped another way included) stay different: a cache key made
// from it may miss, never match another request. It reads the document
// in place, with no decoded values: a request's key costs a pass over its
// bytes, not a tree of maps.
func AppendCanonicalJSON(dst, b []byte) ([]byte, error) {
	c := canon{b: b, out: dst}
	i, ok := c.value(skipSpace(b, 0), true)
	if !ok || skipSpace(b, i) != len(b) {
		return dst, errCanonical
	}
	return c.out, nil
}

// CanonicalJSON is [AppendCanonicalJSON] into a new slice.
func CanonicalJSON(b []byte) ([]byte, error) {
	return AppendCanonicalJSON(make([]byte, 0, len(b)), b)
}

type canon struct {
	b   []byte
	out []byte
}

type canonMember struct {
	key        []byte // as written, quotes included
	start, end int    // the value
}

var membersPool = sync.Pool{New: func() any { s := make([]canonMember, 0, 16); return &s }}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value reads the value at i (write: appended to out) and returns the
// index after it.
func (c *canon) value(i int, write bool) (int, bool) {
	b := c.b
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{':
		return c.object(i, write)
	case '[':
		if write {
			c.out = append(c.out, '[')
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			if write {
				c.out = append(c.out, ']')
			}
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = c.value(i, write); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				if write {
					c.out = append(c.out, ']')
				}
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			if write {
				c.out = append(c.out, ',')
			}
			i = skipSpace(b, i+1)
		}
	case '"':
		end, ok := stringEnd(b, i)
		if ok && write {
			c.out = append(c.out, b[i:end]...)
		}
		return end, ok
	default:
		j := i
		for j < len(b) && bytes.IndexByte([]byte("+-.0123456789eEtrufalsn"), b[j]) >= 0 {
			j++
		}
		if j == i || !validScalar(b[i:j]) {
			return i, false
		}
		if write {
			c.out = append(c.out, b[i:j]...)
		}
		return j, true
	}
}

// validScalar accepts true, false, null and a number's characters (its
// grammar is left to the decoder that parsed the request: a scalar is
// written as it came).
func validScalar(s []byte) bool {
	switch string(s) {
	case "true", "false", "null":
		return true
	}
	return s[0] == '-' || s[0] >= '0' && s[0] <= '9'
}

// stringEnd returns the index after the string starting at i.
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(b), false
}

// object reads the object at i: its members found first, then written in
// sorted order.
func (c *canon) object(i int, write bool) (int, bool) {
	b := c.b
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if write {
			c.out = append(c.out, '{', '}')
		}
		return i + 1, true
	}
	var ms *[]canonMember
	if write {
		ms = membersPool.Get().(*[]canonMember)
		*ms = (*ms)[:0]
		defer func() {
			clear(*ms)
			membersPool.Put(ms)
		}()
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		kend, ok := stringEnd(b, i)
		if !ok {
			return i, false
		}
		key := b[i:kend]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		start := skipSpace(b, i+1)
		end, ok := c.value(start, false)
		if !ok {
			return end, false
		}
		if write {
			*ms = append(*ms, canonMember{key: key, start: start, end: end})
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return i, false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return i, false
		}
		i = skipSpace(b, i+1)
	}
	if !write {
		return i, true
	}
	slices.SortStableFunc(*ms, func(x, y canonMember) int { return bytes.Compare(x.key, y.key) })
	c.out = append(c.out, '{')
	for k, m := range *ms {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, m.key...)
		c.out = append(c.out, ':')
		if _, ok := c.value(m.start, true); !ok {
			return i, false
		}
	}
	c.out = append(c.out, '}')
	return i, true
}
