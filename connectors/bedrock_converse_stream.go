package connectors

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/converse"
)

// The Converse dialect's stream: ConverseStream's events (each the JSON
// payload of one event-stream frame, named by its :event-type, as the
// bedrock connector's [Framer] yields them) are retold as the Messages
// API's events and read by the anthropic connector's stream reader, which
// writes the chat chunks. messageStop and metadata (the stop reason and
// the usage) come in either order (both are recorded); the Messages
// stream's message_delta and message_stop are told once both have come.

// NewStream implements [Connector.NewStream].
func (c *bedrockConverse) NewStream(call *Call) Stream {
	return &converseStream{inner: c.anth.NewStream(call), id: c.newID(), model: callModel(call)}
}

// converseStream retells one ConverseStream as Messages API events.
type converseStream struct {
	inner Stream
	id    string
	model string

	started, stopped, metered, done bool
	stop                            string
	usage                           *converse.Usage
	// blocks are the content blocks whose start was told, by index, with
	// their Messages type.
	blocks map[int]string
	buf    []byte
}

// ErrConverseStream reports a malformed ConverseStream event.
var ErrConverseStream = fmt.Errorf("bedrock: malformed Converse event stream")

// Event implements [Stream.Event].
func (s *converseStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if s.done {
		return true, nil
	}
	if string(event) == "error" { // an exception frame, told as the Messages API's error event
		return s.inner.Event(event, data, emit)
	}
	if !json.Valid(data) {
		return false, fmt.Errorf("%w: %s event data is not JSON", ErrConverseStream, event)
	}
	if !s.started {
		if err := s.start(emit); err != nil {
			return false, err
		}
	}
	switch string(event) {
	case converse.EventContentBlockStart:
		var e converse.BlockStart
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrConverseStream, err)
		}
		if tu := e.Start.ToolUse; tu != nil {
			b := s.open("content_block_start", e.ContentBlockIndex)
			b = append(b, `,"content_block":{"type":"tool_use","id":`...)
			b = jsonscan.AppendString(b, tu.ToolUseID)
			b = append(b, `,"name":`...)
			b = jsonscan.AppendString(b, tu.Name)
			b = append(b, `,"input":{}}}`...)
			s.blocks[e.ContentBlockIndex] = "tool_use"
			return s.tell("content_block_start", b, emit)
		}
	case converse.EventContentBlockDelta:
		return false, s.delta(data, emit)
	case converse.EventContentBlockStop:
		i := jsonscan.SmallInt(jsonscan.Member(data, "contentBlockIndex"))
		if i < 0 {
			return false, fmt.Errorf("%w: contentBlockStop without its index", ErrConverseStream)
		}
		if _, ok := s.blocks[i]; !ok {
			return false, nil
		}
		return s.tell("content_block_stop", append(s.open("content_block_stop", i), '}'), emit)
	case converse.EventMessageStop:
		var e converse.MessageStop
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrConverseStream, err)
		}
		s.stopped, s.stop = true, converseStop(e.StopReason)
	case converse.EventMetadata:
		var e converse.Metadata
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrConverseStream, err)
		}
		s.metered, s.usage = true, e.Usage
	}
	if s.stopped && s.metered {
		return s.finish(emit)
	}
	return false, nil
}

// start tells message_start: the answer's id and the model sent to.
func (s *converseStream) start(emit func([]byte) error) error {
	s.started = true
	s.blocks = make(map[int]string, 2)
	b := append(s.buf[:0], `{"type":"message_start","message":{"id":`...)
	b = jsonscan.AppendString(b, s.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonscan.AppendString(b, s.model)
	b = append(b, `,"content":[],"stop_reason":null,"usage":{}}}`...)
	_, err := s.tell("message_start", b, emit)
	return err
}

// delta tells a contentBlockDelta: text, a tool call's input, or
// reasoning (its text, signature or redacted content); a block's start is
// told first when Converse sent none (text and reasoning blocks have no
// contentBlockStart).
func (s *converseStream) delta(data []byte, emit func([]byte) error) error {
	i := jsonscan.SmallInt(jsonscan.Member(data, "contentBlockIndex"))
	if i < 0 {
		return fmt.Errorf("%w: contentBlockDelta without its index", ErrConverseStream)
	}
	d := jsonscan.Member(data, "delta")
	if t := jsonscan.Member(d, "text"); t != nil {
		if err := s.ensure(i, "text", emit); err != nil {
			return err
		}
		return s.deltaOf(i, "text_delta", "text", t, emit)
	}
	if tu := jsonscan.Member(d, "toolUse"); tu != nil {
		if s.blocks[i] != "tool_use" {
			return fmt.Errorf("%w: a toolUse delta for block %d, which started no tool call", ErrConverseStream, i)
		}
		return s.deltaOf(i, "input_json_delta", "partial_json", jsonscan.Member(tu, "input"), emit)
	}
	if rc := jsonscan.Member(d, "reasoningContent"); rc != nil {
		if red := jsonscan.Member(rc, "redactedContent"); red != nil {
			b := s.open("content_block_start", i)
			b = append(b, `,"content_block":{"type":"redacted_thinking","data":`...)
			b = append(b, red...)
			b = append(b, "}}"...)
			s.blocks[i] = "redacted_thinking"
			_, err := s.tell("content_block_start", b, emit)
			return err
		}
		if err := s.ensure(i, "thinking", emit); err != nil {
			return err
		}
		if t := jsonscan.Member(rc, "text"); t != nil {
			return s.deltaOf(i, "thinking_delta", "thinking", t, emit)
		}
		if sig := jsonscan.Member(rc, "signature"); sig != nil {
			return s.deltaOf(i, "signature_delta", "signature", sig, emit)
		}
	}
	return nil // a delta of another kind (citations, ...): not relayed
}

// ensure tells the start of block i, of a type, unless it was told.
func (s *converseStream) ensure(i int, typ string, emit func([]byte) error) error {
	if have, ok := s.blocks[i]; ok {
		if have != typ {
			return fmt.Errorf("%w: a %s delta in block %d, a %s block", ErrConverseStream, typ, i, have)
		}
		return nil
	}
	s.blocks[i] = typ
	b := s.open("content_block_start", i)
	if typ == "text" {
		b = append(b, `,"content_block":{"type":"text","text":""}}`...)
	} else {
		b = append(b, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	}
	_, err := s.tell("content_block_start", b, emit)
	return err
}

// deltaOf tells a content_block_delta of a type whose member name carries
// v, a raw JSON string.
func (s *converseStream) deltaOf(i int, typ, name string, v []byte, emit func([]byte) error) error {
	if len(v) == 0 || v[0] != '"' {
		return fmt.Errorf("%w: a %s delta that is not a string", ErrConverseStream, typ)
	}
	b := s.open("content_block_delta", i)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, name...)
	b = append(b, `":`...)
	b = append(b, v...)
	b = append(b, "}}"...)
	_, err := s.tell("content_block_delta", b, emit)
	return err
}

// finish tells message_delta (the stop reason and the usage) and
// message_stop.
func (s *converseStream) finish(emit func([]byte) error) (bool, error) {
	b := append(s.buf[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	b = jsonscan.AppendString(b, s.stop)
	b = append(b, `},"usage":`...)
	b = converseUsageJSON(b, s.usage)
	b = append(b, '}')
	if _, err := s.tell("message_delta", b, emit); err != nil {
		return false, err
	}
	s.done = true
	return s.tell("message_stop", append(s.buf[:0], `{"type":"message_stop"}`...), emit)
}

// open starts an event of a type about content block i in the reused
// buffer.
func (s *converseStream) open(typ string, i int) []byte {
	b := append(s.buf[:0], `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","index":`...)
	return strconv.AppendInt(b, int64(i), 10)
}

// converseTold are the names of the Messages API events a ConverseStream
// is told as, made once.
var converseTold = map[string][]byte{}

func init() {
	for _, n := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
		converseTold[n] = []byte(n)
	}
}

// tell hands a Messages API event to the anthropic reader.
func (s *converseStream) tell(name string, data []byte, emit func([]byte) error) (bool, error) {
	s.buf = data[:0]
	return s.inner.Event(converseTold[name], data, emit)
}

// Result implements [Stream.Result].
func (s *converseStream) Result() Result { return s.inner.Result() }
