// Package messages holds the wire types of the Anthropic Messages API
// (POST /v1/messages) that sluice reads and writes: the request a
// chat-completions request is translated into, the message an answer is
// and a stream's events, as the upstream sends them and as sluice writes
// them back to a Messages caller (the Out types, in the API's member
// order), and the API's error body. It imports nothing of sluice's, so
// that every stage that speaks the API shares one definition.
//
// The shapes follow Anthropic's published API reference and the answers
// recorded from the live API in testdata/recorded/anthropic.
package messages

import (
	"bytes"
	"encoding/json"
)

// Version is the Messages API version sluice speaks (the anthropic-version
// header).
const Version = "2023-06-01"

// --- Request -----------------------------------------------------------------

// Request is a Messages API request body. Field order is the order on the
// wire, so the same request always compiles to the same bytes.
type Request struct {
	Model         string          `json:"model"`
	MaxTokens     int64           `json:"max_tokens"`
	System        Content         `json:"system,omitempty"`
	Messages      []Message       `json:"messages"`
	Metadata      *Metadata       `json:"metadata,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"top_p,omitempty"`
	TopK          json.RawMessage `json:"top_k,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
}

// Message is one turn; roles alternate (consecutive same-role turns are
// merged before sending).
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a list of content blocks. It encodes as a plain string when
// it is one text block without a cache marker (the Messages API accepts both
// forms; the string is what a hand-written request would send).
type Content []Block

// MarshalJSON implements [json.Marshaler].
func (c Content) MarshalJSON() ([]byte, error) {
	if len(c) == 1 && c[0].Type == "text" && len(c[0].CacheControl) == 0 {
		return Marshal(c[0].Text)
	}
	return Marshal([]Block(c))
}

// Block is a content block of any type: text, image, tool_use,
// tool_result, thinking or redacted_thinking. Members not used by a type stay
// empty and are omitted.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// RareMembers holds the members of image, thinking and
	// redacted_thinking blocks, nil for the others: a request's blocks are
	// allocated on the hot path, and a text block stays as small as it was.
	// Embedded, so encoding/json writes its members in this place.
	*RareMembers
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: a JSON string or an array of text
	// blocks.
	Content      json.RawMessage `json:"content,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// RareMembers are the members of the rarer block types.
type RareMembers struct {
	// Thinking and Signature are a thinking block's, Data a
	// redacted_thinking block's: pointers, so that a block replayed with an
	// empty text still sends the member the upstream requires.
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
	// Source is an image block's.
	Source *ImageSource `json:"source,omitempty"`
}

// ImageSource is an image block's source: base64 data or a URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Metadata is the request's metadata object.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Tool is a client tool definition.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// ToolChoice is how the model may use the tools: auto, any, tool (with a
// name) or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// --- Response, as the upstream sends it --------------------------------------

// Response is a Messages API message (a non-streaming answer, or the
// skeleton in a stream's message_start event).
type Response struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    []ResponseBlock `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      Usage           `json:"usage"`
	Error      *Error          `json:"error"`
}

// ResponseBlock is a content block of an answer: text, tool_use, thinking
// (its text and signature) or redacted_thinking (its data). Other types
// (server tool blocks, ...) are skipped.
type ResponseBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// Usage is the token usage of an answer. Pointers tell a member that is
// absent from one that is zero (a stream's message_delta repeats only some).
type Usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// Error is the error object of an error answer or an error event.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// --- Stream events, as the upstream sends them --------------------------------

// StartEvent is a message_start event.
type StartEvent struct {
	Message Response `json:"message"`
}

// BlockStartEvent is a content_block_start event.
type BlockStartEvent struct {
	Index        int           `json:"index"`
	ContentBlock ResponseBlock `json:"content_block"`
}

// MessageDeltaEvent is a message_delta event: the stop reason and the
// cumulative usage.
type MessageDeltaEvent struct {
	Delta struct {
		StopReason *string `json:"stop_reason"`
	} `json:"delta"`
	Usage Usage `json:"usage"`
}

// ErrorEvent is an error event (and the body of an error answer).
type ErrorEvent struct {
	Error Error `json:"error"`
}

// --- Written to a Messages caller ---------------------------------------------

// OutResponse is a Messages API message as sluice writes it (a chat answer
// translated), in the API's member order.
type OutResponse struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   string            `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        OutUsage          `json:"usage"`
}

// OutUsage is a message's usage: the chat shape counts cached tokens inside
// the prompt, the Messages API beside the input.
type OutUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// ErrorBody is a Messages API error as sluice writes it, the data of an
// error event and the body of an error answer:
// {"type":"error","error":{"type":…,"message":…}}, with sluice's own code
// beside them when there is one.
type ErrorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code,omitempty"`
	} `json:"error"`
}

// OutStartEvent is the message_start event sluice writes, in the API's
// member order, as are the other Out events.
type OutStartEvent struct {
	Type    string   `json:"type"`
	Message OutStart `json:"message"`
}

// OutStart is the message skeleton of an [OutStartEvent]: no content, no
// stop reason yet.
type OutStart struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        OutUsage          `json:"usage"`
}

// TypeEvent is an event that has only its type (message_stop).
type TypeEvent struct {
	Type string `json:"type"`
}

// BlockEvent is a content_block_start, _delta or _stop event sluice writes.
type BlockEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"`
}

// OutMessageDeltaEvent is the message_delta event sluice writes: the stop
// reason and the usage.
type OutMessageDeltaEvent struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage OutUsage `json:"usage"`
}

// Marshal encodes without HTML escaping, as the connectors encode every
// body: prompts are relayed as written.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
