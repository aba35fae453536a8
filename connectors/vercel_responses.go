package connectors

import (
	"github.com/sluicegw/sluice/compiler"
)

// The vercel connector's Responses API: the Vercel AI Gateway's POST
// /v1/responses, which takes providerOptions.gateway with order, only and
// models, as its OpenResponses provider-options page documents (the sort is
// documented for the gateway's other APIs, not this one, so a ranking
// degrades here). It is treated as stateless: no statement says it stores
// responses. Its answer names no provider, so none is read back. See
// testdata/recorded/ENDPOINTS.md.

var _ responsesNative = (*vercel)(nil)

// responsesCapabilities implements [responsesNative].
func (*vercel) responsesCapabilities() compiler.Capabilities {
	return compiler.Capabilities{PreferredOrder: true, AllowList: true, Chain: true}
}

// responsesStateful implements [responsesNative].
func (*vercel) responsesStateful() bool { return false }

// translateResponses implements [responsesNative].
func (*vercel) translateResponses(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	if v, ok := body["previous_response_id"]; ok && !anthIsNull(v) {
		return nil, unsupportedParameter("/previous_response_id", "the upstream's Responses endpoint stores no response to continue")
	}
	var buf [3]member
	set := vercelRouting(buf[:0], out, out.Chain)
	set, lost := respStateless(body, set)
	return &Native{Path: "/responses", Header: noHeaders, Body: encodeBody(body, set...), Degraded: lost}, nil
}

// vercelResponses reads the gateway's Responses answers.
var vercelResponses = respReader{}

// responsesResponse implements [responsesNative].
func (*vercel) responsesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	return vercelResponses.response(body)
}

// newResponsesStream implements [responsesNative].
func (*vercel) newResponsesStream(*Call) Stream { return vercelResponses.stream() }
