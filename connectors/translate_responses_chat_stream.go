package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/responses"
)

// The translation of a chat-completions stream into the Responses API's
// event stream, for a Responses request served by an upstream that does not
// speak the Responses API, in the sequence the live API sends
// (testdata/recorded/openai/responses): response.created and
// response.in_progress; for the text, output_item.added, content_part.added,
// output_text.delta each, output_text.done, content_part.done and
// output_item.done; for each tool call, output_item.added,
// function_call_arguments.delta each, function_call_arguments.done and
// output_item.done; then response.completed (or response.incomplete) with
// the whole response and its usage. Every event carries a sequence_number,
// counted from 0. An in-band error of the upstream becomes an error event.

// ErrResponsesStream reports a chat stream that has no Responses form (a
// tool call resumed after another item began).
var ErrResponsesStream = errors.New("connectors: the chat stream cannot be told as Responses events")

// respStream wraps the connector's own chat stream translator.
type respStream struct {
	inner Stream
	call  *Call
	dec   struct {
		c     msgChunk
		usage *headUsage
		ch    msgChoice
		d     msgDelta
	}

	started, finished bool
	resp              responses.Response
	chatID            string
	seq               int64
	// open is the item being streamed: "" for none, "text", or "t<index>"
	// for the chat stream's tool call of that index.
	open   string
	itemID string
	// text is the open message's text so far, JSON-escaped as the chunks
	// carried it (escapes never span chunks); scratch escapes a piece.
	text    []byte
	scratch []byte
	// onChunk receives the inner stream's chunks for the event being read,
	// whose emit is emit; convErr is a chunk without a Responses form.
	onChunk func([]byte) error
	emit    func([]byte) error
	convErr error
	tool    *respToolState
	closed  map[string]bool
	finish  string
	usage   *headUsage
	frame   []byte
}

// respToolState is the function call being streamed.
type respToolState struct {
	callID, name string
	args         []byte
}

func newResponsesStream(inner Stream, call *Call) Stream {
	return &respStream{inner: inner, call: call}
}

// Event implements [Stream.Event].
func (s *respStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if !s.started {
		// The first event is read at the bottom of the attempt loop, and
		// the upstream's first event (Anthropic's message_start) decodes
		// deep: apart (see apart), so an open stream keeps no deeper stack
		// than a chat stream. The emits run there too, in order, while
		// this goroutine waits.
		r := apart(func() (r readOutcome) {
			r.done, r.err = s.event(event, data, emit)
			return r
		})
		return r.done, r.err
	}
	return s.event(event, data, emit)
}

// event is Event's work. The inner stream's chunks come back through
// s.onChunk, made once, so that an event allocates no closure.
func (s *respStream) event(event, data []byte, emit func([]byte) error) (bool, error) {
	if s.onChunk == nil {
		s.onChunk = func(chunk []byte) error {
			if s.convErr != nil {
				return nil
			}
			if err := s.chunk(chunk, s.emit); err != nil {
				if errors.Is(err, ErrResponsesStream) {
					s.convErr = err
					return nil
				}
				return err
			}
			return nil
		}
	}
	s.emit = emit
	done, err := s.inner.Event(event, data, s.onChunk)
	s.emit = nil
	if s.convErr != nil {
		err := s.convErr
		_ = s.emitError(emit, "server_error", err.Error())
		return false, err
	}
	return done, err
}

// Result implements [Stream.Result].
func (s *respStream) Result() Result { return s.inner.Result() }

// chunk translates one chat chunk (or the end marker).
func (s *respStream) chunk(p []byte, emit func([]byte) error) error {
	if bytes.Equal(p, doneData) {
		return s.end(emit)
	}
	if s.started {
		if text, ok := plainTextDelta(p); ok {
			// The steady state, without a decode: the text is relayed as
			// the chunk escaped it.
			return s.textDelta(text, emit)
		}
	}
	dec := &s.dec
	dec.c, dec.usage, dec.ch, dec.d = msgChunk{}, nil, msgChoice{}, msgDelta{}
	c, ch, d := &dec.c, &dec.ch, &dec.d
	hasChoice, err := decodeChunk(p, c, &dec.usage, ch, d)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrResponsesStream, err)
	}
	if len(c.Error) > 0 && !anthIsNull(c.Error) {
		var e struct {
			Message string `json:"message"`
		}
		_ = unmarshalOffStack(c.Error, &e)
		return s.emitError(emit, "server_error", e.Message)
	}
	if !s.started {
		if err := s.start(c, emit); err != nil {
			return err
		}
	}
	if dec.usage != nil {
		s.usage = dec.usage
	}
	if !hasChoice {
		return nil
	}
	text := ""
	if d.Content != nil {
		text = *d.Content
	}
	if text == "" && d.Refusal != nil {
		text = *d.Refusal
	}
	if text != "" {
		s.scratch = jsonscan.AppendString(s.scratch[:0], text)
		if err := s.textDelta(s.scratch[1:len(s.scratch)-1], emit); err != nil {
			return err
		}
	}
	for _, raw := range d.ToolCalls {
		var tc chatToolCallIn
		if err := unmarshalOffStack(raw, &tc); err != nil {
			return fmt.Errorf("%w: %w", ErrResponsesStream, err)
		}
		if err := s.toolCall(tc, emit); err != nil {
			return err
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		s.finish = *ch.FinishReason
	}
	return nil
}

// start opens the response with the first chunk's id and model.
func (s *respStream) start(c *msgChunk, emit func([]byte) error) error {
	s.started = true
	s.chatID = c.ID
	s.resp = respSkeleton(s.call, c.ID, c.Model, c.Created)
	if err := s.emitResponse(emit, responses.EventCreated); err != nil {
		return err
	}
	return s.emitResponse(emit, responses.EventInProgress)
}

// outputIndex is the index of the item being opened.
func (s *respStream) outputIndex() int { return len(s.resp.Output) }

// textDelta relays a piece of the text (escaped, as in a JSON string),
// opening the message item first.
func (s *respStream) textDelta(text []byte, emit func([]byte) error) error {
	if s.open != "text" {
		if s.closed["text"] {
			return fmt.Errorf("%w: text resumed after a tool call", ErrResponsesStream)
		}
		if err := s.closeItem(emit); err != nil {
			return err
		}
		s.open = "text"
		s.itemID = respItemID("msg", s.chatID, s.outputIndex())
		s.text = s.text[:0]
		if err := s.emitItem(emit, responses.EventOutputItemAdded,
			json.RawMessage(`{"id":`+string(jsonscan.AppendString(nil, s.itemID))+`,"type":"message","status":"in_progress","content":[],"role":"assistant"}`)); err != nil {
			return err
		}
		if err := s.emitPart(emit, responses.EventContentPartAdded, ""); err != nil {
			return err
		}
	}
	s.text = append(s.text, text...)
	f := s.head(responses.EventOutputTextDelta)
	f = append(f, `,"content_index":0,"logprobs":[],"delta":"`...)
	f = append(append(f, text...), '"')
	f = s.tail(f, true)
	return emit(f)
}

// toolCall relays a piece of a tool call, opening its item first.
func (s *respStream) toolCall(tc chatToolCallIn, emit func([]byte) error) error {
	key := "t" + strconv.Itoa(tc.Index)
	if s.open != key {
		if s.closed[key] {
			return fmt.Errorf("%w: tool call %d resumed after another item began", ErrResponsesStream, tc.Index)
		}
		if err := s.closeItem(emit); err != nil {
			return err
		}
		s.open = key
		s.tool = &respToolState{callID: tc.ID, name: tc.Function.Name}
		s.itemID = "fc_" + trimCallPrefix(tc.ID)
		if err := s.emitItem(emit, responses.EventOutputItemAdded, respFunctionItem(tc.ID, tc.Function.Name, "", responses.StatusInProgress)); err != nil {
			return err
		}
	}
	if tc.Function.Arguments == "" {
		return nil
	}
	s.tool.args = append(s.tool.args, tc.Function.Arguments...)
	f := s.head(responses.EventFunctionArgsDelta)
	f = append(f, `,"delta":`...)
	f = jsonscan.AppendString(f, tc.Function.Arguments)
	f = s.tail(f, true)
	return emit(f)
}

func trimCallPrefix(id string) string {
	if len(id) > 5 && id[:5] == "call_" {
		return id[5:]
	}
	return id
}

// closeItem ends the open item and adds it to the response's output.
func (s *respStream) closeItem(emit func([]byte) error) error {
	switch {
	case s.open == "":
		return nil
	case s.open == "text":
		var text string
		if err := unmarshalOffStack(append(append(append(s.scratch[:0], '"'), s.text...), '"'), &text); err != nil {
			return fmt.Errorf("%w: the text: %w", ErrResponsesStream, err)
		}
		f := s.head(responses.EventOutputTextDone)
		f = append(f, `,"content_index":0,"logprobs":[],"text":`...)
		f = jsonscan.AppendString(f, text)
		if err := emit(s.tail(f, true)); err != nil {
			return err
		}
		if err := s.emitPart(emit, responses.EventContentPartDone, text); err != nil {
			return err
		}
		item := respMessageItem(s.itemID, text, responses.StatusCompleted)
		if err := s.emitItem(emit, responses.EventOutputItemDone, item); err != nil {
			return err
		}
		s.resp.Output = append(s.resp.Output, item)
	default:
		args := string(s.tool.args)
		f := s.head(responses.EventFunctionArgsDone)
		f = append(f, `,"arguments":`...)
		f = jsonscan.AppendString(f, args)
		f = s.tail(f, true)
		if err := emit(f); err != nil {
			return err
		}
		item := respFunctionItem(s.tool.callID, s.tool.name, args, responses.StatusCompleted)
		if err := s.emitItem(emit, responses.EventOutputItemDone, item); err != nil {
			return err
		}
		s.resp.Output = append(s.resp.Output, item)
		s.tool = nil
	}
	if s.closed == nil {
		s.closed = map[string]bool{}
	}
	s.closed[s.open] = true
	s.open = ""
	return nil
}

// end closes the response at the chat stream's end marker.
func (s *respStream) end(emit func([]byte) error) error {
	if s.finished {
		return nil
	}
	s.finished = true
	if !s.started {
		return fmt.Errorf("%w: the stream ended before it began", ErrResponsesStream)
	}
	if err := s.closeItem(emit); err != nil {
		return err
	}
	s.resp.Status, s.resp.IncompleteDetails = respStatus(s.finish)
	s.resp.Usage = respUsage(s.usage)
	name := responses.EventCompleted
	if s.resp.Status == responses.StatusIncomplete {
		name = responses.EventIncomplete
	}
	return s.emitResponse(emit, name)
}

// head starts an event's frame: the event line and the data's type.
func (s *respStream) head(name string) []byte {
	f := append(s.frame[:0], "event: "...)
	f = append(f, name...)
	f = append(f, "\ndata: {\"type\":\""...)
	f = append(f, name...)
	return append(f, '"')
}

// tail ends an event's frame: the item it is about (when item is set),
// and the sequence number.
func (s *respStream) tail(f []byte, item bool) []byte {
	if item {
		f = append(f, `,"item_id":`...)
		f = jsonscan.AppendString(f, s.itemID)
		f = append(f, `,"output_index":`...)
		f = strconv.AppendInt(f, int64(s.outputIndex()), 10)
	}
	f = append(f, `,"sequence_number":`...)
	f = strconv.AppendInt(f, s.seq, 10)
	s.seq++
	s.frame = append(f, '}')
	return s.frame
}

// emitItem emits an output_item event.
func (s *respStream) emitItem(emit func([]byte) error, name string, item json.RawMessage) error {
	f := s.head(name)
	f = append(f, `,"item":`...)
	f = append(f, item...)
	f = append(f, `,"output_index":`...)
	f = strconv.AppendInt(f, int64(s.outputIndex()), 10)
	return emit(s.tail(f, false))
}

// emitPart emits a content_part event of the message's text part.
func (s *respStream) emitPart(emit func([]byte) error, name, text string) error {
	f := s.head(name)
	f = append(f, `,"content_index":0,"item_id":`...)
	f = jsonscan.AppendString(f, s.itemID)
	f = append(f, `,"output_index":`...)
	f = strconv.AppendInt(f, int64(s.outputIndex()), 10)
	f = append(f, `,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	f = jsonscan.AppendString(f, text)
	f = append(f, '}')
	return emit(s.tail(f, false))
}

// emitResponse emits an event that carries the whole response.
func (s *respStream) emitResponse(emit func([]byte) error, name string) error {
	var b []byte
	var err error
	OffStack(func() { b, err = json.Marshal(s.resp) }) // encoding/json's frames: see OffStack
	if err != nil {
		return err
	}
	f := s.head(name)
	f = append(f, `,"response":`...)
	f = append(f, b...)
	return emit(s.tail(f, false))
}

// emitError emits the stream's error event, which ends it.
func (s *respStream) emitError(emit func([]byte) error, code, message string) error {
	f := s.head(responses.EventError)
	f = append(f, `,"code":`...)
	f = jsonscan.AppendString(f, code)
	f = append(f, `,"message":`...)
	f = jsonscan.AppendString(f, message)
	f = append(f, `,"param":null`...)
	return emit(s.tail(f, false))
}

// plainTextDelta returns a chunk's text delta, as escaped in the chunk,
// when the chunk carries that and nothing else (no tool call, reasoning,
// refusal, finish reason, usage or error); ok is false otherwise, and the
// chunk is decoded.
func plainTextDelta(p []byte) (text []byte, ok bool) {
	if !json.Valid(p) {
		return nil, false
	}
	if e := jsonscan.Member(p, "error"); e != nil && !anthIsNull(e) {
		return nil, false
	}
	if u := jsonscan.Member(p, "usage"); u != nil && !anthIsNull(u) {
		return nil, false
	}
	choices := jsonscan.Member(p, "choices")
	if len(choices) < 2 || choices[0] != '[' {
		return nil, false
	}
	i := jsonscan.SkipSpace(choices, 1)
	end := jsonscan.SkipValue(choices, i)
	if end <= i || end > len(choices) {
		return nil, false
	}
	if next := jsonscan.SkipSpace(choices, end); next >= len(choices) || choices[next] != ']' {
		return nil, false // more than one choice
	}
	choice := choices[i:end]
	if f := jsonscan.Member(choice, "finish_reason"); f != nil && !anthIsNull(f) {
		return nil, false
	}
	delta := jsonscan.Member(choice, "delta")
	if delta == nil || jsonscan.MayHoldMember(delta, plainDeltaOthers) {
		return nil, false
	}
	c := jsonscan.Member(delta, "content")
	if len(c) < 3 || c[0] != '"' {
		return nil, false
	}
	return c[1 : len(c)-1], true
}

// plainDeltaOthers are the delta members a plain text delta has none of.
var plainDeltaOthers = []string{"tool_calls", "reasoning", "reasoning_details", "refusal", "function_call"}
