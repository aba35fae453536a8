package connectors

// scanHead decodes a completion or chunk of the plain OpenAI shape into h
// without reflection: the non-streaming path decodes every answer to read
// back who served, and encoding/json was about 5 % of the gateway's CPU
// there. It returns false, leaving the decision to encoding/json (which also
// reports invalid JSON), for anything it does not handle exactly as
// encoding/json would: a top level that is not an object, a known member
// spelled in another case, with escapes or given twice, a value of an
// unexpected type, numbers that are not plain integers, strings that are not
// valid UTF-8, nesting deeper than headMaxDepth, and any invalid JSON. When it
// returns true, b is valid JSON and h holds what json.Unmarshal would have
// decoded into a zero completionHead (FuzzScanHead holds it to that).
func scanHead(b []byte, h *completionHead) bool {
	s := headScanner{b: b}
	i := s.space(0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i, ok := s.fields(i, 0, []string{"model", "provider", "choices", "usage"}, func(field, i int) (int, bool) {
		switch field {
		case 0:
			return s.optString(i, &h.Model)
		case 1:
			return s.optString(i, &h.Provider)
		case 2:
			return s.choices(i, h)
		default:
			return s.usage(i, h)
		}
	})
	if !ok {
		return false
	}
	return s.space(i) == len(b)
}

// headMaxDepth bounds the nesting scanHead follows; deeper bodies go to
// encoding/json (whose own bound is 10000).
const headMaxDepth = 64

type headScanner struct{ b []byte }

func (s headScanner) space(i int) int { return anthSkipSpace(s.b, i) }

// list walks the members of an object or the elements of an array: b[i] is
// the opening '{' or '[', close the matching closing byte. item is called
// at the start of each one and returns the index after it; list checks the
// commas and returns the index after close.
func (s headScanner) list(i, depth int, close byte, item func(i int) (int, bool)) (int, bool) {
	if depth > headMaxDepth {
		return 0, false
	}
	i = s.space(i + 1)
	if i < len(s.b) && s.b[i] == close {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = item(i); !ok {
			return 0, false
		}
		i = s.space(i)
		if i >= len(s.b) {
			return 0, false
		}
		switch s.b[i] {
		case ',':
			i = s.space(i + 1)
		case close:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// key reads the `"key":` of the object member at b[i] (for list's item on
// an object): the key (undecoded; a key with escapes is refused) and the
// index of the member's value.
func (s headScanner) key(i int) (key []byte, value int, ok bool) {
	end, escaped, ok := anthStringEnd(s.b, i)
	if !ok || escaped {
		return nil, 0, false
	}
	c := s.space(end)
	if c >= len(s.b) || s.b[c] != ':' {
		return nil, 0, false
	}
	return s.b[i+1 : end-1], s.space(c + 1), true
}

// fields walks the object at b[i] == '{' like encoding/json decoding into a
// struct with the members names: decode is called with the index in names
// of each member present and the index of its value; other members are
// checked and skipped. A member that would match one of names only by case
// folding, or that comes twice, is refused (encoding/json would fold or
// merge it).
func (s headScanner) fields(i, depth int, names []string, decode func(field, i int) (int, bool)) (int, bool) {
	var seen uint8 // names has at most 8 entries
	return s.list(i, depth, '}', func(i int) (int, bool) {
		key, i, ok := s.key(i)
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
			if headFoldsTo(key, names...) {
				return 0, false
			}
			return s.value(i, depth+1)
		}
		if seen&(1<<field) != 0 {
			return 0, false
		}
		seen |= 1 << field
		return decode(field, i)
	})
}

// array walks the array at b[i] == '[', calling elem with the index of each
// element; elem returns the index after it.
func (s headScanner) array(i, depth int, elem func(i int) (int, bool)) (int, bool) {
	return s.list(i, depth, ']', elem)
}

// value checks the JSON value at b[i] and returns the index after it.
func (s headScanner) value(i, depth int) (int, bool) {
	if i >= len(s.b) {
		return 0, false
	}
	switch c := s.b[i]; {
	case c == '"':
		end, _, ok := anthStringEnd(s.b, i)
		return end, ok
	case c == '{':
		return s.list(i, depth+1, '}', func(i int) (int, bool) {
			_, v, ok := s.key(i)
			if !ok {
				return 0, false
			}
			return s.value(v, depth+1)
		})
	case c == '[':
		return s.array(i, depth+1, func(i int) (int, bool) { return s.value(i, depth+1) })
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	}
	return 0, false
}

func (s headScanner) literal(i int, lit string) (int, bool) {
	if len(s.b)-i < len(lit) || string(s.b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

func (s headScanner) null(i int) bool {
	_, ok := s.literal(i, "null")
	return ok
}

// number checks a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s headScanner) number(i int) (int, bool) {
	b := s.b
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}

// optString decodes a string into dst; null leaves dst as it is (as
// encoding/json does); any other value is refused.
func (s headScanner) optString(i int, dst *string) (int, bool) {
	if s.null(i) {
		return i + 4, true
	}
	v, end, ok := anthScanString(s.b, i)
	if !ok {
		return 0, false
	}
	*dst = v
	return end, true
}

// optInt decodes a plain integer (no fraction or exponent, at most 18
// digits) into dst; null leaves dst as it is.
func (s headScanner) optInt(i int, dst *int64) (int, bool) {
	if s.null(i) {
		return i + 4, true
	}
	end, ok := s.number(i)
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

func (s headScanner) choices(i int, h *completionHead) (int, bool) {
	if s.null(i) {
		return i + 4, true
	}
	if i >= len(s.b) || s.b[i] != '[' {
		return 0, false
	}
	h.Choices = h.Choices[:0]
	return s.array(i, 1, func(i int) (int, bool) {
		h.Choices = append(h.Choices, struct {
			FinishReason *string `json:"finish_reason"`
		}{})
		c := &h.Choices[len(h.Choices)-1]
		if s.null(i) {
			return i + 4, true
		}
		if i >= len(s.b) || s.b[i] != '{' {
			return 0, false
		}
		return s.fields(i, 2, []string{"finish_reason"}, func(_, i int) (int, bool) {
			if s.null(i) {
				return i + 4, true
			}
			v, end, ok := anthScanString(s.b, i)
			if !ok {
				return 0, false
			}
			c.FinishReason = &v
			return end, true
		})
	})
}

func (s headScanner) usage(i int, h *completionHead) (int, bool) {
	if s.null(i) {
		return i + 4, true
	}
	if i >= len(s.b) || s.b[i] != '{' {
		return 0, false
	}
	u := &struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}{}
	h.Usage = u
	return s.fields(i, 1, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}, func(field, i int) (int, bool) {
		switch field {
		case 0:
			return s.optInt(i, &u.PromptTokens)
		case 1:
			return s.optInt(i, &u.CompletionTokens)
		}
		if s.null(i) {
			return i + 4, true
		}
		if i >= len(s.b) || s.b[i] != '{' {
			return 0, false
		}
		d := &struct {
			CachedTokens int64 `json:"cached_tokens"`
		}{}
		u.PromptTokensDetails = d
		return s.fields(i, 2, []string{"cached_tokens"}, func(_, i int) (int, bool) {
			return s.optInt(i, &d.CachedTokens)
		})
	})
}

// headFoldsTo reports whether key matches one of names the way encoding/json
// matches a member to a field when the case differs (ASCII case folding, and
// the Kelvin sign and long s that fold to k and s), so that such a member is
// left to encoding/json.
func headFoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if headFold(key, n) {
			return true
		}
	}
	return false
}

func headFold(key []byte, name string) bool {
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
