// Package request parses an OpenAI chat-completions request body into what
// the rest of the request path needs, refusing what must not pass: invalid
// JSON, a missing model or messages, an upstream's raw routing fields, and an
// invalid routing object.
package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
)

// Request is a parsed chat-completions request.
type Request struct {
	// Body holds the top-level members to forward; sluice's own "routing"
	// member is removed.
	Body connectors.Body
	// Model is the requested model or route alias, lower-cased.
	Model string
	// Stream reports "stream": true.
	Stream bool
	// Routing is the request rung, or nil.
	Routing *profiles.Profile
	// PromptTokens is a rough estimate of the prompt size (4 bytes a token),
	// used to plan around context windows before anything is sent.
	PromptTokens int
}

// Parse parses and validates a request body.
func Parse(raw []byte) (*Request, *apierr.Error) {
	body, err := connectors.ParseBody(raw)
	if err != nil {
		return nil, &apierr.Error{Code: apierr.CodeInvalidJSON, Message: "request body is not a JSON object: " + err.Error()}
	}
	for _, f := range profiles.RawRoutingFields {
		if _, ok := body[f]; ok {
			return nil, &apierr.Error{Code: apierr.CodeRawRoutingField, Param: "/" + f,
				Message: fmt.Sprintf("%q is an upstream's own routing field and is not accepted; express routing preferences with the \"routing\" object", f)}
		}
	}
	r := &Request{Body: body}
	var model string
	if err := json.Unmarshal(body["model"], &model); err != nil || strings.TrimSpace(model) == "" {
		return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/model", Message: "\"model\" must be a non-empty string"}
	}
	r.Model = strings.ToLower(strings.TrimSpace(model))
	msgs := bytes.TrimSpace(body["messages"])
	// An array with at least one element: after '[', something other than
	// whitespace before ']' ("[ ]" is as empty as "[]").
	if len(msgs) < 2 || msgs[0] != '[' || len(bytes.TrimSpace(msgs[1:len(msgs)-1])) == 0 {
		return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/messages", Message: "\"messages\" must be a non-empty array"}
	}
	r.PromptTokens = failover.EstimateTokens(msgs)
	if s, ok := body["stream"]; ok {
		if err := json.Unmarshal(s, &r.Stream); err != nil {
			return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/stream", Message: "\"stream\" must be a boolean"}
		}
	}
	if rt, ok := body["routing"]; ok {
		p, diags := profiles.ParseRouting(rt)
		if len(diags) > 0 {
			e := &apierr.Error{Code: apierr.CodeInvalidRouting, Param: diags[0].Pointer,
				Message: fmt.Sprintf("invalid routing object: %s", diags[0].Message)}
			for _, d := range diags {
				e.Details = append(e.Details, apierr.Detail{Pointer: d.Pointer, Code: d.Code, Message: d.Message})
			}
			if len(diags) > 1 {
				e.Message += fmt.Sprintf(" (and %d more; see details)", len(diags)-1)
			}
			return nil, e
		}
		r.Routing = p
		delete(body, "routing")
	}
	return r, nil
}
