// Package jsonscan reads and writes JSON at the byte level, for the
// connectors' hot paths: walkers that find a member or skip a value in raw
// bytes, a strict [Scanner] that decodes a value only when it can do so
// exactly as encoding/json would (and otherwise says so, leaving the value to
// encoding/json), the strip of top-level members from an object, and the one
// JSON string encoder, [AppendString].
//
// Nothing here knows an upstream's shapes: the connectors build their shape
// decoders on top (an answer's head, a request's messages), and their fuzzers
// hold those to encoding/json as this package's fuzzers hold the encoders,
// the scalar decoders and the strip.
package jsonscan

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, newline, carriage return), or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index after the string starting at b[i] == '"'. It
// trusts the input to be valid JSON and only follows escapes to find the
// closing quote; an unterminated string gives len(b)+1.
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b) + 1
}

// SkipValue returns the index after the value starting at b[i]. Like
// [SkipString] it trusts the input: an object or array is skipped by
// counting brackets outside strings, anything else runs to the next
// delimiter or whitespace. An unterminated object, array or string gives
// len(b)+1.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b) + 1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// Member returns the raw value of the first top-level member named key of a
// JSON object, or nil. Keys are compared as written (escapes not decoded).
// The object should be valid JSON (check it first); the scan is bounds-safe
// regardless, and gives nil for anything it cannot walk.
func Member(obj []byte, key string) []byte {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i++
	for {
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return nil
		}
		ks := i
		i = SkipString(obj, i)
		if i > len(obj) || i-ks < 2 {
			return nil
		}
		k := obj[ks+1 : i-1]
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != ':' {
			return nil
		}
		i = SkipSpace(obj, i+1)
		vs := i
		i = SkipValue(obj, i)
		if i > len(obj) || i <= vs {
			return nil
		}
		if string(k) == key {
			return obj[vs:i]
		}
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return nil
		}
		i++
	}
}

// StringContent returns the bytes between a raw JSON string's quotes
// (escapes not decoded), or nil when the value is not a string.
func StringContent(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil
	}
	return raw[1 : len(raw)-1]
}

// SmallInt parses a raw value that is a small non-negative integer (at most
// nine digits, no sign, fraction or exponent), or returns -1.
func SmallInt(raw []byte) int {
	if len(raw) == 0 || len(raw) > 9 {
		return -1
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
