package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The translation of a chat-completions stream into the Messages API's
// event stream, for a Messages request served by an upstream that does not
// speak the Messages API: message_start, then each content block as
// content_block_start, its deltas and content_block_stop (thinking with its
// signature, text, tool_use with input_json_delta), then message_delta
// with the stop reason and the usage, and message_stop. An in-band error
// of the upstream becomes an error event.

// ErrMessagesStream reports a chat stream that has no Messages form (a tool
// call resumed after another block began).
var ErrMessagesStream = errors.New("connectors: the chat stream cannot be told as Messages events")

// msgStream wraps the connector's own chat stream translator: what it emits
// (chat chunks, already stripped of routing reports) is turned into
// Messages events, and its result is the stream's.
type msgStream struct {
	inner Stream
	call  *Call
	// dec holds the chunk being read: in the stream rather than in chunk's
	// frame, which is on the stack at the bottom of the attempt loop for a
	// stream's first chunk (see decodeChunk).
	dec struct {
		c     msgChunk
		usage *headUsage
		ch    msgChoice
		d     msgDelta
	}

	started, finished bool
	// open is the content block being streamed ("" when none): "text",
	// "r<index>" for reasoning, "t<index>" for a tool call.
	open string
	// next is the index of the next content block.
	next int
	// closed lists the tool calls whose block has ended.
	closed map[string]bool
	stop   string
	usage  *headUsage
	frame  []byte
}

func newMessagesStream(inner Stream, call *Call) Stream {
	return &msgStream{inner: inner, call: call}
}

// Event implements [Stream.Event].
func (s *msgStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	var convErr error
	done, err := s.inner.Event(event, data, func(chunk []byte) error {
		if convErr != nil {
			return nil
		}
		if err := s.chunk(chunk, emit); err != nil {
			if errors.Is(err, ErrMessagesStream) {
				convErr = err
				return nil
			}
			return err
		}
		return nil
	})
	if convErr != nil {
		_ = s.emitError(emit, "api_error", convErr.Error())
		return false, convErr
	}
	return done, err
}

// Result implements [Stream.Result].
func (s *msgStream) Result() Result { return s.inner.Result() }

// msgChunk is the part of a chat chunk the translation reads.
type msgChunk struct {
	ID      string            `json:"id"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []json.RawMessage `json:"choices"`
	Usage   json.RawMessage   `json:"usage"`
	Error   json.RawMessage   `json:"error"`
}

// msgChoice is a chunk's choice, its delta read on its own (see chunk).
type msgChoice struct {
	Delta        json.RawMessage `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
}

// msgDelta is a choice's delta: the members the translation reads.
type msgDelta struct {
	Content          *string           `json:"content"`
	Refusal          *string           `json:"refusal"`
	Reasoning        *string           `json:"reasoning"`
	ReasoningDetails []json.RawMessage `json:"reasoning_details"` // chatReasoningIn each
	ToolCalls        []json.RawMessage `json:"tool_calls"`        // chatToolCallIn each
}

// decodeChunk reads a chunk a level at a time — the chunk, its usage, its
// first choice, that choice's delta (chunk then reads the delta's reasoning
// details and tool calls one by one) — rather than in one decode: each of
// encoding/json's nesting levels costs about 1 KiB of stack. The first
// chunk is translated at the bottom of the request's attempt loop, whose
// deepest point decides the stack an open stream keeps
// (gateway/stack_test.go), so it runs off the stream's stack (OffStack).
func decodeChunk(p []byte, c *msgChunk, u **headUsage, ch *msgChoice, d *msgDelta) (hasChoice bool, err error) {
	OffStack(func() { hasChoice, err = decodeChunkLevels(p, c, u, ch, d) })
	return hasChoice, err
}

// decodeChunkLevels is decodeChunk's work, on a decoder goroutine.
func decodeChunkLevels(p []byte, c *msgChunk, u **headUsage, ch *msgChoice, d *msgDelta) (hasChoice bool, err error) {
	if err := json.Unmarshal(p, c); err != nil {
		return false, err
	}
	if len(c.Usage) > 0 && !anthIsNull(c.Usage) {
		*u = new(headUsage)
		if err := json.Unmarshal(c.Usage, *u); err != nil {
			return false, err
		}
	}
	if len(c.Choices) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(c.Choices[0], ch); err != nil {
		return false, err
	}
	if len(ch.Delta) > 0 && !anthIsNull(ch.Delta) {
		if err := json.Unmarshal(ch.Delta, d); err != nil {
			return false, err
		}
	}
	return true, nil
}

// start opens the message with the first chunk's id and model.
//
//go:noinline
func (s *msgStream) start(c *msgChunk, emit func([]byte) error) error {
	s.started = true
	start := messages.OutStartEvent{Type: "message_start", Message: messages.OutStart{ID: c.ID, Type: "message", Role: "assistant",
		Model: messageModel(s.call, c.Model), Content: []json.RawMessage{}}}
	return s.emit(emit, "message_start", start)
}

// chunk translates one chat chunk (or the end marker).
func (s *msgStream) chunk(p []byte, emit func([]byte) error) error {
	if bytes.Equal(p, doneData) {
		return s.finish(emit)
	}
	dec := &s.dec
	dec.c, dec.usage, dec.ch, dec.d = msgChunk{}, nil, msgChoice{}, msgDelta{}
	c, ch, d := &dec.c, &dec.ch, &dec.d
	hasChoice, err := decodeChunk(p, c, &dec.usage, ch, d)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMessagesStream, err)
	}
	usage := dec.usage
	if len(c.Error) > 0 && !anthIsNull(c.Error) {
		return s.upstreamError(c.Error, emit)
	}
	if !s.started {
		if err := s.start(c, emit); err != nil {
			return err
		}
	}
	if usage != nil {
		s.usage = usage
	}
	if !hasChoice {
		return nil
	}
	switch {
	case len(d.ReasoningDetails) > 0:
		for i, raw := range d.ReasoningDetails {
			var r chatReasoningIn
			if err := unmarshalOffStack(raw, &r); err != nil {
				return fmt.Errorf("%w: %w", ErrMessagesStream, err)
			}
			if err := s.reasoning(r, i, emit); err != nil {
				return err
			}
		}
	case d.Reasoning != nil && *d.Reasoning != "":
		if err := s.thinkingDelta("r", "thinking_delta", "thinking", *d.Reasoning, emit); err != nil {
			return err
		}
	}
	text := ""
	if d.Content != nil {
		text = *d.Content
	}
	if text == "" && d.Refusal != nil {
		text = *d.Refusal
	}
	if text != "" {
		if err := s.begin("text", json.RawMessage(`{"type":"text","text":""}`), emit); err != nil {
			return err
		}
		if err := s.delta(emit, "text_delta", "text", text); err != nil {
			return err
		}
	}
	for _, raw := range d.ToolCalls {
		var tc chatToolCallIn
		if err := unmarshalOffStack(raw, &tc); err != nil {
			return fmt.Errorf("%w: %w", ErrMessagesStream, err)
		}
		if err := s.toolCall(tc, emit); err != nil {
			return err
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		s.stop = stopReason(*ch.FinishReason)
		if d.Refusal != nil && *d.Refusal != "" {
			s.stop = "refusal"
		}
	}
	return nil
}

// reasoning translates one reasoning_details entry of a delta.
func (s *msgStream) reasoning(r chatReasoningIn, i int, emit func([]byte) error) error {
	key := "r"
	if r.Index != nil {
		key += strconv.Itoa(*r.Index)
	} else {
		key += "x" + strconv.Itoa(i)
	}
	switch r.Type {
	case "reasoning.text":
		if r.Text != nil && *r.Text != "" {
			if err := s.thinkingDelta(key, "thinking_delta", "thinking", *r.Text, emit); err != nil {
				return err
			}
		}
		if r.Signature != nil && *r.Signature != "" {
			return s.thinkingDelta(key, "signature_delta", "signature", *r.Signature, emit)
		}
	case "reasoning.summary":
		if r.Summary != nil && *r.Summary != "" {
			return s.thinkingDelta(key, "thinking_delta", "thinking", *r.Summary, emit)
		}
	case "reasoning.encrypted":
		if r.Format == anthReasoningFormat && r.Data != nil {
			block := jsonscan.AppendString([]byte(`{"type":"redacted_thinking","data":`), *r.Data)
			if err := s.begin(key, append(block, '}'), emit); err != nil {
				return err
			}
			return s.end(emit)
		}
	}
	return nil
}

// thinkingDelta relays a piece of a thinking block, opening it first.
func (s *msgStream) thinkingDelta(key, typ, member, v string, emit func([]byte) error) error {
	if err := s.begin(key, json.RawMessage(`{"type":"thinking","thinking":"","signature":""}`), emit); err != nil {
		return err
	}
	return s.delta(emit, typ, member, v)
}

// toolCall relays a piece of a tool call: its start (id and name), then its
// arguments as input_json_delta.
func (s *msgStream) toolCall(tc chatToolCallIn, emit func([]byte) error) error {
	key := "t" + strconv.Itoa(tc.Index)
	if s.closed[key] {
		return fmt.Errorf("%w: tool call %d resumed after another block began", ErrMessagesStream, tc.Index)
	}
	block := jsonscan.AppendString([]byte(`{"type":"tool_use","id":`), tc.ID)
	block = jsonscan.AppendString(append(block, `,"name":`...), tc.Function.Name)
	if err := s.begin(key, append(block, `,"input":{}}`...), emit); err != nil {
		return err
	}
	if tc.Function.Arguments == "" {
		return nil
	}
	return s.delta(emit, "input_json_delta", "partial_json", tc.Function.Arguments)
}

// begin opens the content block key unless it is the open one, ending the
// open one first.
func (s *msgStream) begin(key string, block json.RawMessage, emit func([]byte) error) error {
	if s.open == key {
		return nil
	}
	if err := s.end(emit); err != nil {
		return err
	}
	s.open = key
	return s.emit(emit, "content_block_start", messages.BlockEvent{Type: "content_block_start", Index: s.next, ContentBlock: block})
}

// end closes the open content block, if any.
func (s *msgStream) end(emit func([]byte) error) error {
	if s.open == "" {
		return nil
	}
	if s.open[0] == 't' {
		if s.closed == nil {
			s.closed = map[string]bool{}
		}
		s.closed[s.open] = true
	}
	s.open = ""
	idx := s.next
	s.next++
	return s.emit(emit, "content_block_stop", messages.BlockEvent{Type: "content_block_stop", Index: idx})
}

// delta relays a delta of the open block: its type and one member. The
// stream's most frequent event is written in place, as s.emit would write
// its messages.BlockEvent, without encoding/json's reflection and the copy of the
// delta it compacts.
func (s *msgStream) delta(emit func([]byte) error, typ, member, v string) error {
	f := append(s.frame[:0], "event: content_block_delta\ndata: "...)
	f = append(f, `{"type":"content_block_delta","index":`...)
	f = strconv.AppendInt(f, int64(s.next), 10)
	f = jsonscan.AppendString(append(f, `,"delta":{"type":`...), typ)
	f = append(append(append(f, ',', '"'), member...), '"', ':')
	f = append(jsonscan.AppendString(f, v), '}', '}')
	s.frame = f
	return emit(f)
}

// finish ends the message at the chat stream's end marker: the open block,
// the stop reason with the usage, and message_stop.
func (s *msgStream) finish(emit func([]byte) error) error {
	if s.finished {
		return nil
	}
	s.finished = true
	if !s.started {
		return fmt.Errorf("%w: the stream ended before it began", ErrMessagesStream)
	}
	if err := s.end(emit); err != nil {
		return err
	}
	stop := s.stop
	if stop == "" {
		stop = "end_turn"
	}
	md := messages.OutMessageDeltaEvent{Type: "message_delta", Usage: usageOf(s.usage)}
	md.Delta.StopReason = stop
	if err := s.emit(emit, "message_delta", md); err != nil {
		return err
	}
	return s.emit(emit, "message_stop", messages.TypeEvent{Type: "message_stop"})
}

// upstreamError relays the upstream's in-band error as an error event.
func (s *msgStream) upstreamError(raw json.RawMessage, emit func([]byte) error) error {
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	_ = json.Unmarshal(raw, &e)
	status, _ := strconv.Atoi(string(bytes.Trim(e.Code, `"`)))
	return s.emitError(emit, ErrorTypeForStatus(status), e.Message)
}

// emitError relays an error event.
func (s *msgStream) emitError(emit func([]byte) error, typ, message string) error {
	return s.emit(emit, "error", ErrorEvent(typ, message, ""))
}

// ErrorEvent is the data of a Messages API error event, and the body of an
// error answer: {"type":"error","error":{"type":…,"message":…}}, with
// sluice's own code beside them when code is not "".
func ErrorEvent(typ, message, code string) any {
	e := messages.ErrorBody{Type: "error"}
	e.Error.Type, e.Error.Message, e.Error.Code = typ, message, code
	return e
}

// emit writes one whole event, its event line and its data.
func (s *msgStream) emit(emit func([]byte) error, name string, v any) error {
	var data []byte
	var err error
	OffStack(func() { data, err = anthMarshal(v) }) // encoding/json's frames: see OffStack
	if err != nil {
		return err
	}
	s.frame = AppendEvent(s.frame[:0], name, data)
	return emit(s.frame)
}

// AppendEvent appends one server-sent event without its ending blank line:
// "event: <name>\ndata: <data>".
func AppendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(append(append(dst, "event: "...), name...), "\ndata: "...)
	return append(dst, data...)
}

// ErrorTypeForStatus is the Messages API's error type for an HTTP status:
// the type the API documents for it, api_error for another server error,
// invalid_request_error for another client error.
func ErrorTypeForStatus(status int) string {
	switch status {
	case 400, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 503, 529:
		return "overloaded_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}
