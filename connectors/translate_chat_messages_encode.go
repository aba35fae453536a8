package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The encoding of the Messages requests the anthropic connector's
// translation writes, and the raw-value helpers every Messages translation
// uses. The wire types themselves are package wire/messages's, and the
// chat-completions shapes package wire/chat's; the appenders stay here
// because they write with connectors/internal/jsonscan, which a wire
// package does not import. The translation itself lives in
// translate_chat_messages.go, translate_chat_messages_answer.go and
// translate_chat_messages_stream.go.

// anthDefaultMaxTokens is sent when the request sets no limit: the Messages
// API requires max_tokens, the chat-completions API does not.
const anthDefaultMaxTokens = 4096

// anthReasoningFormat is the format the reasoning_details of an answer name
// for Anthropic's thinking blocks, as the marketplaces that serve its models
// write it; only entries of this format are sent back as thinking blocks.
const anthReasoningFormat = "anthropic-claude-v1"

// --- Raw values ----------------------------------------------------------------

// anthNull is the JSON null.
var anthNull = json.RawMessage("null")

// anthIsNull reports whether a raw member is absent (empty) or null.
func anthIsNull(v json.RawMessage) bool {
	return len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), anthNull)
}

// --- Encoding -----------------------------------------------------------------

// anthMarshal encodes without HTML escaping: prompts are relayed as
// written (the wire package's one encoder).
var anthMarshal = messages.Marshal

// The appenders below write exactly what anthMarshal (encoding/json without
// HTML escaping) writes for the same values, without reflection: the tests
// compare both on the corpus and under the fuzzer.

// errAnthAppend is returned by an appender for a value it does not vouch for;
// the caller then encodes with anthMarshal, which reports the error itself.
var errAnthAppend = errors.New("anthropic: value left to encoding/json")

// anthAppendRequest appends a Messages request body to b.
func anthAppendRequest(b []byte, r *messages.Request) ([]byte, error) {
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

// anthAppendContent appends content as [messages.Content.MarshalJSON] encodes it.
func anthAppendContent(b []byte, c messages.Content) ([]byte, error) {
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
func anthAppendBlock(b []byte, k *messages.Block) ([]byte, error) {
	var err error
	b = append(b, `{"type":`...)
	b = jsonscan.AppendString(b, k.Type)
	if k.Text != "" {
		b = append(b, `,"text":`...)
		b = jsonscan.AppendString(b, k.Text)
	}
	if r := k.RareMembers; r != nil {
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
func anthAppendRare(b []byte, r *messages.RareMembers) []byte {
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
