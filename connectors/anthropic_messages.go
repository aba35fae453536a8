package connectors

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The anthropic connector's pass-through of the Messages API: a Messages
// request goes to the upstream with only what policy changes, and its
// answer or event stream comes back as the upstream sent it. Who served and
// the usage are read back with the same readers the translation uses.

var _ tokenCounter = (*anthropic)(nil)

// countsTokens implements [tokenCounter].
func (*anthropic) countsTokens() {}

// translateMessages implements [messagesNative]: the caller's body with the
// model spelled as the upstream's own id (and the token cap as a budget may
// have lowered it, which body already carries); the anthropic-beta flags
// the check kept ([compiler.Outcome.Betas]) go along.
func (*anthropic) translateMessages(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	h := noHeaders
	if len(out.Betas) > 0 {
		h = http.Header{"Anthropic-Beta": {strings.Join(out.Betas, ",")}}
	}
	return &Native{Path: "/messages", Header: h, Body: encodeBody(body, member{"model", jsonscan.AppendString(nil, out.NativeModel)})}, nil
}

// messagesResponse implements [messagesNative]: the answer is read as the
// translation reads it, and returned as it came.
func (c *anthropic) messagesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	res, err := readMessageAnswer(body, c.served())
	if err != nil {
		return nil, res, err
	}
	return body, res, nil
}

// newMessagesStream implements [messagesNative].
func (c *anthropic) newMessagesStream(call *Call) Stream {
	return &anthRelay{read: newMsgReadBack(c.served())}
}

// anthRelay relays a Messages event stream event by event, as the upstream
// sent it (ping events included), while the translator reads it back.
type anthRelay struct {
	read  Stream
	frame []byte
}

// discard is an emit that drops what it is given.
func discard([]byte) error { return nil }

// Event implements [Stream.Event]. The upstream's own error event is relayed
// and ends the stream; an event the reader cannot make sense of ends it
// with an error event of the relay's own, so the caller is told.
func (s *anthRelay) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	done, err := s.read.Event(event, data, discard)
	var se *StreamError
	if err != nil && !errors.As(err, &se) {
		b, _ := anthMarshal(ErrorEvent("api_error", "the upstream's event stream could not be read: "+err.Error(), ""))
		if e := emit(AppendEvent(s.frame[:0], "error", b)); e != nil {
			return false, e
		}
		return false, err
	}
	name := string(event)
	if name == "" {
		name = string(jsonscan.StringContent(jsonscan.Member(data, "type")))
	}
	s.frame = AppendEvent(s.frame[:0], name, data)
	if e := emit(s.frame); e != nil {
		return false, e
	}
	return done, err
}

// Result implements [Stream.Result].
func (s *anthRelay) Result() Result { return s.read.Result() }

// messagesCapabilities implements [messagesNative]: the Messages endpoint is
// the upstream's only one, and expresses what its chat translation does.
func (c *anthropic) messagesCapabilities() compiler.Capabilities { return c.Capabilities() }

// readOutcome is a stream reader's outcome, carried back by apart.
type readOutcome struct {
	done bool
	err  error
}
