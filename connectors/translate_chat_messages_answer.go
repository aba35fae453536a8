package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The anthropic connector's reading of a non-streaming answer: a Messages
// API message becomes a chat.completion body. The stop reason and usage
// readers serve the stream too.

// Response implements [Connector.Response].
func (c *anthropic) Response(call *Call, body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: c.served()}
	var m messages.Response
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, res, fmt.Errorf("anthropic: decode answer: %w", err)
	}
	if m.Type == "error" || m.Error != nil {
		var e messages.Error
		if m.Error != nil {
			e = *m.Error
		}
		return nil, res, newStreamError(e)
	}
	if m.Type != "message" {
		return nil, res, fmt.Errorf("anthropic: answer of type %q, want message", m.Type)
	}
	return c.chatAnswer(call, &m)
}

// chatAnswer writes a Messages API message as a chat.completion body and
// reads back who served (the bedrock connector's Converse dialect hands
// it the message it retold).
func (c *anthropic) chatAnswer(call *Call, m *messages.Response) ([]byte, Result, error) {
	res := Result{ServedProvider: c.served()}
	res.ServedModel = m.Model
	var tok anthTokens
	tok.merge(m.Usage)
	res.Usage = tok.usage()
	res.FinishReason = anthFinish(m.StopReason)

	msg := chat.OutMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	hasText := false
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "thinking", "redacted_thinking":
			msg.ReasoningDetails = append(msg.ReasoningDetails, anthReasoningDetail(b, len(msg.ReasoningDetails)))
			reasoning.WriteString(b.Thinking)
		case "tool_use":
			tc := chat.OutToolCall{ID: b.ID, Type: "function"}
			tc.Function.Name = b.Name
			tc.Function.Arguments = "{}"
			if len(b.Input) > 0 && !anthIsNull(b.Input) {
				var buf bytes.Buffer
				if err := json.Compact(&buf, b.Input); err != nil {
					return nil, res, fmt.Errorf("anthropic: tool input: %w", err)
				}
				tc.Function.Arguments = buf.String()
			}
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	if len(msg.ReasoningDetails) > 0 {
		s := reasoning.String()
		msg.Reasoning = &s
	}
	out := chat.Completion{
		ID: m.ID, Object: "chat.completion", Created: c.now().Unix(), Model: echoModel(call, m.Model),
		Choices: []chat.Choice{{Message: msg, Logprobs: anthNull, FinishReason: res.FinishReason}},
		Usage:   chat.Usage{PromptTokens: tok.prompt(), CompletionTokens: tok.output, TotalTokens: tok.prompt() + tok.output},
	}
	out.Usage.PromptTokensDetails.CachedTokens = tok.cacheRead
	out.Usage.PromptTokensDetails.CacheWriteTokens = tok.cacheCreate
	b, err := anthMarshal(out)
	if err != nil {
		return nil, res, fmt.Errorf("anthropic: encode answer: %w", err)
	}
	return b, res, nil
}

// anthReasoningDetail is the reasoning_details entry of a thinking block (a
// reasoning.text entry with its signature) or a redacted_thinking block (a
// reasoning.encrypted entry with its data), the index-th of the answer.
// Client and marketplace send it back as it is, so the next turn's request
// carries the block unchanged (anthReasoning in translate_chat_messages_turns.go).
func anthReasoningDetail(b messages.ResponseBlock, index int) chat.ReasoningDetail {
	d := chat.ReasoningDetail{Format: anthReasoningFormat, Index: index}
	if b.Type == "redacted_thinking" {
		d.Type, d.Data = "reasoning.encrypted", &b.Data
		return d
	}
	d.Type, d.Text, d.Signature = "reasoning.text", &b.Thinking, &b.Signature
	return d
}

// anthFinish maps a stop reason to a chat-completions finish reason.
func anthFinish(stop *string) string {
	if stop == nil {
		return "stop"
	}
	switch *stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn and any new reason
}

// anthTokens is an answer's usage, totals resolved.
type anthTokens struct {
	input, output, cacheCreate, cacheRead int64
}

// merge takes the members a usage object reports; absent ones keep their
// value (a stream's message_delta may repeat only output_tokens).
func (t *anthTokens) merge(u messages.Usage) {
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&t.input, u.InputTokens)
	set(&t.output, u.OutputTokens)
	set(&t.cacheCreate, u.CacheCreationInputTokens)
	set(&t.cacheRead, u.CacheReadInputTokens)
}

// prompt is every input token, cached or not: the chat-completions API counts
// cached tokens inside prompt_tokens.
func (t anthTokens) prompt() int64 { return t.input + t.cacheCreate + t.cacheRead }

func (t anthTokens) usage() Usage {
	return Usage{PromptTokens: t.prompt(), CompletionTokens: t.output, CachedTokens: t.cacheRead, CacheWriteTokens: t.cacheCreate}
}

// ChatError retells an upstream's error answer in the chat-completions
// API's error shape, for a chat caller served by translation onto an
// upstream that answers in another API (Anthropic's Messages). The meaning
// is kept, not reworded: the status stays the caller's to read (it is not in
// the body), and the upstream's message, type, param and code are carried
// over as they are (Anthropic's errors have a type and no code: code is
// null; Google's have a numeric code and a status name, which becomes the
// code). A body that is not an error object becomes the message whole,
// with a type that follows from the status.
func ChatError(status int, body []byte) []byte {
	var in struct {
		Error json.RawMessage `json:"error"`
	}
	out := chat.Error{Message: upstreamErrorMessage(body)}
	if json.Unmarshal(body, &in) == nil && len(in.Error) > 0 {
		var e struct {
			Type   string          `json:"type"`
			Param  *string         `json:"param"`
			Code   json.RawMessage `json:"code"`
			Status string          `json:"status"`
		}
		if json.Unmarshal(in.Error, &e) == nil {
			out.Type, out.Param = e.Type, e.Param
			if len(e.Code) > 0 && !bytes.Equal(e.Code, []byte("null")) {
				out.Code = e.Code
			}
			if e.Type == "" && e.Status != "" {
				// Google APIs' shape: code is the HTTP status, status
				// its canonical name (INVALID_ARGUMENT, ...), the code.
				out.Code, _ = json.Marshal(e.Status)
			}
		}
	}
	if out.Type == "" {
		out.Type = ErrorTypeForStatus(status)
	}
	b, _ := json.Marshal(chat.ErrorBody{Error: out})
	return b
}
