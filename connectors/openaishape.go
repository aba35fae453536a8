package connectors

import (
	"bytes"
	"encoding/json"
)

// completionHead is the part of an OpenAI-shaped completion or chunk the
// connectors read back. Upstream-specific members are decoded by each
// connector from the same bytes.
type completionHead struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Choices  []struct {
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// readHead fills the result from an OpenAI-shaped body or chunk; empty fields
// of the chunk leave the result as it was, so a stream's result accumulates.
func readHead(b []byte, res *Result) error {
	var h completionHead
	if !scanHead(b, &h) {
		h = completionHead{}
		if err := json.Unmarshal(b, &h); err != nil {
			return err
		}
	}
	applyHead(&h, res)
	return nil
}

// applyHead copies what a head says into the result.
func applyHead(h *completionHead, res *Result) {
	if h.Model != "" {
		res.ServedModel = h.Model
	}
	if h.Provider != "" {
		res.ServedProvider = h.Provider
	}
	if len(h.Choices) > 0 && h.Choices[0].FinishReason != nil && *h.Choices[0].FinishReason != "" {
		res.FinishReason = *h.Choices[0].FinishReason
	}
	if h.Usage != nil {
		res.Usage = Usage{PromptTokens: h.Usage.PromptTokens, CompletionTokens: h.Usage.CompletionTokens}
		if d := h.Usage.PromptTokensDetails; d != nil {
			res.Usage.CachedTokens = d.CachedTokens
		}
	}
}

// stripMembers removes upstream-specific top-level members from a JSON
// object; the body is returned unchanged when it has none of them.
func stripMembers(b []byte, names ...string) []byte {
	out, _ := stripInto(nil, b, names)
	return out
}

// stripInto is stripMembers appending the stripped body to dst (a stream
// reuses one buffer); stripped is false, and b returned as it is, when b
// holds none of the names. The other members keep their bytes and order
// (appendStripped); a body that walk cannot take (an escaped key, invalid
// JSON) is decoded and re-encoded.
func stripInto(dst, b []byte, names []string) (_ []byte, stripped bool) {
	if !mayHoldMember(b, names) {
		return b, false
	}
	if out, ok := appendStripped(dst, b, names); ok {
		return out, true
	}
	var m Body
	if json.Unmarshal(b, &m) != nil {
		return b, false
	}
	for _, n := range names {
		delete(m, n)
	}
	return encodeBody(m), true
}

// mayHoldMember is the cheap test before looking for members: false when
// no name can be a member of b, because none appears in quotes and there is
// no \u escape (the only way a key can spell a name of letters and
// underscores differently).
func mayHoldMember(b []byte, names []string) bool {
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
// headMaxDepth.
func appendStripped(dst, b []byte, names []string) (_ []byte, ok bool) {
	s := headScanner{b: b}
	i := s.space(0)
	if i >= len(b) || b[i] != '{' {
		return dst, false
	}
	out := append(dst, '{')
	kept := false
	end, ok := s.list(i, 0, '}', func(m int) (int, bool) {
		key, v, ok := s.key(m)
		if !ok {
			return 0, false
		}
		end, ok := s.value(v, 1)
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
	if !ok || s.space(end) != len(b) {
		return dst, false
	}
	return append(out, '}'), true
}
