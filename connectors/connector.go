// Package connectors speaks each upstream's wire protocol, and only that: it
// translates a request, under a checked plan, into the upstream's native
// request, and the upstream's answer or event stream back into the form the
// caller asked in, reading back which model and provider served.
//
// The file names read as a matrix of (inbound API, upstream):
//
//   - <upstream>.go is the connector of one upstream kind, on the
//     chat-completions API every connector speaks: its knobs, its
//     read-back, its names (openai.go, openrouter.go, vercel.go,
//     anthropic.go, bedrock.go). The set is closed and listed in [New]
//     and [NewFor]; each has its golden testdata under
//     testdata/connectors.
//   - <upstream>_<api>.go is that upstream speaking another inbound API
//     natively, the request passed through with only what policy changes
//     (anthropic_messages.go, openai_responses.go, openrouter_messages.go,
//     openrouter_responses.go, vercel_messages.go, vercel_responses.go);
//     responses_native.go and messages_native.go are the read-backs the
//     *_responses.go and *_messages.go files share (shallow: only what the
//     row needs).
//   - translate_<inbound>_<upstream API>.go translates a request from the
//     API it came in on into the API the upstream speaks, and
//     translate_<inbound>_<upstream API>_answer.go and _stream.go translate
//     the answer and the event stream back: translate_messages_chat*.go and
//     translate_responses_chat*.go (a Messages or Responses request on an
//     upstream that speaks only chat), translate_chat_messages*.go (the
//     anthropic connector's: a chat request onto the Messages API, its
//     message conversion in translate_chat_messages_turns.go, its encoder
//     in translate_chat_messages_encode.go), translate_chat_gemini*.go (a
//     chat request onto Google's generateContent, for Vertex AI's Gemini
//     models: vertex_gemini.go, the vertex connector's dialect for them).
//
// A cloud that speaks an API of its own for some of its models has a
// dialect ([Dialect]) in <upstream>_<its API>*.go: bedrock_converse.go (a
// chat request written as Bedrock's Converse request),
// bedrock_converse_answer.go and bedrock_converse_stream.go (its answer
// and stream read back), its wire types in wire/converse.
//
// An (API, upstream) pair with no file of its own goes through chat:
// inbound.go picks, per pair, the native file or the translations (a
// Responses request on Anthropic is translate_responses_chat.go, then
// translate_chat_messages.go). Embeddings are embeddings.go.
//
// What several connectors share lives in files named for it: connector.go
// (the interface, [TranslateError], body encoding), openaishape.go,
// headscan.go and stream.go (reading and relaying OpenAI-shaped answers),
// sse.go and eventstream.go (the framings of upstreams' event streams:
// server-sent events, and Amazon's binary event stream behind [Framer]). Each API's wire types have a package of their own under
// connectors/wire (wire/chat, wire/messages, wire/responses, and
// wire/gemini and wire/converse for the clouds' upstream-only APIs) that imports
// nothing of sluice's; byte-level JSON scanning and string encoding are
// package connectors/internal/jsonscan's.
//
// A connector never decides what may be expressed: [compiler.Check] did that
// once, before translation, and a connector only writes what the outcome says.
package connectors

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Body is an OpenAI chat-completions request body, decoded one level deep.
// Fields a connector does not know pass through byte for byte.
type Body map[string]json.RawMessage

// ParseBody decodes a request body into its top-level members.
func ParseBody(b []byte) (Body, error) {
	var body Body
	if err := unmarshalOffStack(b, &body); err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("request body is not a JSON object")
	}
	return body, nil
}

// Native is a translated upstream request, relative to the upstream's base URL.
type Native struct {
	// Path is appended to the base URL, e.g. "/chat/completions".
	Path string
	// Header holds the connector's own headers (not the credentials).
	Header http.Header
	// Body is the exact JSON body sent.
	Body []byte
	// UsageAdded reports that a stream's usage reaches the connector though
	// the caller did not ask for it (stream_options.include_usage): the
	// connector asked the upstream for it, or the upstream reports it
	// unasked. The usage-only chunk is read, not relayed.
	UsageAdded bool
	// Degraded lists what the translation could not carry and proceeded
	// without, beside what the check degraded (a Messages request's
	// cache_control or thinking on an upstream that has neither); nil
	// when nothing was lost.
	Degraded []string
	// Affinity names the upstream's own stickiness knob the translation
	// set from the plan's session: "session_id" (OpenRouter) or
	// "prompt_cache_key" (OpenAI), "" when none was set (no session, an
	// upstream without one, a knob the upstream ignores for this request,
	// or a value the client set itself).
	Affinity string
}

// noHeaders is the shared empty Header of a connector that sets none of its
// own: the gateway only reads it.
var noHeaders = http.Header{}

// Attempt is one provider attempt an upstream reports having made.
type Attempt struct {
	// Provider is the provider tried.
	Provider string `json:"provider"`
	// Model is the model tried, as the upstream names it.
	Model string `json:"model"`
	// Status is the HTTP status of the attempt.
	Status int `json:"status"`
}

// Usage is the token usage an upstream reports.
type Usage struct {
	// PromptTokens counts every input token, cached or not.
	PromptTokens int64 `json:"prompt_tokens"`
	// CompletionTokens counts the output tokens.
	CompletionTokens int64 `json:"completion_tokens"`
	// CachedTokens is the part of the prompt served from the provider's
	// prompt cache, when reported.
	CachedTokens int64 `json:"cached_tokens"`
	// CacheWriteTokens is the part of the prompt written to the provider's
	// prompt cache (cache creation), when reported: OpenRouter's
	// prompt_tokens_details.cache_write_tokens, Anthropic's
	// cache_creation_input_tokens. Default 0.
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the part of the completion spent on reasoning,
	// when reported (the Responses API's
	// output_tokens_details.reasoning_tokens). Default 0.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// Result is what a connector reads back from an answer.
type Result struct {
	// ServedModel is the model the upstream said answered, as it spelled it
	// ("" when it did not say); the gateway resolves it to a catalog slug.
	ServedModel string
	// ServedProvider is the provider the upstream said served, as it spelled
	// it: a marketplace's report, or a direct upstream's own provider slug.
	ServedProvider string
	// Cost is what the upstream billed for the answer, in USD, when it
	// reported it (CostReported); the gateway prices the usage otherwise.
	Cost         float64
	CostReported bool
	// Attempts are the upstream's own attempts, when it reports them.
	Attempts []Attempt
	// Usage is the reported token usage.
	Usage Usage
	// FinishReason is the first choice's finish reason.
	FinishReason string
	// StreamError is set when a stream relayed the upstream's own in-band
	// error event (the caller has been told; the stream did not complete).
	StreamError string
	// ResponseID is a stored Responses API answer's id, as the upstream
	// that answered natively named it ("" for any other answer, and for a
	// response the upstream did not store): the id a continuation
	// (previous_response_id) will name.
	ResponseID string `json:",omitempty"`
	// Stored reports that the upstream said it stored the response (its
	// answer's store member is true).
	Stored bool `json:",omitempty"`
}

// Connector translates for one kind of upstream.
type Connector interface {
	// Kind returns the connector kind, e.g. "openrouter".
	Kind() string
	// Capabilities declares what the upstream's knobs can express.
	Capabilities() compiler.Capabilities
	// Translate builds the native request for a plan the check let through.
	Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
	// Authorize sets the credential headers for a key.
	Authorize(h http.Header, apiKey string)
	// Response converts a successful non-streaming answer into an OpenAI
	// chat.completion body and reads back who served.
	Response(call *Call, body []byte) ([]byte, Result, error)
	// NewStream returns a translator for one streaming answer.
	NewStream(call *Call) Stream
}

// Call is the context of one translated request, given back to the connector
// when it reads the answer.
type Call struct {
	// Plan is the compiled plan.
	Plan *compiler.Plan
	// Outcome is the check's verdict for this upstream.
	Outcome *compiler.Outcome
	// UsageAdded is the translation's [Native.UsageAdded].
	UsageAdded bool
	// Inbound describes a request that came in on another API than chat
	// completions (nil for chat completions): the answer goes back in its
	// shape.
	Inbound *Inbound
	// Resolve, when set, names a reported model id by the catalog's slug
	// ("" when it names none), so that a translated Messages answer knows
	// the model asked for under an upstream's dated or canonical id.
	Resolve func(reported string) string
}

// Stream translates one streaming answer's server-sent events.
type Stream interface {
	// Event translates one upstream event (its "event:" name, possibly empty,
	// and its data) and calls emit with each OpenAI chat.completion.chunk
	// payload to relay, in order. The data slice is only valid during the
	// call, and so is the slice passed to emit: keep a copy to retain it.
	// done reports the upstream's end of stream.
	Event(event, data []byte, emit func([]byte) error) (done bool, err error)
	// Result reports who served, once the stream has ended.
	Result() Result
}

// doneData is the data of the chat-completions stream's end marker, which
// every connector's stream relays last.
var doneData = []byte("[DONE]")

// Stable codes of a [TranslateError].
const (
	// CodeUnsupportedParameter: the request sets a parameter the upstream
	// cannot honour, and dropping it would change what the answer means
	// (n > 1, logprobs, a JSON response format, ...).
	CodeUnsupportedParameter = "unsupported_parameter"
	// CodeInvalidRequest: the request is malformed (a message shape, role or
	// value the chat-completions API itself would reject).
	CodeInvalidRequest = "invalid_request"
)

// TranslateError is a request a connector cannot translate. It is the
// client's to fix: the gateway answers it with 400, never retries it and never
// tries another upstream because of it.
type TranslateError struct {
	// Code is [CodeUnsupportedParameter] or [CodeInvalidRequest].
	Code string
	// Param is a JSON pointer to the offending member of the request body,
	// e.g. "/messages/2/role"; "" when the request as a whole is at fault.
	Param string
	// Message says what is wrong, for the client.
	Message string
}

// Error implements error.
func (e *TranslateError) Error() string {
	if e.Param == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + ": " + e.Param + ": " + e.Message
}

// invalidRequest is a [TranslateError] of code [CodeInvalidRequest].
func invalidRequest(param, format string, args ...any) *TranslateError {
	return &TranslateError{Code: CodeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// unsupportedParameter is a [TranslateError] of code
// [CodeUnsupportedParameter].
func unsupportedParameter(param, format string, args ...any) *TranslateError {
	return &TranslateError{Code: CodeUnsupportedParameter, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Kinds lists every connector kind.
var Kinds = []string{"anthropic", "azure", "bedrock", "openai", "openrouter", "vercel", "vertex"}

// New returns the connector of a kind. The set is closed: an explicit switch
// that is easy to grep, no registration order to get wrong.
func New(kind string) (Connector, error) {
	switch kind {
	case "openrouter":
		return newOpenRouter(), nil
	case "vercel":
		return newVercel(), nil
	case "openai":
		return newOpenAI(), nil
	case "anthropic":
		return newAnthropic(), nil
	case "vertex":
		return nil, fmt.Errorf("connector %q is built from its upstream's project, region and credentials (NewFor)", kind)
	case "azure":
		// With the api-key header and no deployments table: [NewFor]
		// builds a configured upstream's.
		return &azure{}, nil
	case "bedrock":
		return nil, fmt.Errorf("connector %q is built from its upstream's settings (NewFor)", kind)
	}
	return nil, fmt.Errorf("unknown connector %q (known: %v)", kind, Kinds)
}

// NewFor returns the connector of one configured upstream. A connector that
// needs the upstream's own settings (a cloud's region, project and
// credentials) is built from them here, once per load; the others are
// [New]'s. dir is the configuration directory, against which relative
// paths resolve. An error is the upstream's configuration's fault (a
// credential that cannot be loaded, a missing region) and is reported
// against it.
func NewFor(u *profiles.Upstream, dir string) (Connector, error) {
	switch u.Connector {
	case "vertex":
		return newVertex(u)
	case "azure":
		return newAzure(u)
	case "bedrock":
		return newBedrock(u)
	}
	return New(u.Connector)
}

// Signer is a connector whose upstream authenticates each request by what
// the request carries (a cloud's request signature, a short-lived token),
// not by a fixed key: the gateway calls Sign once the request's URL,
// headers and body are final, after [Connector.Authorize].
type Signer interface {
	// Sign sets the request's credentials. body is the exact body sent
	// (nil for a request without one). An error is a [*CredentialError].
	Sign(req *http.Request, body []byte) error
}

// CredentialError is an upstream's credentials that could not be loaded or
// refreshed when a request needed them: the gateway answers 502
// upstream_credentials_unavailable and tries the plan's next target. Its
// message names the upstream's credential source and never a secret.
type CredentialError struct {
	// Upstream is the configured upstream's name.
	Upstream string
	// Err is what the credential source said, free of secrets.
	Err error
}

// Error implements error.
func (e *CredentialError) Error() string {
	return "the credentials of upstream " + strconv.Quote(e.Upstream) + " could not be loaded: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *CredentialError) Unwrap() error { return e.Err }

// member is a top-level member a connector sets; a nil value removes it.
type member struct {
	key   string
	value []byte
}

// encodeBody writes the body's members, with the connector's own members
// set over them, in sorted key order, so that the same request always
// compiles to the same bytes (golden files, cache keys). It writes straight
// into one buffer: this is the request hot path.
func encodeBody(body Body, set ...member) []byte {
	var stack [32]string
	keys := stack[:0]
	n := 2
	for k, v := range body {
		if !setHas(set, k) {
			keys = append(keys, k)
			n += len(k) + len(v) + 4
		}
	}
	for _, m := range set {
		if m.value != nil {
			keys = append(keys, m.key)
			n += len(m.key) + len(m.value) + 4
		}
	}
	slices.Sort(keys)
	buf := make([]byte, 0, n)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonscan.AppendString(buf, k)
		buf = append(buf, ':')
		if v, ok := setValue(set, k); ok {
			buf = append(buf, v...)
		} else {
			buf = append(buf, body[k]...)
		}
	}
	return append(buf, '}')
}

func setHas(set []member, k string) bool {
	for _, m := range set {
		if m.key == k {
			return true
		}
	}
	return false
}

func setValue(set []member, k string) ([]byte, bool) {
	for _, m := range set {
		if m.key == k {
			return m.value, true
		}
	}
	return nil, false
}

// appendStringList appends a JSON array of strings.
func appendStringList(buf []byte, l []string) []byte {
	buf = append(buf, '[')
	for i, s := range l {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonscan.AppendString(buf, s)
	}
	return append(buf, ']')
}

// object builds a small JSON object of optional members in the order written.
type object struct{ buf []byte }

func (o *object) field(name string) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	o.buf = jsonscan.AppendString(o.buf, name)
	o.buf = append(o.buf, ':')
}

// list adds a string-list member when the list is non-empty.
func (o *object) list(name string, l []string) {
	if len(l) > 0 {
		o.field(name)
		o.buf = appendStringList(o.buf, l)
	}
}

// str adds a string member when s is non-empty.
func (o *object) str(name, s string) {
	if s != "" {
		o.field(name)
		o.buf = jsonscan.AppendString(o.buf, s)
	}
}

// boolean adds a boolean member.
func (o *object) boolean(name string, v bool) {
	o.field(name)
	o.buf = strconv.AppendBool(o.buf, v)
}

// raw adds a member whose value is already JSON.
func (o *object) raw(name string, v []byte) {
	o.field(name)
	o.buf = append(o.buf, v...)
}

// bytes returns the object, or nil when it has no member.
func (o *object) bytes() []byte {
	if len(o.buf) == 0 {
		return nil
	}
	return append(o.buf, '}')
}

// bearer sets an OpenAI-style Authorization header.
func bearer(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// echoModel is the model a translated answer names: the request's model
// when the upstream reports the id it was sent (or a dated snapshot of it),
// what it reported otherwise, so a substitution stays visible to the caller.
func echoModel(call *Call, reported string) string {
	if call == nil || call.Plan == nil || call.Outcome == nil {
		return reported
	}
	native := call.Outcome.NativeModel
	if reported == "" || reported == native || guardrails.TrimVersion(reported) == native {
		return call.Plan.DecidedModel
	}
	return reported
}

// isJSONTrue reports whether a member's raw value is the JSON true.
func isJSONTrue(v []byte) bool { return string(jsonscan.TrimSpace(v)) == "true" }

// jsonMayHold reports whether a JSON document may hold a member of one of
// the names: a quick test before a decode that would find nothing.
func jsonMayHold(b []byte, names ...string) bool { return jsonscan.MayHoldMember(b, names) }
