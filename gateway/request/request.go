// Package request parses a request body — an OpenAI chat-completions
// request, an Anthropic Messages request or an OpenAI embeddings request —
// into what the rest of the request path needs, refusing what must not
// pass: invalid JSON, a missing model, messages or input, an upstream's raw
// routing fields, and an invalid routing object.
package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Request is a parsed request.
type Request struct {
	// Body holds the top-level members to forward, in the shape of the API
	// the request came in on; sluice's own "routing" member is removed.
	Body connectors.Body
	// Inbound is the API the request came in on when it is not chat
	// completions (nil for chat completions).
	Inbound *connectors.Inbound
	// Model is the requested model or route alias, lower-cased.
	Model string
	// Stream reports "stream": true.
	Stream bool
	// Routing is the request rung, or nil.
	Routing *profiles.Profile
	// RoutingJSON is the routing object as sent, compacted (nil without
	// one, or when longer than requestlog.MaxRoutingObject bytes): the row
	// keeps it so that the request's plan can be replayed.
	RoutingJSON []byte
	// PromptTokens is a rough estimate of the prompt size (4 bytes a token),
	// used to plan around context windows before anything is sent.
	PromptTokens int
	// Completion is the completion cap the body asks for
	// (max_completion_tokens, else max_tokens), read once for the rate
	// limits' and the budgets' reservations; 0 when it sets none.
	Completion int64
	// Choices is how many completions the body asks for: chat completions'
	// "n" when it is an integer above 1, else 1 (the other APIs answer one).
	// The budgets' reservation prices Completion that many times.
	Choices int64
}

// maxChoices bounds Request.Choices: far more than any budget pays for.
const maxChoices = 1 << 30

// Parse parses and validates a chat-completions request body.
func Parse(raw []byte) (*Request, *apierr.Error) {
	r, body, e := parseCommon(raw)
	if e != nil {
		return nil, e
	}
	msgs := bytes.TrimSpace(body["messages"])
	// An array with at least one element: after '[', something other than
	// whitespace before ']' ("[ ]" is as empty as "[]").
	if len(msgs) < 2 || msgs[0] != '[' || len(bytes.TrimSpace(msgs[1:len(msgs)-1])) == 0 {
		return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/messages", Message: "\"messages\" must be a non-empty array"}
	}
	r.PromptTokens = failover.EstimateTokens(msgs)
	if v, ok := body["n"]; ok {
		// Anything but an integer is the upstream's to refuse; a count
		// above 1 is what each completion's price is multiplied by.
		// Read as a number, so that 1e9 counts as what an upstream may
		// take it for.
		var n float64
		if json.Unmarshal(v, &n) == nil && n > 1 {
			r.Choices = int64(min(math.Ceil(n), maxChoices))
		}
	}
	if e := r.parseStream(body); e != nil {
		return nil, e
	}
	return r, nil
}

// ParseMessages parses and checks an Anthropic Messages API request body;
// beta holds the caller's anthropic-beta header values. What every
// upstream would refuse is refused here, with the JSON pointer of the
// member at fault ([connectors.CheckMessages]); the rest is read whole only
// by a translation that needs it (onto an upstream without a Messages
// endpoint), which refuses there, located, what the chat shape cannot
// carry.
func ParseMessages(raw []byte, beta []string) (*Request, *apierr.Error) {
	r, body, e := parseAnthropic(raw, beta, connectors.APIMessages, false)
	if e != nil {
		return nil, e
	}
	r.PromptTokens = failover.EstimateTokens(body["messages"]) + failover.EstimateTokens(body["system"])
	if e := r.parseStream(body); e != nil {
		return nil, e
	}
	return r, nil
}

// ParseCountTokens parses and checks a Messages API token-count body: a
// Messages request without max_tokens.
func ParseCountTokens(raw []byte, beta []string) (*Request, *apierr.Error) {
	r, body, e := parseAnthropic(raw, beta, connectors.APICountTokens, true)
	if e != nil {
		return nil, e
	}
	r.PromptTokens = failover.EstimateTokens(body["messages"]) + failover.EstimateTokens(body["system"]) + failover.EstimateTokens(body["tools"])
	return r, nil
}

// parseAnthropic is what the Messages API's bodies share: the common
// members, the API's own checks, and the request's Inbound.
func parseAnthropic(raw []byte, beta []string, api connectors.API, count bool) (*Request, connectors.Body, *apierr.Error) {
	r, body, e := parseCommon(raw)
	if e != nil {
		return nil, nil, e
	}
	if te := connectors.CheckMessages(body, count); te != nil {
		return nil, nil, &apierr.Error{Code: te.Code, Param: te.Param, Message: te.Message}
	}
	var model string
	_ = json.Unmarshal(body["model"], &model)
	r.Inbound = &connectors.Inbound{API: api, Model: strings.TrimSpace(model), Beta: beta}
	return r, body, nil
}

// ParseResponses parses and checks an OpenAI Responses API request body:
// what every upstream would refuse is refused here, located
// ([connectors.ParseResponses]); the rest is read whole only by a
// translation that needs it, which refuses, located, what it cannot carry
// (a built-in tool, a stored conversation, ...) on the upstreams that
// would need it.
func ParseResponses(raw []byte) (*Request, *apierr.Error) {
	r, body, e := parseCommon(raw)
	if e != nil {
		return nil, e
	}
	if te := connectors.ParseResponses(body); te != nil {
		return nil, &apierr.Error{Code: te.Code, Param: te.Param, Message: te.Message}
	}
	var model string
	_ = json.Unmarshal(body["model"], &model)
	r.Inbound = &connectors.Inbound{API: connectors.APIResponses, Model: strings.TrimSpace(model), Request: body}
	r.PromptTokens = failover.EstimateTokens(body["input"]) + failover.EstimateTokens(body["instructions"]) + failover.EstimateTokens(body["tools"])
	r.Completion = 0
	if v, ok := body["max_output_tokens"]; ok {
		_ = json.Unmarshal(v, &r.Completion)
		r.Completion = max(r.Completion, 0)
	}
	if e := r.parseStream(body); e != nil {
		return nil, e
	}
	return r, nil
}

// PreviousResponse is the id of the stored response a Responses request
// continues (previous_response_id), "" when it continues none.
func (r *Request) PreviousResponse() string {
	if r.Inbound == nil || r.Inbound.API != connectors.APIResponses {
		return ""
	}
	v, ok := r.Body["previous_response_id"]
	if !ok {
		return ""
	}
	var id string
	_ = json.Unmarshal(v, &id)
	return id
}

// ParseEmbeddings parses and validates an OpenAI embeddings request body:
// input a string, an array of strings, an array of token ids or an array of
// such arrays, never empty; encoding_format "float" or "base64";
// dimensions a positive integer; user a string.
func ParseEmbeddings(raw []byte) (*Request, *apierr.Error) {
	r, body, e := parseCommon(raw)
	if e != nil {
		return nil, e
	}
	tokens, ok := inputTokens(body["input"])
	if !ok {
		return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/input",
			Message: "\"input\" must be a non-empty string, array of strings, array of token ids or array of token-id arrays"}
	}
	r.PromptTokens = tokens
	if v, ok := body["encoding_format"]; ok {
		var f string
		if json.Unmarshal(v, &f) != nil || (f != "float" && f != "base64") {
			return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/encoding_format", Message: "\"encoding_format\" must be \"float\" or \"base64\""}
		}
	}
	if v, ok := body["dimensions"]; ok {
		var n int64
		if json.Unmarshal(v, &n) != nil || n < 1 {
			return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/dimensions", Message: "\"dimensions\" must be a positive integer"}
		}
	}
	if v, ok := body["user"]; ok {
		var u string
		if json.Unmarshal(v, &u) != nil {
			return nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/user", Message: "\"user\" must be a string"}
		}
	}
	if v, ok := body["stream"]; ok && string(bytes.TrimSpace(v)) != "false" {
		return nil, &apierr.Error{Code: apierr.CodeUnsupportedParameter, Param: "/stream", Message: "embeddings are not streamed"}
	}
	r.Inbound = &connectors.Inbound{API: connectors.APIEmbeddings}
	return r, nil
}

// inputTokens checks an embeddings input and estimates its size in tokens:
// strings by their length, token ids by their count.
func inputTokens(v json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return failover.EstimateTokens([]byte(s)), s != ""
	}
	var strs []string
	if json.Unmarshal(v, &strs) == nil {
		n := 0
		for _, s := range strs {
			n += failover.EstimateTokens([]byte(s))
		}
		return n, len(strs) > 0
	}
	var ids []int64
	if json.Unmarshal(v, &ids) == nil {
		return len(ids), len(ids) > 0
	}
	var batches [][]int64
	if json.Unmarshal(v, &batches) == nil && len(batches) > 0 {
		n := 0
		for _, b := range batches {
			if len(b) == 0 {
				return 0, false
			}
			n += len(b)
		}
		return n, true
	}
	return 0, false
}

// parseCommon reads what every API's body shares: a JSON object without an
// upstream's raw routing fields, a model, and sluice's routing object.
// askedCompletion is the completion cap a body sets (max_completion_tokens
// or max_tokens; 0 when it sets none or a negative one).
func askedCompletion(body connectors.Body) int64 {
	var asked int64
	for _, f := range [...]string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := body[f]; ok {
			_ = json.Unmarshal(raw, &asked)
			return max(asked, 0)
		}
	}
	return 0
}

func parseCommon(raw []byte) (*Request, connectors.Body, *apierr.Error) {
	body, err := connectors.ParseBody(raw)
	if err != nil {
		return nil, nil, &apierr.Error{Code: apierr.CodeInvalidJSON, Message: "request body is not a JSON object: " + err.Error()}
	}
	// Regardless of case: "Provider" is the field too to a decoder that
	// matches names without case, as Go's encoding/json does.
	// The first field in RawRoutingFields' order, and of its spellings the
	// least, so that the answer does not depend on map order.
	for _, f := range profiles.RawRoutingFields {
		found := ""
		for name := range body {
			if strings.EqualFold(name, f) && (found == "" || name < found) {
				found = name
			}
		}
		if found != "" {
			return nil, nil, &apierr.Error{Code: apierr.CodeRawRoutingField, Param: "/" + found,
				Message: fmt.Sprintf("%q is an upstream's own routing field and is not accepted; express routing preferences with the \"routing\" object", found)}
		}
	}
	r := &Request{Body: body, Completion: askedCompletion(body), Choices: 1}
	var model string
	if err := json.Unmarshal(body["model"], &model); err != nil || strings.TrimSpace(model) == "" {
		return nil, nil, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/model", Message: "\"model\" must be a non-empty string"}
	}
	r.Model = strings.ToLower(strings.TrimSpace(model))
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
			return nil, nil, e
		}
		r.Routing = p
		r.RoutingJSON = compactRouting(rt)
		delete(body, "routing")
	}
	return r, body, nil
}

// compactRouting returns a compact copy of a valid routing object, or nil
// when it is longer than the request log keeps.
func compactRouting(rt []byte) []byte {
	if len(rt) > 4*requestlog.MaxRoutingObject {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, rt) != nil || buf.Len() > requestlog.MaxRoutingObject {
		return nil
	}
	return buf.Bytes()
}

// parseStream reads "stream".
func (r *Request) parseStream(body connectors.Body) *apierr.Error {
	if s, ok := body["stream"]; ok {
		if err := json.Unmarshal(s, &r.Stream); err != nil {
			return &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "/stream", Message: "\"stream\" must be a boolean"}
		}
	}
	return nil
}
