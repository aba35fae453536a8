package jsonscan

import "strconv"

// MaxDepth bounds the nesting a [Scanner] follows; deeper documents are
// refused and left to encoding/json (whose own bound is 10000).
const MaxDepth = 64

// Scanner walks one JSON document strictly: every method checks what it
// walks and returns ok false for anything that is not valid JSON, or that it
// would not decode exactly as encoding/json does (a string of invalid UTF-8,
// an object key with escapes, nesting deeper than [MaxDepth], ...). A caller
// builds a decoder for its own shape from [Scanner.Fields], [Scanner.Array]
// and the scalar decoders, and falls back to encoding/json when one refuses.
//
// Methods take the index of a value in the document and return the index
// after it. The zero Scanner walks an empty document.
type Scanner struct{ b []byte }

// NewScanner returns a Scanner over b.
func NewScanner(b []byte) Scanner { return Scanner{b: b} }

// Bytes returns the document.
func (s Scanner) Bytes() []byte { return s.b }

// Space returns the index of the first byte at or after i that is not JSON
// whitespace, or the document's length.
func (s Scanner) Space(i int) int { return SkipSpace(s.b, i) }

// Is reports whether the document's byte at i is c.
func (s Scanner) Is(i int, c byte) bool { return i < len(s.b) && s.b[i] == c }

// List walks the members of an object or the elements of an array: b[i] is
// the opening '{' or '[', close the matching closing byte, and depth the
// nesting of the list (refused beyond [MaxDepth]). item is called at the
// start of each member or element and returns the index after it; List
// checks the commas and returns the index after close.
func (s Scanner) List(i, depth int, close byte, item func(i int) (int, bool)) (int, bool) {
	if depth > MaxDepth {
		return 0, false
	}
	i = s.Space(i + 1)
	if i < len(s.b) && s.b[i] == close {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = item(i); !ok {
			return 0, false
		}
		i = s.Space(i)
		if i >= len(s.b) {
			return 0, false
		}
		switch s.b[i] {
		case ',':
			i = s.Space(i + 1)
		case close:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// Key reads the `"key":` of the object member at b[i] (for List's item on
// an object): the key (undecoded; a key with escapes is refused) and the
// index of the member's value.
func (s Scanner) Key(i int) (key []byte, value int, ok bool) {
	end, escaped, ok := StringEnd(s.b, i)
	if !ok || escaped {
		return nil, 0, false
	}
	c := s.Space(end)
	if c >= len(s.b) || s.b[c] != ':' {
		return nil, 0, false
	}
	return s.b[i+1 : end-1], s.Space(c + 1), true
}

// Fields walks the object at b[i] == '{', of nesting depth, like
// encoding/json decoding into a struct with the members names (at most 8,
// each in lower case): decode is called with the
// index in names of each member present and the index of its value; other
// members are checked and skipped. A member that would match one of names
// only by case folding, or that comes twice, is refused (encoding/json would
// fold or merge it).
func (s Scanner) Fields(i, depth int, names []string, decode func(field, i int) (int, bool)) (int, bool) {
	var seen uint8 // names has at most 8 entries
	return s.List(i, depth, '}', func(i int) (int, bool) {
		key, i, ok := s.Key(i)
		if !ok {
			return 0, false
		}
		field := -1
		for n, name := range names {
			if string(key) == name {
				field = n
				break
			}
		}
		if field < 0 {
			if FoldsTo(key, names...) {
				return 0, false
			}
			return s.Value(i, depth+1)
		}
		if seen&(1<<field) != 0 {
			return 0, false
		}
		seen |= 1 << field
		return decode(field, i)
	})
}

// Array walks the array at b[i] == '[', of nesting depth, calling elem with the index of each
// element; elem returns the index after it.
func (s Scanner) Array(i, depth int, elem func(i int) (int, bool)) (int, bool) {
	return s.List(i, depth, ']', elem)
}

// Value checks the JSON value at b[i], of nesting depth, and returns the
// index after it.
func (s Scanner) Value(i, depth int) (int, bool) {
	if i >= len(s.b) {
		return 0, false
	}
	switch c := s.b[i]; {
	case c == '"':
		end, _, ok := StringEnd(s.b, i)
		return end, ok
	case c == '{':
		return s.List(i, depth+1, '}', func(i int) (int, bool) {
			_, v, ok := s.Key(i)
			if !ok {
				return 0, false
			}
			return s.Value(v, depth+1)
		})
	case c == '[':
		return s.Array(i, depth+1, func(i int) (int, bool) { return s.Value(i, depth+1) })
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.Number(i)
	}
	return 0, false
}

func (s Scanner) literal(i int, lit string) (int, bool) {
	if len(s.b)-i < len(lit) || string(s.b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// Null reports whether the value at b[i] is null (four bytes long).
func (s Scanner) Null(i int) bool {
	_, ok := s.literal(i, "null")
	return ok
}

// Number checks the JSON number at b[i] and returns the index after it.
func (s Scanner) Number(i int) (int, bool) { return numberEnd(s.b, i) }

// DecodeString decodes the string at b[i] into dst; null leaves dst as it
// is (as encoding/json does); any other value is refused.
func (s Scanner) DecodeString(i int, dst *string) (int, bool) {
	if s.Null(i) {
		return i + 4, true
	}
	v, end, ok := ScanString(s.b, i)
	if !ok {
		return 0, false
	}
	*dst = v
	return end, true
}

// DecodeInt decodes the plain integer at b[i] (no fraction or exponent, at
// most 18 digits) into dst; null leaves dst as it is.
func (s Scanner) DecodeInt(i int, dst *int64) (int, bool) {
	if s.Null(i) {
		return i + 4, true
	}
	end, ok := s.Number(i)
	if !ok {
		return 0, false
	}
	digits := s.b[i:end]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent: encoding/json refuses it for an int64
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	*dst = n
	return end, true
}

// FoldsTo reports whether key matches one of names (each in lower case) the
// way encoding/json matches a member to a field when the case differs (ASCII
// case folding, and the Kelvin sign and long s that fold to k and s), so
// that such a member is left to encoding/json. Any key with a byte outside
// ASCII counts as a match: it might fold.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if fold(key, n) {
			return true
		}
	}
	return false
}

func fold(key []byte, name string) bool {
	// Non-ASCII bytes could fold (K, ſ): leave any such key to encoding/json.
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	if len(key) != len(name) {
		return false
	}
	for i := range key {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// DecodeFloat decodes the number at b[i] into a new float64 stored in *dst,
// as encoding/json decodes a number into a *float64; null leaves *dst as it
// is. A number out of float64's range is refused (encoding/json errors on
// it).
func (s Scanner) DecodeFloat(i int, dst **float64) (int, bool) {
	if s.Null(i) {
		return i + 4, true
	}
	end, ok := s.Number(i)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s.b[i:end]), 64)
	if err != nil {
		return 0, false
	}
	*dst = &f
	return end, true
}
