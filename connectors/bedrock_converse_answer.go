package connectors

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/wire/converse"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The Converse dialect's reading of a non-streaming answer: the Converse
// answer is retold as the Messages API's message and read by the anthropic
// connector's reader, so that a chat caller gets the same chat.completion a
// Claude answer would give (tool calls, reasoning, usage, finish reason).

// Response implements [Connector.Response].
func (c *bedrockConverse) Response(call *Call, body []byte) ([]byte, Result, error) {
	msg, err := converseAnswer(body, callModel(call), c.newID())
	if err != nil {
		return nil, Result{ServedProvider: bedrockProvider}, err
	}
	return c.anth.chatAnswer(call, msg)
}

// bedrockAnswerID names a Converse answer, which has no id of its own.
func bedrockAnswerID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-bedrock-" + hex.EncodeToString(b[:])
}

// converseAnswer retells a Converse answer as a Messages API message of the
// model it was sent to (Converse reports none), named id.
func converseAnswer(body []byte, model, id string) (*messages.Response, error) {
	var r converse.Response
	if err := unmarshalOffStack(body, &r); err != nil {
		return nil, fmt.Errorf("bedrock: decode Converse answer: %w", err)
	}
	if r.Output.Message == nil {
		return nil, fmt.Errorf("bedrock: the Converse answer has no output message")
	}
	out := messages.Response{ID: id, Type: "message", Role: "assistant", Model: model, Content: []messages.ResponseBlock{}}
	for _, b := range r.Output.Message.Content {
		switch {
		case b.Text != nil:
			out.Content = append(out.Content, messages.ResponseBlock{Type: "text", Text: *b.Text})
		case b.ToolUse != nil:
			input := b.ToolUse.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			out.Content = append(out.Content, messages.ResponseBlock{Type: "tool_use", ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: input})
		case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
			rt := b.ReasoningContent.ReasoningText
			out.Content = append(out.Content, messages.ResponseBlock{Type: "thinking", Thinking: rt.Text, Signature: rt.Signature})
		case b.ReasoningContent != nil && b.ReasoningContent.RedactedContent != nil:
			out.Content = append(out.Content, messages.ResponseBlock{Type: "redacted_thinking", Data: *b.ReasoningContent.RedactedContent})
		}
	}
	stop := converseStop(r.StopReason)
	out.StopReason = &stop
	out.Usage = converseUsage(r.Usage)
	return &out, nil
}

// converseStop is the Messages API's stop reason of a Converse stopReason:
// the same names, but a guardrail's or content filter's intervention,
// which the Messages API calls a refusal (content_filter to a chat
// caller).
func converseStop(s string) string {
	switch s {
	case "guardrail_intervened", "content_filtered":
		return "refusal"
	case "":
		return "end_turn"
	}
	return s
}

// converseUsage is a Converse usage as the Messages API's: inputTokens
// counts the input neither read from nor written to the prompt cache, as
// the Messages API's input_tokens does, and the cache's reads and writes
// are reported beside it (so prompt_tokens is their sum).
func converseUsage(u *converse.Usage) messages.Usage {
	if u == nil {
		return messages.Usage{}
	}
	in, out, rd, wr := u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheWriteInputTokens
	return messages.Usage{InputTokens: &in, OutputTokens: &out, CacheReadInputTokens: &rd, CacheCreationInputTokens: &wr}
}

// converseUsageJSON appends a Converse usage as the Messages API's usage
// object.
func converseUsageJSON(b []byte, u *converse.Usage) []byte {
	if u == nil {
		return append(b, "{}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheReadInputTokens, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheWriteInputTokens, 10)
	return append(b, '}')
}
