package connectors

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// openAIStream relays an OpenAI-shaped event stream chunk by chunk and reads
// back who served. Only the chunks that carry routing reports are decoded
// (the first, and those with usage, a finish reason, an error or the
// upstream's metadata). Every chunk that holds an upstream-specific member
// (strip; a marketplace may put its provider on every chunk) is relayed
// without it, rewritten into a buffer the stream reuses, so a text delta
// costs no allocation either way.
type openAIStream struct {
	read func([]byte, *Result) error
	// strip names top-level members, stripChoices members of each choice's
	// delta, that the caller never sees.
	strip, stripChoices []string
	// hideUsage: the connector asked for usage the caller did not, so
	// usage is read and not relayed: the usage-only chunk (choices: []) is
	// dropped, usage on a chunk with choices is stripped from it.
	hideUsage bool
	res       Result
	seen      bool
	// buf, choiceBuf and usageBuf hold the last chunk stripped of
	// top-level members, of choice members and of usage; valid until the
	// next event.
	buf, choiceBuf, usageBuf []byte
}

var (
	markUsage   = []byte(`"usage"`)
	markNoUsage = []byte(`"usage":null`)
	usageMember = []string{"usage"}
	markFinish  = []byte(`"finish_reason":"`)
	markError   = []byte(`"error"`)
	markMeta    = []byte(`_metadata"`)
)

// Event implements [Stream.Event].
func (s *openAIStream) Event(_ []byte, data []byte, emit func([]byte) error) (bool, error) {
	if bytes.Equal(data, doneData) {
		return true, emit(doneData)
	}
	// A chunk carries usage when it has a usage member that is not null
	// (with include_usage, OpenAI puts "usage":null on every other chunk).
	usage := bytes.Contains(data, markUsage) && !bytes.Contains(data, markNoUsage)
	read := !s.seen || usage || bytes.Contains(data, markFinish) ||
		bytes.Contains(data, markError) || bytes.Contains(data, markMeta)
	if read {
		s.seen = true
		var err error
		// Off the stream's stack (OffStack): a chunk's scan nests a few
		// frames per level, at the bottom of the relay.
		OffStack(func() { err = s.read(data, &s.res) })
		if err != nil {
			return false, err
		}
	}
	if usage && s.hideUsage {
		// The caller did not ask for usage: the usage-only chunk is not
		// relayed, and usage riding on a chunk with choices (the Vercel AI
		// Gateway's final chunk) is taken off it.
		if usageOnly(data) {
			return false, nil
		}
		if out, stripped := jsonscan.StripInto(s.usageBuf[:0], data, usageMember); stripped {
			s.usageBuf, data = out, out
		}
	}
	if out, stripped := jsonscan.StripInto(s.buf[:0], data, s.strip); stripped {
		s.buf, data = out, out
	}
	if out, stripped := stripInChoices(s.choiceBuf[:0], data, s.stripChoices); stripped {
		s.choiceBuf, data = out, out
	}
	// The result records the error event as the caller received it. The
	// stream ends with it: a marketplace may still send [DONE] after an
	// error (OpenRouter does), and relaying that would let a caller take a
	// failed stream for a whole one.
	if read && bytes.Contains(data, markError) && inBandError(data) {
		s.res.StreamError = string(data)
		if err := emit(data); err != nil {
			return false, err
		}
		return false, ErrInBandError
	}
	return false, emit(data)
}

// ErrInBandError ends a relayed stream after the upstream's own error event,
// which the caller has received.
var ErrInBandError = errors.New("connectors: the upstream reported an error inside the stream")

// Result implements [Stream.Result].
func (s *openAIStream) Result() Result { return s.res }

// usageOnly reports whether a chunk is the usage-only chunk that
// stream_options.include_usage asks for: its choices are an empty array.
func usageOnly(data []byte) bool {
	return string(jsonscan.TrimSpace(jsonscan.Member(data, "choices"))) == "[]"
}

// inBandError reports whether a chunk is an error event (a top-level "error"
// member), not merely a chunk whose text mentions the word.
func inBandError(data []byte) bool {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	return unmarshalOffStack(data, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null"
}
