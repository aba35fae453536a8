package connectors

import (
	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The openai connector's Responses API: OpenAI's own POST /v1/responses,
// which the request goes to as the caller wrote it, with the native model
// id and, for a session, the session's cache-routing key. OpenAI stores
// responses (store defaults to true), so a continuation by
// previous_response_id can be sent here.

var _ responsesNative = (*openAI)(nil)

// responsesCapabilities implements [responsesNative]: a direct provider.
func (c *openAI) responsesCapabilities() compiler.Capabilities { return c.Capabilities() }

// responsesStateful implements [responsesNative].
func (*openAI) responsesStateful() bool { return true }

// translateResponses implements [responsesNative].
func (*openAI) translateResponses(_ *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set := make([]member, 1, 2)
	set[0] = member{"model", jsonscan.AppendString(nil, out.NativeModel)}
	var affinity string
	if _, own := body["prompt_cache_key"]; !own && plan != nil && plan.Session != "" {
		// The Responses API takes the same cache-routing key as chat
		// completions (see Translate).
		set = append(set, member{"prompt_cache_key", jsonscan.AppendString(nil, plan.Session)})
		affinity = "prompt_cache_key"
	}
	return &Native{Path: "/responses", Header: noHeaders, Body: encodeBody(body, set...), Affinity: affinity}, nil
}

// openAIResponses reads OpenAI's answers: one provider, no routing report.
var openAIResponses = respReader{provider: "openai"}

// responsesResponse implements [responsesNative].
func (*openAI) responsesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	return openAIResponses.response(body)
}

// newResponsesStream implements [responsesNative].
func (*openAI) newResponsesStream(*Call) Stream { return openAIResponses.stream() }
