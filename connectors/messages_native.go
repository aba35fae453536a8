package connectors

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The read-back of a Messages event stream relayed as it came (the
// Anthropic upstream's, and the marketplaces' Messages endpoints'): only
// what the row needs — the model from message_start, the usage from
// message_start and message_delta, the stop reason, an in-band error —
// read with shallow decodes of the members that carry it, never the
// content blocks. It reads back exactly what the anthropic connector's
// translating stream reads (TestMessagesNativeRelaysRecordedStreams), at a
// fraction of the cost and stack.

// msgReadBack reads a relayed Messages stream back.
type msgReadBack struct {
	res     Result
	tok     anthTokens
	stop    *string
	started bool
}

// newMsgReadBack returns the read-back of a stream whose upstream is
// provider ("" for a marketplace, which names it elsewhere).
func newMsgReadBack(provider string) *msgReadBack {
	return &msgReadBack{res: Result{ServedProvider: provider}}
}

// Event implements [Stream.Event]; it emits nothing (the relay does).
func (s *msgReadBack) Event(event, data []byte, _ func([]byte) error) (bool, error) {
	typ := jsonscan.StringContent(jsonscan.Member(data, "type"))
	if typ == nil {
		typ = event
	}
	switch string(typ) {
	case "message_start":
		msg := jsonscan.Member(data, "message")
		if msg == nil {
			return false, fmt.Errorf("%w: message_start without its message", ErrAnthropicStream)
		}
		s.started = true
		if m := jsonscan.StringContent(jsonscan.Member(msg, "model")); m != nil {
			s.res.ServedModel = string(m)
		}
		return false, s.usage(jsonscan.Member(msg, "usage"))
	case "message_delta":
		if d := jsonscan.Member(data, "delta"); d != nil {
			if r := jsonscan.StringContent(jsonscan.Member(d, "stop_reason")); r != nil {
				stop := string(r)
				s.stop = &stop
			}
		}
		return false, s.usage(jsonscan.Member(data, "usage"))
	case "message_stop":
		return true, nil
	case "error":
		var e messages.ErrorEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrAnthropicStream, err)
		}
		s.res.FinishReason = "error"
		se := newStreamError(e.Error)
		b, err := anthStreamErrorChunk(se)
		if err != nil {
			return false, err
		}
		s.res.StreamError = string(b)
		return false, se
	}
	if !s.started && string(typ) != "ping" {
		return false, fmt.Errorf("%w: %q before message_start", ErrAnthropicStream, typ)
	}
	return false, nil
}

// usage merges a usage object, when there is one.
func (s *msgReadBack) usage(raw []byte) error {
	if raw == nil || anthIsNull(raw) {
		return nil
	}
	return s.tok.scan(raw)
}

// scan merges a usage object's counts, read by a scan: the members it
// reports replace the counts so far, as [anthTokens.merge] does.
func (t *anthTokens) scan(usage []byte) error {
	for _, f := range [...]struct {
		key string
		dst *int64
	}{{"input_tokens", &t.input}, {"output_tokens", &t.output},
		{"cache_creation_input_tokens", &t.cacheCreate}, {"cache_read_input_tokens", &t.cacheRead}} {
		v := jsonscan.Member(usage, f.key)
		if v == nil || anthIsNull(v) {
			continue
		}
		num := jsonscan.NumberText(v)
		n, err := strconv.ParseInt(string(num), 10, 64)
		if num == nil || err != nil {
			return fmt.Errorf("%w: usage.%s is not an integer", ErrAnthropicStream, f.key)
		}
		*f.dst = n
	}
	return nil
}

// Result implements [Stream.Result].
func (s *msgReadBack) Result() Result {
	r := s.res
	r.Usage = s.tok.usage()
	if r.FinishReason == "" {
		r.FinishReason = anthFinish(s.stop)
	}
	return r
}

// readMessageAnswer reads a non-streaming Messages answer back as
// [anthropic.Response] does — the model, the usage, the stop reason, an
// error the answer carries — scanning for those members rather than
// decoding the message. provider is the upstream's ("" for a marketplace).
func readMessageAnswer(body []byte, provider string) (Result, error) {
	res := Result{ServedProvider: provider}
	if !json.Valid(body) {
		return res, fmt.Errorf("anthropic: decode answer: the answer is not JSON")
	}
	typ := string(jsonscan.StringContent(jsonscan.Member(body, "type")))
	if e := jsonscan.Member(body, "error"); typ == "error" || (e != nil && !anthIsNull(e)) {
		var me messages.Error
		if e != nil {
			_ = json.Unmarshal(e, &me)
		}
		return res, newStreamError(me)
	}
	if typ != "message" {
		return res, fmt.Errorf("anthropic: answer of type %q, want message", typ)
	}
	res.ServedModel = string(jsonscan.StringContent(jsonscan.Member(body, "model")))
	var tok anthTokens
	if raw := jsonscan.Member(body, "usage"); raw != nil && !anthIsNull(raw) {
		if err := tok.scan(raw); err != nil {
			return res, err
		}
	}
	res.Usage = tok.usage()
	var stop *string
	if r := jsonscan.StringContent(jsonscan.Member(body, "stop_reason")); r != nil {
		s := string(r)
		stop = &s
	}
	res.FinishReason = anthFinish(stop)
	return res, nil
}
