// Package apierr is the one place that maps sluice's stable error codes to
// HTTP statuses and renders error bodies: OpenAI-style for the OpenAI APIs,
//
//	{"error": {"message": "...", "type": "...", "code": "...", "param": null}}
//
// and in the Anthropic Messages API's shape for POST /v1/messages, with the
// stable code beside the members its clients read:
//
//	{"type": "error", "error": {"type": "permission_error", "message": "...", "code": "model_forbidden"}}
//
// Only errors built here reach a caller with their message; anything else is
// a generic 500 whose detail stays in the log.
package apierr

import (
	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"

	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Stable codes the gateway answers with (in addition to the compiler's and
// guardrails' refusal codes, which are mapped below).
const (
	CodeUnauthorized          = "invalid_api_key"
	CodeBodyTooLarge          = "body_too_large"
	CodeInvalidJSON           = "invalid_json"
	CodeInvalidRequest        = "invalid_request"
	CodeRawRoutingField       = "raw_routing_field"
	CodeInvalidRouting        = "invalid_routing"
	CodeUnknownRoute          = "unknown_route"
	CodeUpstreamUnavailable   = "upstream_unavailable"
	CodeUpstreamTimeout       = "upstream_timeout"
	CodeUpstreamBadResponse   = "upstream_bad_response"
	CodeUnsupportedParameter  = "unsupported_parameter"
	CodeBudgetExhausted       = "budget_exhausted"
	CodeSafetyNetNotPermitted = "safety_net_not_permitted"
	// CodeCallerKeyUnrecognized: a blind caller key (X-Sluice-Caller-Key)
	// whose shape names no upstream for certain, or names one this gateway
	// has not exactly one of.
	CodeCallerKeyUnrecognized = "caller_key_unrecognized"
	CodeNotFound              = "not_found"
	CodeInternal              = "internal_error"
	CodeModelForbidden        = "model_forbidden"
	CodeProviderNotPermitted  = "provider_not_permitted"
	CodeProviderInexpressible = "provider_restriction_inexpressible"
	CodeContentInexpressible  = "content_guardrail_inexpressible"
	CodeAutoModeInexpressible = "auto_mode_inexpressible"
	CodeUnknownModel          = "unknown_model"
	CodeModelNotInCatalog     = "model_not_in_catalog"
	CodeAllTargetsRestricted  = "all_targets_restricted"
	CodeValidation            = "validation_failed"
	CodeServiceUnavailable    = "service_unavailable"
	CodePermissionDenied      = "permission_denied"
	// CodeServerShutdown: the gateway was shutting down and ended the
	// request before it completed ([server] shutdown_timeout ran out).
	CodeServerShutdown = "server_shutdown"
	// CodeRateLimited: a key's or team's rpm, tpm or max_parallel is spent;
	// the answer carries Retry-After.
	CodeRateLimited = "rate_limited"
	// CodeResponseElsewhere: a Responses request continues a response
	// (previous_response_id) stored by an upstream the request may not be
	// sent to, or by no upstream that stores responses.
	CodeResponseElsewhere = "previous_response_elsewhere"
	// CodeUpstreamError: an upstream's error answer whose body was not
	// JSON, retold as JSON under the upstream's own status.
	CodeUpstreamError = "upstream_error"
	// CodeUpstreamCredentials: an upstream's credentials (a cloud's
	// credential chain, a token endpoint) could not be loaded or refreshed
	// when the request needed them; the next target is tried.
	CodeUpstreamCredentials = "upstream_credentials_unavailable"
	// CodeAmbiguousFraming: the request declared both Content-Length and
	// Transfer-Encoding; it is refused and its connection closed.
	CodeAmbiguousFraming = "ambiguous_framing"
	// CodeTooManyAttempts: a client made too many login or admin-API
	// attempts; the answer carries Retry-After.
	CodeTooManyAttempts = "too_many_attempts"
	// CodeWebSocketUnavailable: a WebSocket upgrade was asked of an API
	// the key's upstream does not speak; the answer is 426, on which
	// clients fall back to HTTP.
	CodeWebSocketUnavailable = "websocket_unavailable"
	// CodeDataPolicyUnsatisfiable: a data restriction (zero retention, no
	// training, quantizations, a price ceiling) cannot be held on the
	// upstream; the message names the field and who set it.
	CodeDataPolicyUnsatisfiable = compiler.CodeDataPolicyUnsatisfiable
	// CodeBetaUnsupported: the request's anthropic-beta header asks for a
	// beta the upstream does not take, and losing it would change the
	// answer (param: anthropic-beta).
	CodeBetaUnsupported = compiler.CodeBetaUnsupported
)

// statuses maps every code to its HTTP status; a code missing here is a bug
// caught by this package's tests.
var statuses = map[string]int{
	CodeUnauthorized:            http.StatusUnauthorized,
	CodeBodyTooLarge:            http.StatusRequestEntityTooLarge,
	CodeInvalidJSON:             http.StatusBadRequest,
	CodeInvalidRequest:          http.StatusBadRequest,
	CodeRawRoutingField:         http.StatusBadRequest,
	CodeInvalidRouting:          http.StatusBadRequest,
	CodeUnknownRoute:            http.StatusNotFound,
	CodeUnsupportedParameter:    http.StatusBadRequest,
	CodeModelKindMismatch:       http.StatusBadRequest,
	CodeAPIUnsupported:          http.StatusUnprocessableEntity,
	CodeUpstreamUnavailable:     http.StatusBadGateway,
	CodeUpstreamTimeout:         http.StatusGatewayTimeout,
	CodeUpstreamBadResponse:     http.StatusBadGateway,
	CodeUpstreamCredentials:     http.StatusBadGateway,
	CodeBudgetExhausted:         http.StatusPaymentRequired,
	CodeSafetyNetNotPermitted:   http.StatusForbidden,
	CodeCallerKeyUnrecognized:   http.StatusBadRequest,
	CodeNotFound:                http.StatusNotFound,
	CodeInternal:                http.StatusInternalServerError,
	CodeServiceUnavailable:      http.StatusServiceUnavailable,
	CodeServerShutdown:          http.StatusServiceUnavailable,
	CodePermissionDenied:        http.StatusForbidden,
	CodeRateLimited:             http.StatusTooManyRequests,
	CodeAmbiguousFraming:        http.StatusBadRequest,
	CodeTooManyAttempts:         http.StatusTooManyRequests,
	CodeWebSocketUnavailable:    http.StatusUpgradeRequired,
	CodeResponseElsewhere:       http.StatusUnprocessableEntity,
	CodeDataPolicyUnsatisfiable: http.StatusUnprocessableEntity,
	CodeBetaUnsupported:         http.StatusUnprocessableEntity,
	// Governance refusals: somebody's policy forbids it.
	CodeModelForbidden:       http.StatusForbidden,
	CodeProviderNotPermitted: http.StatusForbidden,
	// Restrictions an upstream cannot express: the request is well-formed but
	// cannot be served as policy requires.
	CodeProviderInexpressible: http.StatusUnprocessableEntity,
	CodeContentInexpressible:  http.StatusUnprocessableEntity,
	CodeAutoModeInexpressible: http.StatusUnprocessableEntity,
	CodeUnknownModel:          http.StatusNotFound,
	CodeModelNotInCatalog:     http.StatusNotFound,
	CodeAllTargetsRestricted:  http.StatusUnprocessableEntity,
	CodeValidation:            http.StatusUnprocessableEntity,
}

// types maps statuses to the OpenAI error "type" field.
func errType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusPaymentRequired:
		return "insufficient_quota"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	default:
		return "invalid_request_error"
	}
}

// Codes of the inbound APIs beside chat completions.
const (
	// CodeModelKindMismatch: the model does another kind of work than the
	// request's API (an embedding model asked for a completion, or the
	// reverse).
	CodeModelKindMismatch = compiler.CodeModelKindMismatch
	// CodeAPIUnsupported: the upstream has no endpoint for the request's
	// API.
	CodeAPIUnsupported = compiler.CodeAPIUnsupported
)

// Error is a user-facing error with a stable code.
type Error struct {
	// Code is the stable sluice code.
	Code string
	// Message is safe to show the caller.
	Message string
	// Param names the offending request field (a JSON pointer), when there is one.
	Param string
	// Details carries extra structured errors (e.g. every validation error).
	Details []Detail
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds): when the caller may try again (rate_limited sets it).
	RetryAfter int
}

// Detail is one located problem inside an [Error].
type Detail struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// New returns an error with the code.
func New(code, message string) *Error { return &Error{Code: code, Message: message} }

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Status returns the HTTP status of the error's code.
func (e *Error) Status() int { return Status(e.Code) }

// Status returns the HTTP status of a code; unknown codes are 500.
func Status(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type body struct {
	Error bodyErr `json:"error"`
}

type bodyErr struct {
	Message string   `json:"message"`
	Type    string   `json:"type"`
	Code    string   `json:"code"`
	Param   *string  `json:"param"`
	Details []Detail `json:"details,omitempty"`
}

// Body renders the OpenAI-style error body.
func (e *Error) Body() []byte {
	be := bodyErr{Message: e.Message, Type: errType(e.Status()), Code: e.Code, Details: e.Details}
	if e.Param != "" {
		p := e.Param
		be.Param = &p
	}
	b, _ := json.Marshal(body{Error: be})
	return b
}

// MessagesBody renders the error in the Anthropic Messages API's shape: the
// error type the API documents for the status (see
// [connectors.ErrorTypeForStatus]), the message, and sluice's stable code
// in error.code, a member the API's clients ignore and keep.
func (e *Error) MessagesBody() []byte {
	b, _ := json.Marshal(connectors.ErrorEvent(connectors.ErrorTypeForStatus(e.Status()), e.Message, e.Code))
	return b
}

// WriteMessages sends the error as the response in the Messages API's shape.
func WriteMessages(w http.ResponseWriter, e *Error) { write(w, e, e.MessagesBody()) }

// FromRefusal is the caller's error for a compiler's refusal (the check's,
// or a connector's translation error): its code, message and pointer.
func FromRefusal(r *compiler.Refusal) *Error {
	return &Error{Code: r.Code, Message: r.Message, Param: r.Param}
}

// Refusal reports whether the error is the gateway's refusal to serve the
// request (recorded as refused_code), rather than an upstream's failure or
// the gateway's own.
func (e *Error) Refusal() bool {
	switch e.Code {
	case CodeUpstreamUnavailable, CodeUpstreamTimeout, CodeUpstreamBadResponse, CodeInternal, CodeServiceUnavailable:
		return false
	}
	return true
}

// From returns the user-facing form of err: itself when it is an *Error,
// a generic internal error otherwise (the detail must be logged by the caller).
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error; see the gateway log for the request id"}
}

// Write sends the error as the response.
func Write(w http.ResponseWriter, e *Error) { write(w, e, e.Body()) }

// write sends the error's status and headers, then body, in either shape.
func write(w http.ResponseWriter, e *Error, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status())
	_, _ = w.Write(body)
}
