package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/responses"
)

// The read-back of a Responses API answer and event stream, shared by the
// upstreams that speak the API (openai_responses.go,
// openrouter_responses.go, vercel_responses.go): the model that served, the
// usage (input with its cached part, output) and, where a marketplace adds
// it, the billed cost; the answer itself is relayed as the upstream sent
// it, with the upstream's own routing report removed.

// readResponseObject fills the result from a response object: its members
// found by a scan, and only the usage and an error decoded (a response's
// output, often most of it, is never decoded).
func readResponseObject(b []byte, res *Result) error {
	if !json.Valid(b) {
		return fmt.Errorf("connectors: the response object is not JSON")
	}
	if m := jsonscan.StringContent(jsonscan.Member(b, "model")); len(m) > 0 {
		res.ServedModel = string(m)
	}
	if string(jsonscan.Member(b, "store")) == "true" {
		// Only a stored response's id is kept: it is what a continuation
		// names (see gateway/holders.go).
		if id := jsonscan.StringContent(jsonscan.Member(b, "id")); len(id) > 0 {
			res.ResponseID, res.Stored = string(id), true
		}
	}
	if u := jsonscan.Member(b, "usage"); u != nil && !anthIsNull(u) {
		in, inDetails := jsonscan.Member(u, "input_tokens"), jsonscan.Member(u, "input_tokens_details")
		outDetails := jsonscan.Member(u, "output_tokens_details")
		res.Usage = Usage{PromptTokens: scanCount(in), CompletionTokens: scanCount(jsonscan.Member(u, "output_tokens")),
			CachedTokens: scanCount(jsonscan.Member(inDetails, "cached_tokens")), CacheWriteTokens: scanCount(jsonscan.Member(inDetails, "cache_write_tokens")),
			ReasoningTokens: scanCount(jsonscan.Member(outDetails, "reasoning_tokens"))}
		if num := jsonscan.NumberText(jsonscan.Member(u, "cost")); num != nil {
			if c, err := strconv.ParseFloat(string(num), 64); err == nil {
				res.Cost, res.CostReported = c, true
			}
		}
	}
	status := string(jsonscan.StringContent(jsonscan.Member(b, "status")))
	switch status {
	case responses.StatusIncomplete:
		res.FinishReason = "length"
		if d := jsonscan.Member(b, "incomplete_details"); d != nil &&
			string(jsonscan.StringContent(jsonscan.Member(d, "reason"))) == "content_filter" {
			res.FinishReason = "content_filter"
		}
	case responses.StatusFailed:
		res.FinishReason = "error"
		if e := jsonscan.Member(b, "error"); e != nil {
			res.StreamError = string(jsonscan.StringContent(jsonscan.Member(e, "message")))
		}
	case "":
	default:
		res.FinishReason = "stop"
		if bytes.Contains(jsonscan.Member(b, "output"), []byte(`"function_call"`)) {
			res.FinishReason = "tool_calls"
		}
	}
	return nil
}

// scanCount reads a token count (0 when absent, null or not a
// non-negative integer).
func scanCount(v []byte) int64 {
	num := jsonscan.NumberText(v)
	if num == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// respReader reads what one upstream adds to its Responses answers.
type respReader struct {
	// provider is the provider a direct upstream is ("" for a marketplace).
	provider string
	// strip names the members of an answer, or of a stream's event, that
	// are the upstream's routing report, removed before the caller sees
	// them.
	strip []string
	// meta reads the routing report (nil when the upstream has none).
	meta func(b []byte, res *Result) error
}

// response reads a non-streaming answer and returns it for the caller.
func (r respReader) response(body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: r.provider}
	if err := readResponseObject(body, &res); err != nil {
		return nil, res, err
	}
	if r.meta != nil {
		if err := r.meta(body, &res); err != nil {
			return nil, res, err
		}
	}
	if len(r.strip) > 0 && jsonscan.MayHoldMember(body, r.strip) {
		body = jsonscan.StripMembers(body, r.strip...)
	}
	return body, res, nil
}

// stream returns the relay of one event stream.
func (r respReader) stream() Stream {
	return &respRelay{r: r, res: Result{ServedProvider: r.provider}}
}

// respRelay relays a Responses event stream event by event, as the upstream
// sent it, reading back the model from response.created and the usage from
// the terminal event. The stream ends at the terminal event (the
// marketplaces' trailing [DONE] sentinel is not relayed: the API has none).
type respRelay struct {
	r     respReader
	res   Result
	frame []byte
}

// Event implements [Stream.Event].
func (s *respRelay) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if bytes.Equal(bytes.TrimSpace(data), doneData) {
		return true, nil
	}
	name := event
	if len(name) == 0 {
		name = jsonscan.StringContent(jsonscan.Member(data, "type"))
	}
	terminal := responses.Terminal(string(name))
	switch string(name) {
	case responses.EventCreated, responses.EventCompleted, responses.EventIncomplete, responses.EventFailed:
		if resp := jsonscan.Member(data, "response"); resp != nil {
			if err := readResponseObject(resp, &s.res); err != nil {
				return false, err
			}
		}
	case responses.EventError:
		s.res.FinishReason = "error"
		s.res.StreamError = string(jsonscan.StringContent(jsonscan.Member(data, "message")))
		if s.res.StreamError == "" {
			s.res.StreamError = "the upstream's stream failed"
		}
	}
	if terminal && s.r.meta != nil {
		// The report may ride on the event or in its response object.
		if err := s.r.meta(data, &s.res); err != nil {
			return false, err
		}
		if resp := jsonscan.Member(data, "response"); resp != nil {
			if err := s.r.meta(resp, &s.res); err != nil {
				return false, err
			}
		}
	}
	if len(s.r.strip) > 0 && jsonscan.MayHoldMember(data, s.r.strip) {
		if resp := jsonscan.Member(data, "response"); resp != nil && jsonscan.MayHoldMember(resp, s.r.strip) {
			data = spliceMember(data, "response", jsonscan.StripMembers(resp, s.r.strip...))
		}
		data = jsonscan.StripMembers(data, s.r.strip...)
	}
	s.frame = AppendEvent(s.frame[:0], string(name), data)
	if err := emit(s.frame); err != nil {
		return false, err
	}
	return terminal, nil
}

// Result implements [Stream.Result].
func (s *respRelay) Result() Result { return s.res }

// respStateless is what a stateless upstream's Responses request sets: store
// false (the marketplaces refuse store true), recorded as degraded when the
// caller asked for storage explicitly.
func respStateless(body Body, set []member) ([]member, []string) {
	v, ok := body["store"]
	if !ok {
		return set, nil
	}
	if string(bytes.TrimSpace(v)) == "true" {
		return append(set, member{"store", []byte("false")}), []string{DegradedStore}
	}
	return set, nil
}
