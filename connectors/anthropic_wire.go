package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// Wire types of the direct Anthropic connector: the Messages API's request,
// response and stream events. The OpenAI chat-completions shapes it decodes
// from requests or writes into answers are in package wire/chat; the
// translation itself lives in translate_chat_messages.go,
// translate_chat_messages_answer.go and translate_chat_messages_stream.go.

// anthropicVersion is the Messages API version the connector speaks.
const anthropicVersion = "2023-06-01"

// anthDefaultMaxTokens is sent when the request sets no limit: the Messages
// API requires max_tokens, the chat-completions API does not.
const anthDefaultMaxTokens = 4096

// --- Messages API request ----------------------------------------------------

// anthRequest is a Messages API request body. Field order is the order on the
// wire, so the same request always compiles to the same bytes.
type anthRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int64           `json:"max_tokens"`
	System        anthContent     `json:"system,omitempty"`
	Messages      []anthMessage   `json:"messages"`
	Metadata      *anthMetadata   `json:"metadata,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"top_p,omitempty"`
	TopK          json.RawMessage `json:"top_k,omitempty"`
	Tools         []anthTool      `json:"tools,omitempty"`
	ToolChoice    *anthToolChoice `json:"tool_choice,omitempty"`
}

// anthMessage is one turn; roles alternate (consecutive same-role turns are
// merged before sending).
type anthMessage struct {
	Role    string      `json:"role"`
	Content anthContent `json:"content"`
}

// anthContent is a list of content blocks. It encodes as a plain string when
// it is one text block without a cache marker (the Messages API accepts both
// forms; the string is what a hand-written request would send).
type anthContent []anthBlock

// MarshalJSON implements [json.Marshaler].
func (c anthContent) MarshalJSON() ([]byte, error) {
	if len(c) == 1 && c[0].Type == "text" && len(c[0].CacheControl) == 0 {
		return anthMarshal(c[0].Text)
	}
	return anthMarshal([]anthBlock(c))
}

// anthBlock is a content block of any type: text, image, tool_use,
// tool_result, thinking or redacted_thinking. Members not used by a type stay
// empty and are omitted.
type anthBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// anthRareMembers holds the members of image, thinking and
	// redacted_thinking blocks, nil for the others: a request's blocks are
	// allocated on the hot path, and a text block stays as small as it was.
	// Embedded, so encoding/json writes its members in this place.
	*anthRareMembers
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: a JSON string or an array of text
	// blocks.
	Content      json.RawMessage `json:"content,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// anthRareMembers are the members of the rarer block types.
type anthRareMembers struct {
	// Thinking and Signature are a thinking block's, Data a
	// redacted_thinking block's: pointers, so that a block replayed with an
	// empty text still sends the member the upstream requires.
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
	// Source is an image block's.
	Source *anthImageSource `json:"source,omitempty"`
}

// anthImageSource is an image block's source: base64 data or a URL.
type anthImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// anthMetadata is the request's metadata object.
type anthMetadata struct {
	UserID string `json:"user_id"`
}

// anthTool is a client tool definition.
type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// anthToolChoice is how the model may use the tools: auto, any, tool (with a
// name) or none.
type anthToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// --- Messages API response ---------------------------------------------------

// anthResponse is a Messages API message (a non-streaming answer, or the
// skeleton in a stream's message_start event).
type anthResponse struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    []anthRespBlock `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      anthUsage       `json:"usage"`
	Error      *anthError      `json:"error"`
}

// anthRespBlock is a content block of an answer: text, tool_use, thinking
// (its text and signature) or redacted_thinking (its data). Other types
// (server tool blocks, ...) are skipped.
type anthRespBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// anthReasoningFormat is the format the reasoning_details of an answer name
// for Anthropic's thinking blocks, as the marketplaces that serve its models
// write it; only entries of this format are sent back as thinking blocks.
const anthReasoningFormat = "anthropic-claude-v1"

// anthUsage is the token usage of an answer. Pointers tell a member that is
// absent from one that is zero (a stream's message_delta repeats only some).
type anthUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// anthError is the error object of an error answer or an error event.
type anthError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// --- Messages API stream events ----------------------------------------------

// anthStartEvent is a message_start event.
type anthStartEvent struct {
	Message anthResponse `json:"message"`
}

// anthBlockStartEvent is a content_block_start event.
type anthBlockStartEvent struct {
	Index        int           `json:"index"`
	ContentBlock anthRespBlock `json:"content_block"`
}

// anthMessageDeltaEvent is a message_delta event: the stop reason and the
// cumulative usage.
type anthMessageDeltaEvent struct {
	Delta struct {
		StopReason *string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthUsage `json:"usage"`
}

// anthErrorEvent is an error event (and the body of an error answer).
type anthErrorEvent struct {
	Error anthError `json:"error"`
}

// --- Raw values ----------------------------------------------------------------

// anthNull is the JSON null.
var anthNull = json.RawMessage("null")

// anthIsNull reports whether a raw member is absent (empty) or null.
func anthIsNull(v json.RawMessage) bool {
	return len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), anthNull)
}

// --- Encoding -----------------------------------------------------------------

// anthMarshal encodes without HTML escaping: prompts are relayed as written.
func anthMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// The appenders below write exactly what anthMarshal (encoding/json without
// HTML escaping) writes for the same values, without reflection: the tests
// compare both on the corpus and under the fuzzer.

// errAnthAppend is returned by an appender for a value it does not vouch for;
// the caller then encodes with anthMarshal, which reports the error itself.
var errAnthAppend = errors.New("anthropic: value left to encoding/json")

// anthAppendRequest appends a Messages request body to b.
func anthAppendRequest(b []byte, r *anthRequest) ([]byte, error) {
	var err error
	b = append(b, `{"model":`...)
	b = jsonscan.AppendString(b, r.Model)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, r.MaxTokens, 10)
	if len(r.System) > 0 {
		b = append(b, `,"system":`...)
		if b, err = anthAppendContent(b, r.System); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"messages":`...)
	if r.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonscan.AppendString(b, m.Role)
			b = append(b, `,"content":`...)
			if b, err = anthAppendContent(b, m.Content); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.Metadata != nil {
		b = append(b, `,"metadata":{"user_id":`...)
		b = jsonscan.AppendString(b, r.Metadata.UserID)
		b = append(b, '}')
	}
	if len(r.StopSequences) > 0 {
		b = append(b, `,"stop_sequences":[`...)
		for i, s := range r.StopSequences {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonscan.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	for _, m := range [...]struct {
		name string
		raw  json.RawMessage
	}{{`,"temperature":`, r.Temperature}, {`,"top_p":`, r.TopP}, {`,"top_k":`, r.TopK}} {
		if len(m.raw) > 0 {
			b = append(b, m.name...)
			if b, err = anthAppendRaw(b, m.raw); err != nil {
				return nil, err
			}
		}
	}
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonscan.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonscan.AppendString(b, t.Description)
			}
			b = append(b, `,"input_schema":`...)
			if b, err = anthAppendRaw(b, t.InputSchema); err != nil {
				return nil, err
			}
			if len(t.CacheControl) > 0 {
				b = append(b, `,"cache_control":`...)
				if b, err = anthAppendRaw(b, t.CacheControl); err != nil {
					return nil, err
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if tc := r.ToolChoice; tc != nil {
		b = append(b, `,"tool_choice":{"type":`...)
		b = jsonscan.AppendString(b, tc.Type)
		if tc.Name != "" {
			b = append(b, `,"name":`...)
			b = jsonscan.AppendString(b, tc.Name)
		}
		if tc.DisableParallelToolUse {
			b = append(b, `,"disable_parallel_tool_use":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// anthAppendContent appends content as [anthContent.MarshalJSON] encodes it.
func anthAppendContent(b []byte, c anthContent) ([]byte, error) {
	if len(c) == 1 && c[0].Type == "text" && len(c[0].CacheControl) == 0 {
		return jsonscan.AppendString(b, c[0].Text), nil
	}
	if c == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i := range c {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = anthAppendBlock(b, &c[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// anthAppendBlock appends a content block, its empty members omitted.
func anthAppendBlock(b []byte, k *anthBlock) ([]byte, error) {
	var err error
	b = append(b, `{"type":`...)
	b = jsonscan.AppendString(b, k.Type)
	if k.Text != "" {
		b = append(b, `,"text":`...)
		b = jsonscan.AppendString(b, k.Text)
	}
	if r := k.anthRareMembers; r != nil {
		b = anthAppendRare(b, r)
	}
	if k.ID != "" {
		b = append(b, `,"id":`...)
		b = jsonscan.AppendString(b, k.ID)
	}
	if k.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonscan.AppendString(b, k.Name)
	}
	if len(k.Input) > 0 {
		b = append(b, `,"input":`...)
		if b, err = anthAppendRaw(b, k.Input); err != nil {
			return nil, err
		}
	}
	if k.ToolUseID != "" {
		b = append(b, `,"tool_use_id":`...)
		b = jsonscan.AppendString(b, k.ToolUseID)
	}
	if len(k.Content) > 0 {
		b = append(b, `,"content":`...)
		if b, err = anthAppendRaw(b, k.Content); err != nil {
			return nil, err
		}
	}
	if len(k.CacheControl) > 0 {
		b = append(b, `,"cache_control":`...)
		if b, err = anthAppendRaw(b, k.CacheControl); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// anthAppendRare appends the members of an image, thinking or
// redacted_thinking block, its empty ones omitted.
func anthAppendRare(b []byte, r *anthRareMembers) []byte {
	for _, m := range [...]struct {
		name string
		s    *string
	}{{`,"thinking":`, r.Thinking}, {`,"signature":`, r.Signature}, {`,"data":`, r.Data}} {
		if m.s != nil {
			b = append(b, m.name...)
			b = jsonscan.AppendString(b, *m.s)
		}
	}
	if s := r.Source; s != nil {
		b = append(b, `,"source":{"type":`...)
		b = jsonscan.AppendString(b, s.Type)
		if s.MediaType != "" {
			b = append(b, `,"media_type":`...)
			b = jsonscan.AppendString(b, s.MediaType)
		}
		if s.Data != "" {
			b = append(b, `,"data":`...)
			b = jsonscan.AppendString(b, s.Data)
		}
		if s.URL != "" {
			b = append(b, `,"url":`...)
			b = jsonscan.AppendString(b, s.URL)
		}
		b = append(b, '}')
	}
	return b
}

// anthAppendRaw appends a raw value as encoding/json does
// ([jsonscan.AppendRaw]); an invalid one is left to encoding/json.
func anthAppendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	b, ok := jsonscan.AppendRaw(b, raw)
	if !ok {
		return nil, errAnthAppend
	}
	return b, nil
}
