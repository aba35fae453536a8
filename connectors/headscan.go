package connectors

import "github.com/sluicegw/sluice/connectors/internal/jsonscan"

// scanHead decodes a completion or chunk of the plain OpenAI shape into h
// without reflection: the non-streaming path decodes every answer to read
// back who served, and encoding/json was about 5 % of the gateway's CPU
// there. It returns false, leaving the decision to encoding/json (which also
// reports invalid JSON), for anything it does not handle exactly as
// encoding/json would: a top level that is not an object, a known member
// spelled in another case, with escapes or given twice, a value of an
// unexpected type, numbers that are not plain integers, strings that are not
// valid UTF-8, nesting deeper than [jsonscan.MaxDepth], and any invalid JSON.
// When it returns true, b is valid JSON and h holds what json.Unmarshal
// would have decoded into a zero completionHead (FuzzScanHead holds it to
// that).
func scanHead(b []byte, h *completionHead) bool {
	s := jsonscan.NewScanner(b)
	i := s.Space(0)
	if !s.Is(i, '{') {
		return false
	}
	i, ok := s.Fields(i, 0, []string{"model", "provider", "choices", "usage"}, func(field, i int) (int, bool) {
		switch field {
		case 0:
			return s.DecodeString(i, &h.Model)
		case 1:
			return s.DecodeString(i, &h.Provider)
		case 2:
			return scanChoices(s, i, h)
		default:
			return scanUsage(s, i, h)
		}
	})
	if !ok {
		return false
	}
	return s.Space(i) == len(b)
}

// scanChoices decodes the choices array at i: each choice's finish reason.
func scanChoices(s jsonscan.Scanner, i int, h *completionHead) (int, bool) {
	if s.Null(i) {
		return i + 4, true
	}
	if !s.Is(i, '[') {
		return 0, false
	}
	h.Choices = h.Choices[:0]
	return s.Array(i, 1, func(i int) (int, bool) {
		h.Choices = append(h.Choices, struct {
			FinishReason *string `json:"finish_reason"`
		}{})
		c := &h.Choices[len(h.Choices)-1]
		if s.Null(i) {
			return i + 4, true
		}
		if !s.Is(i, '{') {
			return 0, false
		}
		return s.Fields(i, 2, []string{"finish_reason"}, func(_, i int) (int, bool) {
			if s.Null(i) {
				return i + 4, true
			}
			v, end, ok := jsonscan.ScanString(s.Bytes(), i)
			if !ok {
				return 0, false
			}
			c.FinishReason = &v
			return end, true
		})
	})
}

// scanUsage decodes the usage object at i.
func scanUsage(s jsonscan.Scanner, i int, h *completionHead) (int, bool) {
	if s.Null(i) {
		return i + 4, true
	}
	if !s.Is(i, '{') {
		return 0, false
	}
	u := &headUsage{}
	h.Usage = u
	return s.Fields(i, 1, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "cost"}, func(field, i int) (int, bool) {
		switch field {
		case 0:
			return s.DecodeInt(i, &u.PromptTokens)
		case 1:
			return s.DecodeInt(i, &u.CompletionTokens)
		case 3:
			return s.DecodeFloat(i, &u.Cost)
		}
		if s.Null(i) {
			return i + 4, true
		}
		if !s.Is(i, '{') {
			return 0, false
		}
		d := &promptDetails{}
		u.PromptTokensDetails = d
		return s.Fields(i, 2, []string{"cached_tokens", "cache_write_tokens"}, func(field, i int) (int, bool) {
			if field == 1 {
				return s.DecodeInt(i, &d.CacheWriteTokens)
			}
			return s.DecodeInt(i, &d.CachedTokens)
		})
	})
}
