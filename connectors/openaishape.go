package connectors

import (
	"encoding/json"
	"slices"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
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
	Usage *headUsage `json:"usage"`
}

// headUsage is the usage a head reports; Cost is the marketplaces' billed
// cost in USD (OpenRouter and the Vercel AI Gateway send usage.cost).
type headUsage struct {
	PromptTokens        int64          `json:"prompt_tokens"`
	CompletionTokens    int64          `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
	Cost                *float64       `json:"cost"`
}

// promptDetails is usage.prompt_tokens_details: the cached part of the
// prompt, and (OpenRouter) the part written to the cache.
type promptDetails struct {
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// readHead fills the result from an OpenAI-shaped body or chunk; empty fields
// of the chunk leave the result as it was, so a stream's result accumulates.
func readHead(b []byte, res *Result) error {
	var h completionHead
	if !scanHead(b, &h) {
		h = completionHead{}
		if err := unmarshalOffStack(b, &h); err != nil {
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
			res.Usage.CachedTokens, res.Usage.CacheWriteTokens = d.CachedTokens, d.CacheWriteTokens
		}
		if h.Usage.Cost != nil {
			res.Cost, res.CostReported = *h.Usage.Cost, true
		}
	}
}

// withStreamUsage asks a stream for its usage (stream_options.include_usage)
// when the caller did not, keeping the caller's other stream options:
// without usage a stream's row has no tokens and no cost, and no budget is
// charged for it. added reports that the caller did not ask, so the
// usage-only chunk that answers is read and not relayed: the caller gets
// what it asked for.
func withStreamUsage(body Body, set []member) (_ []member, added bool) {
	if string(jsonscan.TrimSpace(body["stream"])) != "true" {
		return set, false
	}
	var opts map[string]json.RawMessage
	if raw := body["stream_options"]; raw != nil && json.Unmarshal(raw, &opts) != nil {
		return set, false // not an object: the upstream says so
	}
	if string(jsonscan.TrimSpace(opts["include_usage"])) == "true" {
		return set, false
	}
	if opts == nil {
		opts = map[string]json.RawMessage{}
	}
	opts["include_usage"] = json.RawMessage("true")
	return append(set, member{"stream_options", encodeBody(Body(opts))}), true
}

// stripInChoices appends b to dst without the named members of each
// choice's message and delta (where the Vercel AI Gateway puts its routing
// report); stripped is false, and b returned as it is, when there were
// none. The rest keeps its bytes.
func stripInChoices(dst, b []byte, names []string) (_ []byte, stripped bool) {
	if !jsonscan.MayHoldMember(b, names) {
		return b, false
	}
	choices := jsonscan.Member(b, "choices")
	if len(choices) == 0 || choices[0] != '[' {
		return b, false
	}
	s := jsonscan.NewScanner(b)
	copied := 0
	// The answer without the members fits in b's length: one buffer, each
	// stripped part written straight into it.
	out := slices.Grow(dst, len(b))
	_, ok := s.Array(cap(b)-cap(choices), 1, func(e int) (int, bool) {
		end, ok := s.Value(e, 1)
		if !ok {
			return 0, false
		}
		elem := b[e:end]
		var spans [2][]byte
		for j, key := range [2]string{"message", "delta"} {
			spans[j] = jsonscan.Member(elem, key)
		}
		if spans[0] != nil && spans[1] != nil && cap(spans[0]) < cap(spans[1]) {
			spans[0], spans[1] = spans[1], spans[0] // in document order
		}
		for _, v := range spans {
			if len(v) == 0 || v[0] != '{' {
				continue
			}
			at := cap(b) - cap(v)
			n := len(out)
			grown, did := jsonscan.StripInto(append(out, b[copied:at]...), v, names)
			if !did {
				out = out[:n]
				continue
			}
			out, copied = grown, at+len(v)
		}
		return end, true
	})
	if !ok || copied == 0 {
		return b, false
	}
	return append(out, b[copied:]...), true
}
