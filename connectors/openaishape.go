package connectors

import "encoding/json"

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
