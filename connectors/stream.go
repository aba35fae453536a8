package connectors

import (
	"bytes"
	"encoding/json"
)

// openAIStream relays an OpenAI-shaped event stream chunk by chunk and reads
// back who served. Chunks are relayed as they are; only the chunks that carry
// routing reports are decoded (the first, and those with usage, a finish
// reason, an error or the upstream's metadata), so a plain text delta costs no
// allocation.
type openAIStream struct {
	read   func([]byte, *Result) error
	strip  []string
	finish func(*Result)
	res    Result
	seen   bool
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
	if !s.seen || bytes.Contains(data, markUsage) || bytes.Contains(data, markFinish) ||
		bytes.Contains(data, markError) || bytes.Contains(data, markMeta) || bytes.Contains(data, markProvMD) {
		s.seen = true
		if err := s.read(data, &s.res); err != nil {
			return false, err
		}
		if bytes.Contains(data, markError) && inBandError(data) {
			s.res.StreamError = string(data)
		}
		if len(s.strip) > 0 {
			data = stripMembers(data, s.strip...)
		}
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
