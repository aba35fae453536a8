package connectors

import (
	"net/http"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// anthropic translates for Anthropic's own Messages API: one provider,
// nothing to rank, no model chain, and a request and answer shape of its own.
// Chat-completions requests are rewritten into Messages requests, and answers
// and event streams back into chat-completions answers and chunks.
type anthropic struct {
	// now stamps the answers' "created" member; tests fix it.
	now func() time.Time
	// provider is the provider slug the answers are read back as served
	// by: "" for Anthropic's own API ("anthropic"), "google-vertex" when
	// the vertex connector speaks the Messages API through this one.
	provider string
}

var _ Connector = (*anthropic)(nil)

func newAnthropic() *anthropic { return &anthropic{now: time.Now} }

// served is the provider slug an answer is read back as served by.
func (c *anthropic) served() string {
	if c.provider == "" {
		return "anthropic"
	}
	return c.provider
}

// Kind implements [Connector.Kind].
func (*anthropic) Kind() string { return "anthropic" }

// speaksMessagesOnly implements messagesOnly.
func (*anthropic) speaksMessagesOnly() {}

// Capabilities implements [Connector.Capabilities]. A direct provider: no
// ranking, order, lists, chain or auto mode to express.
func (*anthropic) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: "anthropic"}
}

// Authorize implements [Connector.Authorize]. The version header is part of
// the protocol, so it is set even without a key.
func (*anthropic) Authorize(h http.Header, key string) {
	if key != "" {
		h.Set("x-api-key", key)
	}
	h.Set("anthropic-version", messages.Version)
}

// StreamError is an error Anthropic reported in band: an "error" event in the
// middle of an event stream (the status line already said 200), or an error
// object in an answer that came with a success status.
type StreamError struct {
	// Type is Anthropic's error type, e.g. "overloaded_error".
	Type string
	// Message is Anthropic's message.
	Message string
	// Status is the HTTP status Anthropic documents for the type (529 for
	// overloaded_error, 429 for rate_limit_error, ...), 0 when unknown.
	Status int
}

// Error implements error.
func (e *StreamError) Error() string {
	return "anthropic: in-band error: " + e.Type + ": " + e.Message
}

// anthErrorStatus is the HTTP status Anthropic documents for each error type.
var anthErrorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
	"permission_error": 403, "not_found_error": 404, "request_too_large": 413,
	"rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}

func newStreamError(e messages.Error) *StreamError {
	return &StreamError{Type: e.Type, Message: e.Message, Status: anthErrorStatus[e.Type]}
}
