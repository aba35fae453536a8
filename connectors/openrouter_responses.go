package connectors

import (
	"encoding/json"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The openrouter connector's Responses API: OpenRouter's POST
// /api/v1/responses, whose request takes the same routing members as its
// chat completions (model, models, provider, session_id; OpenRouter's
// OpenAPI document, ResponsesRequest). The endpoint is stateless: it
// refuses store true and previous_response_id, so sluice sends neither (a
// continuation is never placed here; a request that asked for storage is
// sent with store false and the loss recorded). Its answer names no
// provider: the router's report (X-OpenRouter-Metadata) says which served,
// and usage.cost what it billed. See testdata/recorded/ENDPOINTS.md.

var _ responsesNative = (*openRouter)(nil)

// responsesCapabilities implements [responsesNative]: the chat endpoint's.
func (c *openRouter) responsesCapabilities() compiler.Capabilities { return c.Capabilities() }

// responsesStateful implements [responsesNative].
func (*openRouter) responsesStateful() bool { return false }

// translateResponses implements [responsesNative].
func (*openRouter) translateResponses(_ *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	if v, ok := body["previous_response_id"]; ok && !anthIsNull(v) {
		return nil, unsupportedParameter("/previous_response_id", "the upstream's Responses endpoint is stateless and stores no response to continue")
	}
	if v, ok := body["conversation"]; ok && !anthIsNull(v) {
		return nil, unsupportedParameter("/conversation", "the upstream's Responses endpoint is stateless and keeps no conversation")
	}
	set, affinity := openRouterRouting(body, plan, out)
	set, lost := respStateless(body, set)
	return &Native{Path: "/responses", Header: openRouterHeaders, Body: encodeBody(body, set...), Affinity: affinity, Degraded: lost}, nil
}

// openRouterResponses reads OpenRouter's Responses answers.
var openRouterResponses = respReader{strip: []string{"openrouter_metadata"}, meta: readOpenRouterReport}

// responsesResponse implements [responsesNative].
func (*openRouter) responsesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	return openRouterResponses.response(body)
}

// newResponsesStream implements [responsesNative].
func (*openRouter) newResponsesStream(*Call) Stream { return openRouterResponses.stream() }

// openRouterReport is the router's report on the endpoints that do not
// name the provider in the answer itself: the attempts, and the endpoints
// it considered, the one that served marked selected.
type openRouterReport struct {
	Attempts  []Attempt `json:"attempts"`
	Endpoints *struct {
		Available []struct {
			Provider string `json:"provider"`
			Selected bool   `json:"selected"`
		} `json:"available"`
	} `json:"endpoints"`
}

// readOpenRouterReport reads the provider that served: a top-level provider
// when the answer has one, else the report's selected endpoint, else its
// last attempt that succeeded. Only those members are decoded.
func readOpenRouterReport(b []byte, res *Result) error {
	if p := jsonscan.StringContent(jsonscan.Member(b, "provider")); len(p) > 0 {
		res.ServedProvider = string(p)
	}
	meta := jsonscan.Member(b, "openrouter_metadata")
	if meta == nil || anthIsNull(meta) {
		return nil
	}
	var r openRouterReport
	if err := json.Unmarshal(meta, &r); err != nil {
		return err
	}
	res.Attempts = r.Attempts
	if res.ServedProvider != "" {
		return nil
	}
	if e := r.Endpoints; e != nil {
		for _, a := range e.Available {
			if a.Selected && a.Provider != "" {
				res.ServedProvider = a.Provider
				return nil
			}
		}
	}
	for i := len(r.Attempts) - 1; i >= 0; i-- {
		if a := r.Attempts[i]; a.Status == 200 && a.Provider != "" {
			res.ServedProvider = a.Provider
			return nil
		}
	}
	return nil
}
