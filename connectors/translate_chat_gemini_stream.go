package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/gemini"
)

// The Gemini dialect's stream translation: streamGenerateContent?alt=sse
// sends server-sent events whose data is each a GenerateContentResponse
// holding the next parts of the candidate; they become
// chat.completion.chunk payloads. The event that carries a finish reason
// is the last: it ends the stream with the finish chunk, the usage chunk
// (when the caller asked for it) and the end marker.

// ErrGeminiStream reports a malformed generateContent event stream.
var ErrGeminiStream = errors.New("vertex: malformed generateContent event stream")

// NewStream implements [Connector.NewStream].
func (g *vertexGemini) NewStream(call *Call) Stream {
	return &geminiStream{call: call, now: g.now, res: Result{ServedProvider: "google-vertex"}, hideUsage: call != nil && call.UsageAdded}
}

// geminiStream translates one generateContent event stream.
type geminiStream struct {
	call      *Call
	now       func() time.Time
	hideUsage bool

	started, done bool
	// head is `{"id":…,"object":"chat.completion.chunk","created":…,"model":…,`.
	head  []byte
	buf   []byte
	tools int
	id    string
	res   Result
}

// Event implements [Stream.Event].
func (s *geminiStream) Event(_, data []byte, emit func([]byte) error) (bool, error) {
	if s.done {
		return true, nil
	}
	var r gemini.Response
	if err := unmarshalOffStack(data, &r); err != nil {
		return false, fmt.Errorf("%w: %w", ErrGeminiStream, err)
	}
	if r.Error != nil {
		return false, s.errorEvent(r.Error, emit)
	}
	if !s.started {
		s.start(&r)
		if err := s.emitDelta(emit, []byte(`{"role":"assistant","content":""}`)); err != nil {
			return false, err
		}
	}
	if r.UsageMetadata != nil && r.UsageMetadata.PromptTokenCount != nil {
		s.res.Usage = geminiUsage(r.UsageMetadata)
	}
	finish := ""
	if len(r.Candidates) > 0 {
		c := &r.Candidates[0]
		for _, p := range c.Content.Parts {
			if err := s.part(&p, emit); err != nil {
				return false, err
			}
		}
		finish = c.FinishReason
	} else if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		finish = "SAFETY"
	}
	if finish == "" {
		return false, nil
	}
	return true, s.finish(finish, emit)
}

// start reads the first event's id and model: every chunk starts with
// the same head.
func (s *geminiStream) start(r *gemini.Response) {
	s.started = true
	s.id = r.ResponseID
	s.res.ServedModel = r.ModelVersion
	s.head = append(s.head[:0], `{"id":`...)
	s.head = jsonscan.AppendString(s.head, geminiAnswerID(r.ResponseID))
	s.head = append(s.head, `,"object":"chat.completion.chunk","created":`...)
	s.head = strconv.AppendInt(s.head, s.now().Unix(), 10)
	s.head = append(s.head, `,"model":`...)
	s.head = jsonscan.AppendString(s.head, echoModel(s.call, r.ModelVersion))
	s.head = append(s.head, ',')
}

// part relays one part: text as content, a thought as reasoning, a
// function call whole as a tool call.
func (s *geminiStream) part(p *gemini.Part, emit func([]byte) error) error {
	switch {
	case p.FunctionCall != nil:
		tc := geminiToolCall(s.id, s.tools, p)
		d := append([]byte(`{"tool_calls":[{"index":`), strconv.Itoa(s.tools)...)
		d = append(d, `,"id":`...)
		d = jsonscan.AppendString(d, tc.ID)
		d = append(d, `,"type":"function","function":{"name":`...)
		d = jsonscan.AppendString(d, tc.Function.Name)
		d = append(d, `,"arguments":`...)
		d = jsonscan.AppendString(d, tc.Function.Arguments)
		d = append(d, `}}]}`...)
		s.tools++
		return s.emitDelta(emit, d)
	case p.Text != nil && *p.Text != "" && p.Thought:
		return s.emitDelta(emit, append(jsonscan.AppendString([]byte(`{"reasoning":`), *p.Text), '}'))
	case p.Text != nil && *p.Text != "":
		return s.emitDelta(emit, append(jsonscan.AppendString([]byte(`{"content":`), *p.Text), '}'))
	}
	return nil
}

// finish ends the stream: the finish chunk, the usage chunk unless the
// caller did not ask for it, and the end marker.
func (s *geminiStream) finish(reason string, emit func([]byte) error) error {
	s.done = true
	s.res.FinishReason = geminiFinish(reason, s.tools > 0)
	s.buf = append(s.buf[:0], s.head...)
	s.buf = append(s.buf, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":`...)
	s.buf = jsonscan.AppendString(s.buf, s.res.FinishReason)
	s.buf = append(s.buf, `}]}`...)
	if err := emit(s.buf); err != nil {
		return err
	}
	if !s.hideUsage {
		u := s.res.Usage
		s.buf = append(s.buf[:0], s.head...)
		s.buf = append(s.buf, `"choices":[],"usage":{"prompt_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, u.PromptTokens, 10)
		s.buf = append(s.buf, `,"completion_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, u.CompletionTokens, 10)
		s.buf = append(s.buf, `,"total_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, u.PromptTokens+u.CompletionTokens, 10)
		s.buf = append(s.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, u.CachedTokens, 10)
		s.buf = append(s.buf, '}')
		if u.ReasoningTokens > 0 {
			s.buf = append(s.buf, `,"completion_tokens_details":{"reasoning_tokens":`...)
			s.buf = strconv.AppendInt(s.buf, u.ReasoningTokens, 10)
			s.buf = append(s.buf, '}')
		}
		s.buf = append(s.buf, "}}"...)
		if err := emit(s.buf); err != nil {
			return err
		}
	}
	return emit(doneData)
}

// errorEvent relays an in-band error in the chat-completions error shape
// (its code the HTTP status Google gives, its type from that status),
// records it in the result, and returns it.
func (s *geminiStream) errorEvent(e *gemini.Error, emit func([]byte) error) error {
	var payload struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    *int   `json:"code"`
		} `json:"error"`
	}
	payload.Error.Message, payload.Error.Type = e.Message, ErrorTypeForStatus(e.Code)
	if e.Code != 0 {
		payload.Error.Code = &e.Code
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	s.res.FinishReason = "error"
	s.res.StreamError = string(b)
	if err := emit(b); err != nil {
		return err
	}
	return fmt.Errorf("vertex: in-band error: %s: %s", e.Status, e.Message)
}

// emitDelta emits a chunk with a delta object and no finish reason.
func (s *geminiStream) emitDelta(emit func([]byte) error, delta []byte) error {
	s.buf = append(s.buf[:0], s.head...)
	s.buf = append(s.buf, anthChoiceOpen...)
	s.buf = append(s.buf, delta...)
	s.buf = append(s.buf, anthChoiceClose...)
	return emit(s.buf)
}

// Result implements [Stream.Result].
func (s *geminiStream) Result() Result { return s.res }
