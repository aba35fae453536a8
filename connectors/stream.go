package connectors

import (
	"bytes"
	"encoding/json"

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
	read   func([]byte, *Result) error
	strip  []string
	finish func(*Result)
	res    Result
	seen   bool
	buf    []byte // the last stripped chunk; valid until the next event
}

var (
	markUsage  = []byte(`"usage"`)
	markFinish = []byte(`"finish_reason":"`)
	markError  = []byte(`"error"`)
	markMeta   = []byte(`_metadata"`)
	markProvMD = []byte(`"providerMetadata"`)
)

// Event implements [Stream.Event].
func (s *openAIStream) Event(_ []byte, data []byte, emit func([]byte) error) (bool, error) {
	if bytes.Equal(data, doneData) {
		if s.finish != nil {
			s.finish(&s.res)
			s.finish = nil
		}
		return true, emit(doneData)
	}
	read := !s.seen || bytes.Contains(data, markUsage) || bytes.Contains(data, markFinish) ||
		bytes.Contains(data, markError) || bytes.Contains(data, markMeta) || bytes.Contains(data, markProvMD)
	if read {
		s.seen = true
		if err := s.read(data, &s.res); err != nil {
			return false, err
		}
	}
	if out, stripped := jsonscan.StripInto(s.buf[:0], data, s.strip); stripped {
		s.buf, data = out, out
	}
	// The result records the error event as the caller received it.
	if read && bytes.Contains(data, markError) && inBandError(data) {
		s.res.StreamError = string(data)
	}
	return false, emit(data)
}

// Result implements [Stream.Result].
func (s *openAIStream) Result() Result {
	if s.finish != nil {
		s.finish(&s.res)
		s.finish = nil
	}
	return s.res
}

// inBandError reports whether a chunk is an error event (a top-level "error"
// member), not merely a chunk whose text mentions the word.
func inBandError(data []byte) bool {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(data, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null"
}
