package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The functions below decode scalars from raw bytes. Each accepts only input
// it decodes exactly as encoding/json would and reports anything else, for
// which the caller takes the encoding/json path.

// TrimSpace drops the JSON whitespace around v.
func TrimSpace(v []byte) []byte {
	i, j := 0, len(v)
	for i < j && isSpace(v[i]) {
		i++
	}
	for j > i && isSpace(v[j-1]) {
		j--
	}
	return v[i:j]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// NumberText returns v without the whitespace around it when it is one JSON
// number, or nil.
func NumberText(v []byte) []byte {
	v = TrimSpace(v)
	if end, ok := numberEnd(v, 0); !ok || end != len(v) {
		return nil
	}
	return v
}

// numberEnd returns the index after the JSON number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

// StringEnd returns the index after the JSON string starting at v[i] ==
// '"', whether it holds escapes, and ok false unless it is a valid JSON
// string of valid UTF-8.
func StringEnd(v []byte, i int) (end int, escaped, ok bool) {
	if i >= len(v) || v[i] != '"' {
		return 0, false, false
	}
	start, ascii := i+1, true
	for i++; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			if !ascii && !utf8.Valid(v[start:i]) {
				return 0, false, false
			}
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			i++
			if i >= len(v) {
				return 0, false, false
			}
			switch v[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if hex4(v[i+1:]) < 0 {
					return 0, false, false
				}
				i += 4
			default:
				return 0, false, false
			}
		case c < ' ':
			return 0, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, false, false
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// ScanString decodes the JSON string starting at v[i] as encoding/json
// does, and returns the index after it; ok is false for anything but a valid
// JSON string of valid UTF-8.
func ScanString(v []byte, i int) (s string, end int, ok bool) {
	end, escaped, ok := StringEnd(v, i)
	if !ok {
		return "", 0, false
	}
	raw := v[i+1 : end-1]
	if !escaped {
		return string(raw), end, true
	}
	b := make([]byte, 0, len(raw))
	for r := 0; r < len(raw); {
		c := raw[r]
		if c != '\\' {
			b = append(b, c)
			r++
			continue
		}
		r++
		switch c := raw[r]; c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			rr := hex4(raw[r+1:])
			r += 5
			if utf16.IsSurrogate(rr) {
				// A pair when a valid low surrogate follows, else U+FFFD.
				if r+1 < len(raw) && raw[r] == '\\' && raw[r+1] == 'u' {
					if dec := utf16.DecodeRune(rr, hex4(raw[r+2:])); dec != utf8.RuneError {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
				}
				rr = utf8.RuneError
			}
			b = utf8.AppendRune(b, rr)
			continue
		default: // '"', '\\', '/'
			b = append(b, c)
		}
		r++
	}
	return string(b), end, true
}
