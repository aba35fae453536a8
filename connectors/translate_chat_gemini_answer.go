package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/gemini"
)

// The Gemini dialect's reading of a non-streaming answer: a
// GenerateContentResponse becomes a chat.completion body. The finish
// reason, usage and tool call id helpers serve the stream too.

// Response implements [Connector.Response].
func (g *vertexGemini) Response(call *Call, body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: "google-vertex"}
	var r gemini.Response
	if err := unmarshalOffStack(body, &r); err != nil {
		return nil, res, fmt.Errorf("vertex: decode generateContent answer: %w", err)
	}
	if r.Error != nil {
		return nil, res, fmt.Errorf("vertex: error answer: %s: %s", r.Error.Status, r.Error.Message)
	}
	res.ServedModel = r.ModelVersion
	res.Usage = geminiUsage(r.UsageMetadata)
	msg := chat.OutMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	hasText, hasReasoning, finish := false, false, ""
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				msg.ToolCalls = append(msg.ToolCalls, geminiToolCall(r.ResponseID, len(msg.ToolCalls), &p))
			case p.Text != nil && p.Thought:
				reasoning.WriteString(*p.Text)
				hasReasoning = true
			case p.Text != nil:
				text.WriteString(*p.Text)
				hasText = true
			}
		}
		finish = c.FinishReason
	} else if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		finish = "SAFETY" // the prompt was blocked: no candidate
	}
	res.FinishReason = geminiFinish(finish, len(msg.ToolCalls) > 0)
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	if hasReasoning {
		s := reasoning.String()
		msg.Reasoning = &s
	}
	u := res.Usage
	out := chat.Completion{
		ID: geminiAnswerID(r.ResponseID), Object: "chat.completion", Created: g.now().Unix(), Model: echoModel(call, r.ModelVersion),
		Choices: []chat.Choice{{Message: msg, Logprobs: anthNull, FinishReason: res.FinishReason}},
		Usage:   chat.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens},
	}
	out.Usage.PromptTokensDetails.CachedTokens = u.CachedTokens
	if u.ReasoningTokens > 0 {
		out.Usage.CompletionTokensDetails = &chat.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens}
	}
	b, err := anthMarshal(out)
	if err != nil {
		return nil, res, fmt.Errorf("vertex: encode answer: %w", err)
	}
	return b, res, nil
}

// geminiAnswerID is a chat answer's id: the upstream's responseId.
func geminiAnswerID(responseID string) string {
	if responseID == "" {
		return "chatcmpl-gemini"
	}
	return "chatcmpl-" + responseID
}

// geminiCallID is the id sluice gives the n-th tool call of an answer:
// generateContent names none. It is made of the answer's responseId, so
// that the calls of different answers differ, and carries the part's
// thoughtSignature (the model's signed thinking, which Gemini asks to get
// back with the call in a later turn): "call_ts<length>_<signature>_" in
// front, the signature in base64url (an id stays within
// [A-Za-z0-9_-]). The next request reads the signature back
// ([geminiSignatureOf]) and finds the function's name by the id
// (translate_chat_gemini_turns.go).
func geminiCallID(responseID string, n int, signature string) string {
	id := "call_"
	if signature != "" {
		sig := strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(signature), "=")
		id += "ts" + strconv.Itoa(len(sig)) + "_" + sig + "_"
	}
	return id + responseID + "_" + strconv.Itoa(n)
}

// geminiSignatureOf is the thoughtSignature a tool call id made by
// [geminiCallID] carries, in standard base64; "" when it carries none.
func geminiSignatureOf(id string) string {
	rest, ok := strings.CutPrefix(id, "call_ts")
	if !ok {
		return ""
	}
	digits, rest, ok := strings.Cut(rest, "_")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n <= 0 || n > len(rest) {
		return ""
	}
	sig := strings.NewReplacer("-", "+", "_", "/").Replace(rest[:n])
	if pad := len(sig) % 4; pad != 0 {
		sig += strings.Repeat("=", 4-pad)
	}
	return sig
}

// geminiToolCall is a functionCall part as a chat tool call.
func geminiToolCall(responseID string, n int, p *gemini.Part) chat.OutToolCall {
	fc := p.FunctionCall
	tc := chat.OutToolCall{ID: geminiCallID(responseID, n, p.ThoughtSignature), Type: "function"}
	tc.Function.Name = fc.Name
	tc.Function.Arguments = "{}"
	if len(fc.Args) > 0 && !anthIsNull(fc.Args) {
		var buf bytes.Buffer
		if json.Compact(&buf, fc.Args) == nil {
			tc.Function.Arguments = buf.String()
		}
	}
	return tc
}

// geminiFinish maps a finish reason to a chat-completions one: a turn that
// calls functions ends in tool_calls.
func geminiFinish(reason string, toolCalls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	if toolCalls {
		return "tool_calls"
	}
	return "stop" // STOP, and any other reason
}

// geminiUsage reads usageMetadata: the prompt counts the cached part
// (cachedContentTokenCount) as the chat-completions API does; the
// completion counts the thinking (thoughtsTokenCount, billed as output)
// beside the candidates.
func geminiUsage(u *gemini.UsageMetadata) Usage {
	if u == nil {
		return Usage{}
	}
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return Usage{
		PromptTokens:     n(u.PromptTokenCount),
		CompletionTokens: n(u.CandidatesTokenCount) + n(u.ThoughtsTokenCount),
		CachedTokens:     n(u.CachedContentTokenCount),
		ReasoningTokens:  n(u.ThoughtsTokenCount),
	}
}
