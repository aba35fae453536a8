package request

import (
	"encoding/json"
	"strings"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
)

// ParseRealtime makes the request of a Realtime API session (GET
// /v1/realtime?model=…): it has no body, only the model the query names (a
// catalog slug, an upstream's own id or a route alias). The request is a
// stream: a session is never cached.
func ParseRealtime(model string) (*Request, *apierr.Error) {
	model = strings.TrimSpace(model)
	if model == "" {
		return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "model", Message: "the query parameter model is required (?model=gpt-realtime)"}
	}
	m, _ := json.Marshal(model)
	return &Request{Body: connectors.Body{"model": m}, Model: strings.ToLower(model), Stream: true,
		Inbound: &connectors.Inbound{API: connectors.APIRealtime, Model: model}}, nil
}
