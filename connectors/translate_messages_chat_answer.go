package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
	"github.com/sluicegw/sluice/guardrails"
)

// The translation of a chat-completions answer into a Messages API message,
// for a Messages request served by an upstream that does not speak the
// Messages API: the inverse of the anthropic connector's answer reading.

// chatAnswerIn is the part of a chat.completion the translation reads.
type chatAnswerIn struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          json.RawMessage   `json:"content"`
			Refusal          *string           `json:"refusal"`
			Reasoning        *string           `json:"reasoning"`
			ReasoningDetails []chatReasoningIn `json:"reasoning_details"`
			ToolCalls        []chatToolCallIn  `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *headUsage `json:"usage"`
}

// chatReasoningIn is one reasoning_details entry of an answer or a delta:
// reasoning.text (text, signature), reasoning.summary (summary) or
// reasoning.encrypted (data).
type chatReasoningIn struct {
	Type      string  `json:"type"`
	Text      *string `json:"text"`
	Summary   *string `json:"summary"`
	Signature *string `json:"signature"`
	Data      *string `json:"data"`
	Format    string  `json:"format"`
	Index     *int    `json:"index"`
}

// chatToolCallIn is a tool call of an answer, or a piece of one in a delta.
type chatToolCallIn struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// usageOf converts a chat usage.
func usageOf(u *headUsage) messages.OutUsage {
	if u == nil {
		return messages.OutUsage{}
	}
	var cached int64
	if d := u.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
	}
	in := u.PromptTokens - cached
	if in < 0 {
		in = 0
	}
	return messages.OutUsage{InputTokens: in, CacheReadInputTokens: cached, OutputTokens: u.CompletionTokens}
}

// stopReason maps a chat finish reason to a Messages stop reason. The chat
// shape does not tell a stop sequence from a natural end: both are
// end_turn.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// messageModel is the model a translated answer names: the model as the
// caller wrote it when the model asked for served, what the upstream
// reported otherwise, so that a substitution stays visible.
func messageModel(call *Call, reported string) string {
	if call == nil || call.Inbound == nil || call.Inbound.Model == "" || call.Plan == nil {
		return reported
	}
	decided := call.Plan.DecidedModel
	native := ""
	if call.Outcome != nil {
		native = call.Outcome.NativeModel
	}
	switch {
	case reported == "", reported == decided, reported == native, native != "" && guardrails.TrimVersion(reported) == native:
		return call.Inbound.Model
	case call.Resolve != nil && call.Resolve(reported) == decided:
		return call.Inbound.Model
	}
	return reported
}

// messageFromChat translates a chat.completion answer into a Messages API
// message: reasoning first (signed thinking, redacted thinking), then the
// text (or the refusal), then the tool calls.
func messageFromChat(chat []byte, call *Call) ([]byte, error) {
	var a chatAnswerIn
	if err := json.Unmarshal(chat, &a); err != nil {
		return nil, fmt.Errorf("connectors: decode chat answer: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, fmt.Errorf("connectors: the chat answer has no choice")
	}
	c := a.Choices[0]
	m := messages.OutResponse{ID: a.ID, Type: "message", Role: "assistant", Model: messageModel(call, a.Model), Usage: usageOf(a.Usage),
		Content: []json.RawMessage{}}
	finish := ""
	if c.FinishReason != nil {
		finish = *c.FinishReason
	}
	m.StopReason = stopReason(finish)
	msg := c.Message
	for _, r := range reasoningBlocks(msg.ReasoningDetails, msg.Reasoning) {
		m.Content = append(m.Content, r)
	}
	text := contentText(msg.Content)
	if text == "" && msg.Refusal != nil && *msg.Refusal != "" {
		text, m.StopReason = *msg.Refusal, "refusal"
	}
	if text != "" {
		m.Content = append(m.Content, textBlock(text))
	}
	for _, tc := range msg.ToolCalls {
		m.Content = append(m.Content, toolUseBlock(tc.ID, tc.Function.Name, tc.Function.Arguments))
	}
	return anthMarshal(m)
}

// textBlock writes a text block.
func textBlock(text string) json.RawMessage {
	b := jsonscan.AppendString([]byte(`{"type":"text","text":`), text)
	return append(b, '}')
}

// contentText reads an answer's content: a string, or an array of text
// parts joined.
func contentText(v json.RawMessage) string {
	if len(v) == 0 || anthIsNull(v) {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(v, &parts) != nil {
		return ""
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// toolUseBlock writes a tool_use block. The chat shape carries the input as
// a JSON string; one that is not an object (a stream cut by the token cap,
// say) is sent as an empty input rather than as something the Messages API
// never sends.
func toolUseBlock(id, name, args string) json.RawMessage {
	input := []byte("{}")
	if t := bytes.TrimSpace([]byte(args)); len(t) > 0 && t[0] == '{' {
		var buf bytes.Buffer
		if json.Compact(&buf, t) == nil {
			input = buf.Bytes()
		}
	}
	b := jsonscan.AppendString([]byte(`{"type":"tool_use","id":`), id)
	b = jsonscan.AppendString(append(b, `,"name":`...), name)
	b = append(append(b, `,"input":`...), input...)
	return append(b, '}')
}

// reasoningBlocks converts an answer's reasoning into thinking blocks:
// entries that share an index are one block; a reasoning.text entry becomes
// a thinking block with its signature, a summary one without, an encrypted
// entry of the Anthropic format a redacted_thinking block (another model's
// encrypted reasoning has no Messages form and is left out). Without
// entries, plain reasoning text becomes one unsigned thinking block.
func reasoningBlocks(details []chatReasoningIn, plain *string) []json.RawMessage {
	type block struct {
		thinking, signature string
		data                *string
		kind                string
	}
	var order []int
	byIndex := map[int]*block{}
	for i, d := range details {
		idx := i + 1<<20 // an entry without index is a block of its own
		if d.Index != nil {
			idx = *d.Index
		}
		b := byIndex[idx]
		if b == nil {
			b = &block{}
			byIndex[idx] = b
			order = append(order, idx)
		}
		switch d.Type {
		case "reasoning.text":
			b.kind = "thinking"
			if d.Text != nil {
				b.thinking += *d.Text
			}
			if d.Signature != nil {
				b.signature += *d.Signature
			}
		case "reasoning.summary":
			b.kind = "thinking"
			if d.Summary != nil {
				b.thinking += *d.Summary
			}
		case "reasoning.encrypted":
			if d.Format == anthReasoningFormat && d.Data != nil {
				b.kind, b.data = "redacted_thinking", d.Data
			}
		}
	}
	var out []json.RawMessage
	for _, idx := range order {
		b := byIndex[idx]
		switch b.kind {
		case "thinking":
			out = append(out, thinkingBlock(b.thinking, b.signature))
		case "redacted_thinking":
			r := jsonscan.AppendString([]byte(`{"type":"redacted_thinking","data":`), *b.data)
			out = append(out, append(r, '}'))
		}
	}
	if len(out) == 0 && plain != nil && *plain != "" {
		out = append(out, thinkingBlock(*plain, ""))
	}
	return out
}

// thinkingBlock writes a thinking block.
func thinkingBlock(thinking, signature string) json.RawMessage {
	b := jsonscan.AppendString([]byte(`{"type":"thinking","thinking":`), thinking)
	b = jsonscan.AppendString(append(b, `,"signature":`...), signature)
	return append(b, '}')
}

// MessagesError rewrites an upstream's error answer into the Messages API's
// error shape, for a Messages request served by an upstream that does not
// speak the Messages API: the type the API documents for the status, and
// the upstream's message (its whole body when it has no message member).
func MessagesError(status int, body []byte) []byte {
	b, _ := anthMarshal(ErrorEvent(ErrorTypeForStatus(status), upstreamErrorMessage(body), ""))
	return b
}

// upstreamErrorMessage is an upstream error answer's message: error.message,
// or error when it is a string, or a top-level message (Amazon Bedrock's
// errors), or the whole body when it has none of them.
func upstreamErrorMessage(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
	}
	msg := string(bytes.TrimSpace(body))
	if json.Unmarshal(body, &e) == nil && len(e.Error) == 0 && e.Message != nil && *e.Message != "" {
		return *e.Message
	}
	if len(e.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(e.Error, &s) == nil && s != "":
			msg = s
		}
	}
	return msg
}
