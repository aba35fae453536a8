package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The anthropic connector's stream translation: Messages API events become
// chat.completion.chunk payloads, built in one reused buffer.

// NewStream implements [Connector.NewStream].
func (c *anthropic) NewStream(call *Call) Stream {
	return &anthStream{call: call, now: c.now, res: Result{ServedProvider: c.served()}, hideUsage: call != nil && call.UsageAdded}
}

// anthStream translates one Messages API event stream into chat.completion
// chunks. Each chunk is built in one reused buffer (the emit callback must
// consume it before returning, as it must consume the event data), and text
// and tool-argument deltas are copied from the event as raw JSON strings
// without decoding them: a text delta costs no allocation.
type anthStream struct {
	call *Call
	now  func() time.Time
	// hideUsage: the caller did not ask for usage (the call's UsageAdded),
	// so the usage is read into the result and no usage chunk is relayed.
	hideUsage bool

	started, done bool
	// head is `{"id":…,"object":"chat.completion.chunk","created":…,"model":…,`,
	// the start of every chunk.
	head []byte
	buf  []byte
	// tools maps content block indexes to tool call indexes.
	tools []anthToolIndex
	// reasoning lists the thinking and redacted_thinking blocks in order: a
	// block's place in it is its reasoning_details index.
	reasoning []anthReasoningBlock
	tok       anthTokens
	res       Result
}

// anthReasoningBlock is a reasoning block of the stream: its content block
// index, and whether it is a thinking block (deltas follow) or a
// redacted_thinking one (whole at its start).
type anthReasoningBlock struct {
	block    int
	thinking bool
}

// anthToolIndex ties a content block to its tool call; args records whether
// any argument text was relayed for it.
type anthToolIndex struct {
	block, tool int
	args        bool
}

var (
	anthChoiceOpen  = []byte(`"choices":[{"index":0,"delta":`)
	anthChoiceClose = []byte(`,"logprobs":null,"finish_reason":null}]}`)
)

// ErrAnthropicStream reports a malformed or out-of-order event stream.
var ErrAnthropicStream = errors.New("anthropic: malformed event stream")

// Event implements [Stream.Event]: it checks the event and hands it to the
// method named after it. Until message_start, only ping, error and
// content_block_stop events are accepted.
func (s *anthStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if s.done {
		return true, nil
	}
	if !json.Valid(data) {
		return false, fmt.Errorf("%w: event data is not JSON", ErrAnthropicStream)
	}
	typ := jsonscan.StringContent(jsonscan.Member(data, "type"))
	if typ == nil {
		typ = event
	}
	switch string(typ) {
	case "ping":
		return false, nil
	case "content_block_stop":
		return false, s.blockStop(data, emit)
	case "error":
		return false, s.errorEvent(data, emit)
	case "message_start":
		return false, s.messageStart(data, emit)
	}
	if !s.started {
		return false, fmt.Errorf("%w: %q before message_start", ErrAnthropicStream, typ)
	}
	switch string(typ) {
	case "content_block_delta":
		return false, s.blockDelta(data, emit)
	case "content_block_start":
		return false, s.blockStart(data, emit)
	case "message_delta":
		return false, s.messageDelta(data, emit)
	case "message_stop":
		return true, s.messageStop(emit)
	}
	return false, nil // a new event type: ignored, as the upstream asks
}

// messageStart reads the message's id, model and first usage, and relays
// the assistant's role; every chunk after starts with the same head.
func (s *anthStream) messageStart(data []byte, emit func([]byte) error) error {
	if s.started {
		return fmt.Errorf("%w: a second message_start", ErrAnthropicStream)
	}
	var e messages.StartEvent
	if err := unmarshalOffStack(data, &e); err != nil {
		return fmt.Errorf("%w: %w", ErrAnthropicStream, err)
	}
	s.started = true
	s.res.ServedModel = e.Message.Model
	s.tok.merge(e.Message.Usage)
	s.head = append(s.head[:0], `{"id":`...)
	s.head = jsonscan.AppendString(s.head, e.Message.ID)
	s.head = append(s.head, `,"object":"chat.completion.chunk","created":`...)
	s.head = strconv.AppendInt(s.head, s.now().Unix(), 10)
	s.head = append(s.head, `,"model":`...)
	s.head = jsonscan.AppendString(s.head, echoModel(s.call, e.Message.Model))
	s.head = append(s.head, ',')
	return s.emitDelta(emit, []byte(`{"role":"assistant","content":""}`))
}

// blockStart relays the start of a content block: a text block's first text
// (usually empty, then nothing is relayed), a tool call's id and name, a
// thinking block's first text and signature (usually empty too), or a
// redacted_thinking block, which arrives whole.
func (s *anthStream) blockStart(data []byte, emit func([]byte) error) error {
	var e messages.BlockStartEvent
	if err := unmarshalOffStack(data, &e); err != nil {
		return fmt.Errorf("%w: %w", ErrAnthropicStream, err)
	}
	switch e.ContentBlock.Type {
	case "text":
		if e.ContentBlock.Text == "" {
			return nil
		}
		d, _ := anthMarshal(map[string]string{"content": e.ContentBlock.Text})
		return s.emitDelta(emit, d)
	case "thinking":
		n := len(s.reasoning)
		s.reasoning = append(s.reasoning, anthReasoningBlock{block: e.Index, thinking: true})
		if t := e.ContentBlock.Thinking; t != "" {
			if err := s.emitReasoning(emit, n, anthReasoningText, jsonscan.AppendString(nil, t)); err != nil {
				return err
			}
		}
		if sig := e.ContentBlock.Signature; sig != "" {
			return s.emitReasoning(emit, n, anthReasoningSignature, jsonscan.AppendString(nil, sig))
		}
		return nil
	case "redacted_thinking":
		n := len(s.reasoning)
		s.reasoning = append(s.reasoning, anthReasoningBlock{block: e.Index})
		return s.emitReasoning(emit, n, anthReasoningData, jsonscan.AppendString(nil, e.ContentBlock.Data))
	case "tool_use":
		tool := len(s.tools)
		s.tools = append(s.tools, anthToolIndex{block: e.Index, tool: tool})
		d := append([]byte(`{"tool_calls":[{"index":`), strconv.Itoa(tool)...)
		d = append(d, `,"id":`...)
		d = jsonscan.AppendString(d, e.ContentBlock.ID)
		d = append(d, `,"type":"function","function":{"name":`...)
		d = jsonscan.AppendString(d, e.ContentBlock.Name)
		d = append(d, `,"arguments":""}}]}`...)
		return s.emitDelta(emit, d)
	}
	return nil
}

// blockDelta relays a text delta, a tool call's arguments delta, or a
// thinking block's text or signature delta; other deltas (citations, ...)
// are not relayed.
func (s *anthStream) blockDelta(data []byte, emit func([]byte) error) error {
	delta := jsonscan.Member(data, "delta")
	switch string(jsonscan.StringContent(jsonscan.Member(delta, "type"))) {
	case "text_delta":
		text := jsonscan.Member(delta, "text")
		if len(text) < 3 || text[0] != '"' { // absent, not a string, or ""
			return nil
		}
		s.buf = s.open()
		s.buf = append(s.buf, `{"content":`...)
		s.buf = append(s.buf, text...)
		s.buf = append(s.buf, '}')
		s.buf = append(s.buf, anthChoiceClose...)
		return emit(s.buf)
	case "input_json_delta":
		part := jsonscan.Member(delta, "partial_json")
		if len(part) < 3 || part[0] != '"' {
			return nil
		}
		t := s.tool(jsonscan.SmallInt(jsonscan.Member(data, "index")))
		if t == nil {
			return fmt.Errorf("%w: input_json_delta for a block that is not a tool call", ErrAnthropicStream)
		}
		return s.emitArguments(emit, t, part)
	case "thinking_delta":
		return s.thinkingDelta(data, delta, "thinking", anthReasoningText, emit)
	case "signature_delta":
		return s.thinkingDelta(data, delta, "signature", anthReasoningSignature, emit)
	}
	return nil
}

// thinkingDelta relays a thinking block's delta: the delta's member name
// (thinking or signature), a raw JSON string, is relayed as kind says. An
// empty one is not relayed (a thinking block's last text delta often is).
func (s *anthStream) thinkingDelta(data, delta []byte, name string, kind anthReasoningMember, emit func([]byte) error) error {
	v := jsonscan.Member(delta, name)
	if len(v) < 3 || v[0] != '"' {
		return nil
	}
	block := jsonscan.SmallInt(jsonscan.Member(data, "index"))
	for n, r := range s.reasoning {
		if r.block == block && r.thinking {
			return s.emitReasoning(emit, n, kind, v)
		}
	}
	return fmt.Errorf("%w: %s_delta for a block that is not a thinking block", ErrAnthropicStream, name)
}

// blockStop ends a content block. A tool called without arguments streams
// none (or only an empty partial_json): its arguments are "{}", as in a
// whole answer.
func (s *anthStream) blockStop(data []byte, emit func([]byte) error) error {
	t := s.tool(jsonscan.SmallInt(jsonscan.Member(data, "index")))
	if t == nil || t.args {
		return nil
	}
	return s.emitArguments(emit, t, []byte(`"{}"`))
}

// messageDelta reads the cumulative usage and relays the finish reason,
// when the event has a stop reason.
func (s *anthStream) messageDelta(data []byte, emit func([]byte) error) error {
	var e messages.MessageDeltaEvent
	if err := unmarshalOffStack(data, &e); err != nil {
		return fmt.Errorf("%w: %w", ErrAnthropicStream, err)
	}
	s.tok.merge(e.Usage)
	if e.Delta.StopReason == nil {
		return nil
	}
	s.res.FinishReason = anthFinish(e.Delta.StopReason)
	s.buf = s.open()
	s.buf = append(s.buf, `{},"logprobs":null,"finish_reason":`...)
	s.buf = jsonscan.AppendString(s.buf, s.res.FinishReason)
	s.buf = append(s.buf, "}]}"...)
	return emit(s.buf)
}

// messageStop ends the stream: a last chunk with the usage, as the
// chat-completions API sends it to a caller that set
// stream_options.include_usage (no choices, the usage), and the end marker.
// A caller that did not ask gets no usage chunk; the result has the usage
// either way.
func (s *anthStream) messageStop(emit func([]byte) error) error {
	s.done = true
	s.res.Usage = s.tok.usage()
	if s.hideUsage {
		return emit(doneData)
	}
	s.buf = append(s.buf[:0], s.head...)
	s.buf = append(s.buf, `"choices":[],"usage":{"prompt_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, s.tok.prompt(), 10)
	s.buf = append(s.buf, `,"completion_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, s.tok.output, 10)
	s.buf = append(s.buf, `,"total_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, s.tok.prompt()+s.tok.output, 10)
	s.buf = append(s.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, s.tok.cacheRead, 10)
	if s.tok.cacheCreate > 0 {
		s.buf = append(s.buf, `,"cache_write_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, s.tok.cacheCreate, 10)
	}
	s.buf = append(s.buf, "}}}"...)
	if err := emit(s.buf); err != nil {
		return err
	}
	// The end marker a chat-completions client waits for, as the
	// OpenAI-shaped upstreams relay it.
	return emit(doneData)
}

// errorEvent relays an in-band error in the chat-completions error shape,
// records it in the result, and returns it as a [*StreamError].
func (s *anthStream) errorEvent(data []byte, emit func([]byte) error) error {
	var e messages.ErrorEvent
	if err := unmarshalOffStack(data, &e); err != nil {
		return fmt.Errorf("%w: %w", ErrAnthropicStream, err)
	}
	se := newStreamError(e.Error)
	s.res.FinishReason = "error"
	b, err := anthStreamErrorChunk(se)
	if err != nil {
		return err
	}
	s.res.StreamError = string(b)
	if err := emit(b); err != nil {
		return err
	}
	return se
}

// emitArguments emits a chunk with a tool call's arguments delta: args is a
// raw JSON string, relayed as it is.
func (s *anthStream) emitArguments(emit func([]byte) error, t *anthToolIndex, args []byte) error {
	t.args = true
	s.buf = s.open()
	s.buf = append(s.buf, `{"tool_calls":[{"index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(t.tool), 10)
	s.buf = append(s.buf, `,"function":{"arguments":`...)
	s.buf = append(s.buf, args...)
	s.buf = append(s.buf, `}}]}`...)
	s.buf = append(s.buf, anthChoiceClose...)
	return emit(s.buf)
}

// anthReasoningMember is what a reasoning delta carries.
type anthReasoningMember int

const (
	// anthReasoningText is a thinking block's text: the delta's reasoning,
	// and the text of a reasoning.text entry.
	anthReasoningText anthReasoningMember = iota
	// anthReasoningSignature is a thinking block's signature: the signature
	// of a reasoning.text entry, which the marketplaces send in a delta of
	// its own.
	anthReasoningSignature
	// anthReasoningData is a redacted_thinking block: the data of a
	// reasoning.encrypted entry.
	anthReasoningData
)

// emitReasoning emits a chunk with a reasoning delta: v, a raw JSON string,
// as the member kind says, in the reasoning_details entry of index n (the
// block's place among the stream's reasoning blocks, as in a whole answer).
func (s *anthStream) emitReasoning(emit func([]byte) error, n int, kind anthReasoningMember, v []byte) error {
	s.buf = s.open()
	switch kind {
	case anthReasoningText:
		s.buf = append(s.buf, `{"reasoning":`...)
		s.buf = append(s.buf, v...)
		s.buf = append(s.buf, `,"reasoning_details":[{"type":"reasoning.text","text":`...)
	case anthReasoningSignature:
		s.buf = append(s.buf, `{"reasoning_details":[{"type":"reasoning.text","signature":`...)
	case anthReasoningData:
		s.buf = append(s.buf, `{"reasoning_details":[{"type":"reasoning.encrypted","data":`...)
	}
	s.buf = append(s.buf, v...)
	s.buf = append(s.buf, `,"format":"`+anthReasoningFormat+`","index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(n), 10)
	s.buf = append(s.buf, "}]}"...)
	s.buf = append(s.buf, anthChoiceClose...)
	return emit(s.buf)
}

// open starts a chunk in the reused buffer, up to the delta.
func (s *anthStream) open() []byte {
	b := append(s.buf[:0], s.head...)
	return append(b, anthChoiceOpen...)
}

// emitDelta emits a chunk with a delta object and no finish reason.
func (s *anthStream) emitDelta(emit func([]byte) error, delta []byte) error {
	s.buf = s.open()
	s.buf = append(s.buf, delta...)
	s.buf = append(s.buf, anthChoiceClose...)
	return emit(s.buf)
}

// tool returns the tool call of a content block, or nil.
func (s *anthStream) tool(block int) *anthToolIndex {
	for i := range s.tools {
		if s.tools[i].block == block {
			return &s.tools[i]
		}
	}
	return nil
}

// Result implements [Stream.Result].
func (s *anthStream) Result() Result {
	r := s.res
	r.Usage = s.tok.usage()
	return r
}

// anthStreamErrorChunk is an in-band error as a chat-completions chunk; code
// is the HTTP status Anthropic documents for the type (null when unknown),
// as marketplaces report in-band errors, so a client can tell overload from
// a bad request.
func anthStreamErrorChunk(se *StreamError) ([]byte, error) {
	var payload struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    *int   `json:"code"`
		} `json:"error"`
	}
	payload.Error.Message, payload.Error.Type = se.Message, se.Type
	if se.Status != 0 {
		payload.Error.Code = &se.Status
	}
	return anthMarshal(payload)
}
