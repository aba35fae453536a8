package connectors

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The framing of an upstream's event stream. Most upstreams send
// server-sent events ([SSEReader]); Amazon Bedrock sends the binary
// application/vnd.amazon.eventstream framing, each frame's payload holding
// one event of the model's own stream. A connector whose upstream frames
// its streams otherwise is a [Framer], and its reader yields (event, data)
// pairs exactly as [SSEReader.Next] does, so the gateway's relay reads
// every upstream's stream through one path.

// EventReader reads an upstream's event stream one event at a time.
type EventReader interface {
	// Next returns the next event's name ("" when the framing gives none)
	// and data, valid until the next call to Next or Release; io.EOF at
	// the stream's end.
	Next() (event, data []byte, err error)
	// Release recycles the reader's buffers; the reader, and every slice
	// it returned, must not be used after.
	Release()
}

var _ EventReader = (*SSEReader)(nil)

// Framer is a connector whose upstream frames its event streams otherwise
// than as server-sent events.
type Framer interface {
	// NewEventReader returns a reader of one streaming answer's body.
	NewEventReader(r io.Reader) EventReader
}

// NewEventReader returns the reader of a streaming answer of connector c:
// the connector's own when it is a [Framer], an [SSEReader] otherwise.
func NewEventReader(c Connector, r io.Reader) EventReader {
	if f, ok := c.(Framer); ok {
		return f.NewEventReader(r)
	}
	return NewSSEReader(r)
}

// Bounds of an event-stream frame: the prelude (total and header lengths,
// its CRC) and the message CRC take 16 bytes; a frame may be at most 16 MiB,
// the format's own limit on a message.
const (
	esPreludeLen  = 12
	esMinFrame    = 16
	esMaxFrame    = 16 << 20
	esReadBufSize = 4 << 10
)

// ErrEventStream reports a malformed event-stream frame or chunk.
var ErrEventStream = errors.New("eventstream: malformed stream")

// esReaders recycles the readers of finished streams, with their buffered
// reader and the payload, event and name buffers they grew, so that a
// stream's frames reuse what an earlier stream allocated.
var esReaders = sync.Pool{New: func() any { return &bedrockEventReader{br: bufio.NewReaderSize(nil, esReadBufSize)} }}

// esKeepBuffer is the largest payload or event buffer a released reader
// keeps for the next stream.
const esKeepBuffer = 64 << 10

// esDecoder is the SDK's frame decoder; it holds only options, no state.
var esDecoder = eventstream.NewDecoder()

// bedrockEventReader reads an application/vnd.amazon.eventstream answer
// of InvokeModelWithResponseStream or ConverseStream. ConverseStream's
// events ([converseEvents]) are yielded as they are, named by their
// :event-type. InvokeModelWithResponseStream's "chunk" event's payload is
// {"bytes": "<base64>"}, the base64 holding one event of the model's own
// stream (for Anthropic's models, a Messages API event, whose type is the
// event's name). An exception frame becomes an Anthropic-shaped "error"
// event, so that the relay tells it as any in-band error.
type bedrockEventReader struct {
	br      *bufio.Reader
	payload []byte // the frame's payload, reused
	data    []byte // the decoded event, reused
	name    []byte
	err     error
}

// newBedrockEventReader returns a reader over r.
func newBedrockEventReader(r io.Reader) *bedrockEventReader {
	s := esReaders.Get().(*bedrockEventReader)
	s.br.Reset(r)
	s.err = nil
	return s
}

// Release implements [EventReader.Release]: the reader goes back to the
// pool (its buffers kept up to esKeepBuffer), where another stream may take
// it, so it is released once and not used after (a second Release before
// another stream took it does nothing; after, it would give that stream's
// reader away).
func (s *bedrockEventReader) Release() {
	if s.err == errReleased {
		return
	}
	s.br.Reset(nil)
	if cap(s.payload) > esKeepBuffer {
		s.payload = nil
	}
	if cap(s.data) > esKeepBuffer {
		s.data = nil
	}
	s.err = errReleased
	esReaders.Put(s)
}

// Next implements [EventReader.Next]. Frames of other event types are
// skipped, as the API reference asks of a client that meets a new one.
func (s *bedrockEventReader) Next() (event, data []byte, err error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	for {
		event, data, err = s.frame()
		if err != nil {
			s.err = err
			return nil, nil, err
		}
		if data != nil {
			return event, data, nil
		}
	}
}

// frame reads one frame; data is nil for a frame that carries no event.
func (s *bedrockEventReader) frame() (event, data []byte, err error) {
	head, err := s.br.Peek(esPreludeLen)
	if err != nil {
		if errors.Is(err, io.EOF) && len(head) == 0 {
			return nil, nil, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return nil, nil, io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	total, headers := binary.BigEndian.Uint32(head), binary.BigEndian.Uint32(head[4:])
	if total < esMinFrame || total > esMaxFrame || headers > total-esMinFrame {
		return nil, nil, fmt.Errorf("%w: a frame of %d bytes with %d bytes of headers", ErrEventStream, total, headers)
	}
	msg, err := esDecoder.Decode(s.br, s.payload[:0])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		var le eventstream.LengthError
		var ce eventstream.ChecksumError
		if errors.As(err, &le) || errors.As(err, &ce) {
			err = fmt.Errorf("%w: %w", ErrEventStream, err)
		}
		return nil, nil, err
	}
	if cap(msg.Payload) > cap(s.payload) {
		s.payload = msg.Payload[:0]
	}
	switch esHeader(msg.Headers, ":message-type") {
	case "event":
		typ := esHeader(msg.Headers, ":event-type")
		if typ == "chunk" {
			return s.chunk(msg.Payload)
		}
		if !converseEvents[typ] {
			return nil, nil, nil
		}
		// A ConverseStream event: its payload is the event, named by
		// its type.
		s.name = append(s.name[:0], typ...)
		return s.name, msg.Payload, nil
	case "exception":
		return s.exception(esHeader(msg.Headers, ":exception-type"), jsonMessage(msg.Payload))
	case "error":
		return s.exception(esHeader(msg.Headers, ":error-code"), esHeader(msg.Headers, ":error-message"))
	}
	return nil, nil, nil
}

// chunk decodes a chunk's base64 bytes into the event they hold.
func (s *bedrockEventReader) chunk(payload []byte) (event, data []byte, err error) {
	raw := jsonscan.Member(payload, "bytes")
	b64 := jsonscan.StringContent(raw)
	if b64 == nil {
		return nil, nil, fmt.Errorf("%w: a chunk without its bytes", ErrEventStream)
	}
	if bytes.IndexByte(b64, '\\') >= 0 {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrEventStream, err)
		}
		b64 = []byte(str)
	}
	n := base64.StdEncoding.DecodedLen(len(b64))
	if cap(s.data) < n {
		s.data = make([]byte, n)
	}
	n, err = base64.StdEncoding.Decode(s.data[:n], b64)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: a chunk's bytes: %w", ErrEventStream, err)
	}
	data = s.data[:n]
	s.name = append(s.name[:0], jsonscan.StringContent(jsonscan.Member(data, "type"))...)
	return s.name, data, nil
}

// converseEvents are the event types of ConverseStream's ConverseStreamOutput
// union (Amazon Bedrock Runtime API reference), whose frames carry the
// event's JSON itself rather than a chunk of a model's own stream.
var converseEvents = map[string]bool{
	"messageStart": true, "contentBlockStart": true, "contentBlockDelta": true,
	"contentBlockStop": true, "messageStop": true, "metadata": true,
}

// bedrockExceptionTypes map the stream's exception events (the
// InvokeModelWithResponseStream ResponseStream union of the Bedrock
// Runtime API reference) to the Anthropic error type of the same meaning,
// so that the failure is classified and told as Anthropic's would be.
var bedrockExceptionTypes = map[string]string{
	"internalServerException":     "api_error",
	"modelStreamErrorException":   "api_error",
	"validationException":         "invalid_request_error",
	"throttlingException":         "rate_limit_error",
	"modelTimeoutException":       "timeout_error",
	"serviceUnavailableException": "overloaded_error",
}

// exception builds the Anthropic error event of an exception frame.
func (s *bedrockEventReader) exception(kind, message string) (event, data []byte, err error) {
	typ, ok := bedrockExceptionTypes[kind]
	if !ok {
		typ = "api_error"
	}
	if message == "" {
		message = kind
	}
	b := append(s.data[:0], `{"type":"error","error":{"type":`...)
	b = jsonscan.AppendString(b, typ)
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, message)
	b = append(b, "}}"...)
	s.data = b
	s.name = append(s.name[:0], "error"...)
	return s.name, b, nil
}

// esHeader is a frame header's string value, "" when absent.
func esHeader(h eventstream.Headers, name string) string {
	for _, x := range h {
		if x.Name == name {
			if v, ok := x.Value.(eventstream.StringValue); ok {
				return string(v)
			}
		}
	}
	return ""
}

// jsonMessage is the message member of an exception's JSON payload.
func jsonMessage(payload []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(payload, &e) != nil {
		return ""
	}
	return e.Message
}
