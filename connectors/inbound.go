package connectors

import (
	"sort"

	"github.com/sluicegw/sluice/compiler"
)

// The inbound APIs: a request may come in as chat completions (the shape
// every connector translates from), as the Messages API, or as embeddings.
// This file picks, per (connector, API), the translation of the request and
// the reading of the answer; the translations themselves live in the
// translate_<inbound>_<upstream API>*.go files (translate_messages_chat.go
// turns a Messages request into the chat shape, its _answer.go and
// _stream.go a chat answer and stream back into the Messages shape), the
// native pass-throughs in the <upstream>_<api>.go files
// (anthropic_messages.go passes the Messages API to the Anthropic upstream
// as it is) and embeddings.go.

// API is the inbound API a request came in on.
type API uint8

const (
	// APIChat is POST /v1/chat/completions, the shape every connector
	// translates from. It is the zero value.
	APIChat API = iota
	// APIMessages is POST /v1/messages, the Anthropic Messages API.
	APIMessages
	// APIEmbeddings is POST /v1/embeddings, the OpenAI embeddings API.
	APIEmbeddings
	// APICountTokens is POST /v1/messages/count_tokens, the Messages API's
	// token count: an upstream that speaks the Messages API counts it,
	// nothing is sent to any other (the gateway estimates).
	APICountTokens
	// APIResponses is POST /v1/responses, the OpenAI Responses API.
	APIResponses
	// APIRealtime is GET /v1/realtime, the OpenAI Realtime API: a
	// WebSocket session relayed to an upstream that speaks it itself
	// (see [SpeaksRealtime]); nothing is translated.
	APIRealtime
)

// String returns the API's name as the request log records it: "chat",
// "messages", "embeddings", "count_tokens", "responses" or "realtime".
func (a API) String() string {
	switch a {
	case APIMessages:
		return "messages"
	case APIEmbeddings:
		return "embeddings"
	case APICountTokens:
		return "count_tokens"
	case APIResponses:
		return "responses"
	case APIRealtime:
		return "realtime"
	}
	return "chat"
}

// Inbound is what a connector needs to know of a request that did not come
// in as chat completions. The request's [Body] is then in that API's own
// shape — the Messages request or the embeddings request as the caller sent
// it, sluice's routing member removed — and what every policy step reads of
// a body (its model, its token cap, its messages for the size estimate)
// means the same in all three shapes.
type Inbound struct {
	// API is the API the request came in on.
	API API
	// Model is the model as the caller wrote it, which a translated answer
	// names when the model asked for served.
	Model string
	// Beta holds the caller's anthropic-beta header values. The plan
	// carries them ([compiler.Request.Betas]) and the check keeps, per
	// upstream, those it takes: a connector sends [compiler.Outcome.Betas],
	// never this list.
	Beta []string
	// Request is the request's body as the caller sent it, which a
	// translated Responses answer echoes (its instructions, tools, ...).
	Request Body
}

// messagesNative is a connector whose upstream speaks the Messages API
// itself: a Messages request is passed through and its answer relayed.
type messagesNative interface {
	// messagesCapabilities declares what the upstream's Messages endpoint
	// can express of sluice's routing knobs.
	messagesCapabilities() compiler.Capabilities
	// translateMessages builds the native request from the caller's body.
	translateMessages(in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
	// messagesResponse reads back who served and returns the answer, the
	// upstream's routing report removed.
	messagesResponse(call *Call, body []byte) ([]byte, Result, error)
	// newMessagesStream relays the event stream, reading it back.
	newMessagesStream(call *Call) Stream
}

// responsesNative is a connector whose upstream speaks the Responses API
// itself: a Responses request is passed through and its answer relayed.
type responsesNative interface {
	// responsesCapabilities declares what the upstream's Responses
	// endpoint can express of sluice's routing knobs.
	responsesCapabilities() compiler.Capabilities
	// responsesStateful reports whether the upstream stores responses
	// (store, previous_response_id, GET and DELETE by id).
	responsesStateful() bool
	// translateResponses builds the native request from the caller's body.
	translateResponses(in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
	// responsesResponse reads back who served and returns the answer, the
	// upstream's routing report removed.
	responsesResponse(call *Call, body []byte) ([]byte, Result, error)
	// newResponsesStream relays the event stream, reading it back.
	newResponsesStream(call *Call) Stream
}

// tokenCounter is a connector whose upstream counts a Messages request's
// tokens itself (POST /messages/count_tokens): Anthropic's. The
// marketplaces document no such endpoint.
type tokenCounter interface {
	messagesNative
	countsTokens()
}

// countTranslator is a token counter whose count endpoint is not the
// Messages API's (a cloud's): it builds the count's native request itself.
type countTranslator interface {
	translateCount(in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
}

// countReshaper is a [countTranslator] whose count answer has a shape of
// its own too (Bedrock's CountTokens), not the Messages API's.
type countReshaper interface {
	countTranslator
	// countAnswer turns a successful count answer into the Messages API's.
	countAnswer(body []byte) ([]byte, error)
}

// CountAnswer returns a successful token count in the Messages API's shape
// ({"input_tokens": n}): the upstream's answer as it came, or reshaped
// when the upstream counts in a shape of its own.
func CountAnswer(c Connector, body []byte) ([]byte, error) {
	if r, ok := c.(countReshaper); ok {
		return r.countAnswer(body)
	}
	return body, nil
}

// foreignErrors is a connector whose upstream speaks an API's requests and
// answers but answers errors in a shape of its own (Bedrock's
// {"message": …} with the type in a header), which the gateway retells in
// the caller's API's shape as it does a translated request's.
type foreignErrors interface{ foreignErrors() }

// ErrorsNative reports whether the connector's upstream answers a request
// of the API with errors in that API's own shape, so that they are relayed
// as they came: an upstream that speaks the API and has no error shape of
// its own.
func ErrorsNative(c Connector, api API) bool {
	if _, ok := c.(foreignErrors); ok {
		return false
	}
	return SpeaksNatively(c, api)
}

// embedder is a connector whose upstream serves embeddings.
type embedder interface {
	// embeddingsCapabilities declares what the upstream's embeddings
	// endpoint can express (its knobs differ from its chat endpoint's).
	embeddingsCapabilities() compiler.Capabilities
	// translateEmbeddings builds the native embeddings request.
	translateEmbeddings(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
	// embeddingsResponse reads back who served, the usage and the cost, and
	// returns the answer without the upstream's routing report.
	embeddingsResponse(call *Call, body []byte) ([]byte, Result, error)
}

// Serves reports whether a connector's upstream can serve an API at all:
// every connector serves chat completions and, natively or translated, the
// Messages and Responses APIs; only those whose upstream has an embeddings
// endpoint serve embeddings.
func Serves(c Connector, api API) bool {
	switch api {
	case APIEmbeddings:
		_, ok := c.(embedder)
		return ok
	case APIRealtime:
		return SpeaksRealtime(c)
	}
	return true
}

// SpeaksNatively reports whether a connector's upstream speaks the API
// itself, so that the caller's request is passed through rather than
// translated: OpenRouter and the Vercel AI Gateway speak chat completions,
// Messages, Responses and embeddings; OpenAI chat completions, Responses and
// embeddings; Anthropic and Vertex AI (its Anthropic models) the Messages
// API (and its token count) alone.
func SpeaksNatively(c Connector, api API) bool {
	switch api {
	case APIMessages:
		_, ok := c.(messagesNative)
		return ok
	case APICountTokens:
		_, ok := c.(tokenCounter)
		return ok
	case APIResponses:
		_, ok := c.(responsesNative)
		return ok
	case APIEmbeddings, APIRealtime:
		return Serves(c, api)
	}
	return !speaksMessagesOnly(c) && foreignAPIOf(c) == ""
}

// foreignAPI is a connector whose upstream speaks none of the inbound APIs
// but one of its own (Vertex AI's generateContent for Gemini models): every
// request is translated into it from chat.
type foreignAPI interface{ foreignAPI() string }

// foreignAPIOf is the name of a connector's own API, "" when it speaks an
// inbound one.
func foreignAPIOf(c Connector) string {
	if f, ok := c.(foreignAPI); ok {
		return f.foreignAPI()
	}
	return ""
}

// messagesOnly is a connector whose upstream speaks the Messages API and
// no chat completions: Anthropic's, and Anthropic's models on Vertex AI and
// Amazon Bedrock.
type messagesOnly interface{ speaksMessagesOnly() }

// speaksMessagesOnly reports whether a connector's upstream speaks the
// Messages API and no chat completions.
func speaksMessagesOnly(c Connector) bool {
	_, ok := c.(messagesOnly)
	return ok
}

// dialects is a connector whose upstream speaks a different API for some
// of its models: a cloud serves Anthropic's models in the Messages API and
// its other models in an API of its own (Bedrock's Converse, Vertex AI's
// generateContent). dialect returns the connector that speaks to the
// native model — one built with the upstream, never per request — or nil
// when the connector itself does.
type dialects interface {
	dialect(nativeModel string) Connector
}

// Dialect returns the connector that speaks to an upstream's native model:
// c itself, or, for a cloud that speaks another API for the model, the
// connector of that API. Every per-API question about a request bound for
// the model (does the upstream speak the API, in which shape it answers
// errors, how it is asked) is asked of the dialect; TranslateFor, Respond
// and OpenStream pick it themselves from the outcome's native model.
// Capabilities and credentials (Signer, Framer) stay the upstream's.
func Dialect(c Connector, nativeModel string) Connector {
	if d, ok := c.(dialects); ok {
		if dc := d.dialect(nativeModel); dc != nil {
			return dc
		}
	}
	return c
}

// outcomeModel is the native model an outcome sends ("" when none).
func outcomeModel(out *compiler.Outcome) string {
	if out == nil {
		return ""
	}
	return out.NativeModel
}

// callModel is the native model a call was sent to ("" when none).
func callModel(call *Call) string {
	if call == nil {
		return ""
	}
	return outcomeModel(call.Outcome)
}

// Asked says how a connector's upstream is asked for a request of the API,
// as explain and the docs tell it: "native" when the upstream speaks the
// API, "via chat" when the request is translated into chat completions,
// "via messages" when the translated chat request is then written as the
// upstream's Messages request (Anthropic); "via generateContent" and "via
// chat, as generateContent" for an upstream of an API of its own (Vertex
// AI's Gemini models, Bedrock's Converse).
func Asked(c Connector, api API) string {
	own := foreignAPIOf(c)
	switch {
	case SpeaksNatively(c, api):
		return "native"
	case api == APIChat && own != "":
		return "via " + own
	case api == APIChat:
		return "via messages"
	case own != "":
		return "via chat, as " + own
	case speaksMessagesOnly(c):
		return "via chat, as messages"
	}
	return "via chat"
}

// ResponsesStateful reports whether a connector's upstream stores
// responses, so that a continuation (previous_response_id) can be sent to
// it: OpenAI's does; the marketplaces document their Responses endpoints
// as stateless.
func ResponsesStateful(c Connector) bool {
	n, ok := c.(responsesNative)
	return ok && n.responsesStateful()
}

// CapabilitiesFor returns what the connector can express for a request of
// the API: the capabilities of the upstream's endpoint for that API when it
// speaks it natively (its Messages, Responses or embeddings endpoint may
// take fewer knobs than its chat endpoint), its chat endpoint's otherwise.
func CapabilitiesFor(c Connector, api API) compiler.Capabilities {
	switch api {
	case APIEmbeddings:
		if e, ok := c.(embedder); ok {
			return e.embeddingsCapabilities()
		}
	case APIMessages, APICountTokens:
		if n, ok := c.(messagesNative); ok {
			return n.messagesCapabilities()
		}
	case APIResponses:
		if n, ok := c.(responsesNative); ok {
			return n.responsesCapabilities()
		}
	case APIRealtime:
		if n, ok := c.(realtimeNative); ok {
			return n.realtimeCapabilities()
		}
	}
	return c.Capabilities()
}

// TranslateFor builds the native request of a request that came in on in's
// API (chat completions when in is nil): [Connector.Translate] for chat;
// for the Messages API, the caller's body passed through to a native
// upstream, or its chat translation in the upstream's dialect elsewhere;
// for embeddings, the upstream's embeddings request. body is in the API's
// own shape, its token cap as a budget may have lowered it. A connector that
// cannot serve the API at all is never asked (see [Serves]).
func TranslateFor(c Connector, in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	c = Dialect(c, outcomeModel(out))
	if in == nil {
		return c.Translate(body, plan, out)
	}
	switch in.API {
	case APIMessages:
		if n, ok := c.(messagesNative); ok {
			return n.translateMessages(in, body, plan, out)
		}
		return translateViaChat(c, in, body, plan, out)
	case APIResponses:
		if n, ok := c.(responsesNative); ok {
			return n.translateResponses(in, body, plan, out)
		}
		return translateViaChat(c, in, body, plan, out)
	case APIEmbeddings:
		if e, ok := c.(embedder); ok {
			return e.translateEmbeddings(body, plan, out)
		}
	case APIRealtime:
		if n, ok := c.(realtimeNative); ok {
			return n.translateRealtime(plan, out)
		}
		return nil, &TranslateError{Code: compiler.CodeAPIUnsupported, Message: c.Kind() + " upstreams do not speak the Realtime API"}
	case APICountTokens:
		if ct, ok := c.(countTranslator); ok {
			return ct.translateCount(in, body, plan, out)
		}
		if n, ok := c.(tokenCounter); ok {
			native, err := n.translateMessages(in, body, plan, out)
			if err == nil {
				native.Path = CountTokensPath
			}
			return native, err
		}
		// No other upstream counts a Messages request: nothing is sent.
		return &Native{Header: noHeaders}, nil
	}
	return c.Translate(body, plan, out)
}

// apart runs f on a goroutine of its own and returns what it returns. The
// Messages API's translations both ways go deep (encoding/json's decoder
// frames under the translation's), and a request's goroutine keeps the
// largest stack it ever reached for as long as its connection lives — for
// an open stream, the stream's whole life. Apart, a translation's depth is
// a short-lived goroutine's, and a translated Messages request needs no
// more stack than a chat completion (gateway/stack_test.go holds both to
// 8 KiB). The goroutine costs about a microsecond; a translation tens.
func apart[R any](f func() R) R {
	done := make(chan R, 1)
	go func() { done <- f() }()
	return <-done
}

// translated is a translation's outcome, carried back by apart.
type translated struct {
	body   []byte
	res    Result
	native *Native
	chat   Body
	lost   []string
	err    error
}

// CountTokensPath is the Messages API's token count, relative to the
// upstream's base URL. A count's [Native] for any other upstream has no
// path: nothing is sent, and the gateway estimates.
const CountTokensPath = "/messages/count_tokens"

// Respond reads a successful non-streaming answer of a call: who served,
// and the answer in the shape of the API the request came in on.
func Respond(c Connector, call *Call, body []byte) (out []byte, res Result, err error) {
	// Off the connection's stack: an answer's translation decodes it at
	// the bottom of the attempt loop (gateway/stack_test.go).
	OffStack(func() { out, res, err = respond(c, call, body) })
	return out, res, err
}

// respond is Respond's work, on a decoder goroutine.
func respond(c Connector, call *Call, body []byte) ([]byte, Result, error) {
	c = Dialect(c, callModel(call))
	switch callAPI(call) {
	case APIMessages:
		if n, ok := c.(messagesNative); ok {
			return n.messagesResponse(call, body) // a shallow scan: no need to go apart
		}
		return respondViaChat(c, call, body)
	case APIResponses:
		if n, ok := c.(responsesNative); ok {
			return n.responsesResponse(call, body)
		}
		return respondViaChat(c, call, body)
	case APIEmbeddings:
		if e, ok := c.(embedder); ok {
			return e.embeddingsResponse(call, body)
		}
	}
	return c.Response(call, body)
}

// OpenStream returns the translator of one streaming answer of a call. For
// the Messages and Responses APIs each payload it emits is one whole
// server-sent event, its "event:" line included ("event:
// message_start\ndata: {...}"); for chat completions each is an event's
// data.
func OpenStream(c Connector, call *Call) Stream {
	c = Dialect(c, callModel(call))
	switch callAPI(call) {
	case APIMessages:
		if n, ok := c.(messagesNative); ok {
			return n.newMessagesStream(call)
		}
	case APIResponses:
		if n, ok := c.(responsesNative); ok {
			return n.newResponsesStream(call)
		}
	}
	return streamViaChat(c, call)
}

// translateViaChat is the translated path of a Messages or Responses
// request: into the chat shape (in the upstream's dialect), then the
// connector's own chat translation. What the first step could not carry is
// the native request's Degraded. What the chat shape cannot carry (a server
// tool, a stored conversation, ...) refuses the request on this upstream,
// located (unsupported_parameter).
func translateViaChat(c Connector, in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	// Both steps apart (see apart): the connector's own translation of the
	// chat body is the deepest frame of a translated request.
	tr := apart(func() (tr translated) {
		var chat Body
		var lost []string
		if in.API == APIResponses {
			chat, lost, tr.err = chatFromResponses(body)
		} else {
			chat, lost, tr.err = chatFromMessages(body, dialectOf(c.Kind()))
		}
		if tr.err != nil {
			return tr
		}
		tr.native, tr.err = c.Translate(chat, plan, out)
		if tr.err == nil {
			tr.native.Degraded = mergeDegraded(lost, tr.native.Degraded)
		}
		return tr
	})
	return tr.native, tr.err
}

// respondViaChat reads a translated call's answer: the connector's chat
// answer, told in the shape of the API the request came in on.
func respondViaChat(c Connector, call *Call, body []byte) ([]byte, Result, error) {
	if callAPI(call) == APIChat {
		return c.Response(call, body)
	}
	// Both steps apart (see apart): the connector's reading of its
	// upstream's answer (Anthropic's, decoded whole) goes deep too.
	tr := apart(func() (tr translated) {
		var chat []byte
		chat, tr.res, tr.err = c.Response(call, body)
		if tr.err != nil {
			return tr
		}
		if callAPI(call) == APIResponses {
			tr.body, tr.err = respAnswer(chat, call)
		} else {
			tr.body, tr.err = messageFromChat(chat, call)
		}
		return tr
	})
	return tr.body, tr.res, tr.err
}

// streamViaChat is a translated call's stream: the connector's chat
// stream, told as events of the API the request came in on.
func streamViaChat(c Connector, call *Call) Stream {
	switch callAPI(call) {
	case APIMessages:
		return newMessagesStream(c.NewStream(call), call)
	case APIResponses:
		return newResponsesStream(c.NewStream(call), call)
	}
	return c.NewStream(call)
}

// callAPI is the API of a call (chat completions without an inbound).
func callAPI(call *Call) API {
	if call == nil || call.Inbound == nil {
		return APIChat
	}
	return call.Inbound.API
}

// mergeDegraded returns the sorted union of two degraded sets; a set is
// returned as it is when the other adds nothing.
func mergeDegraded(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append(append(make([]string, 0, len(a)+len(b)), a...), b...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}

// MergeDegraded is the sorted union of the check's degraded set and what a
// translation could not carry ([Native.Degraded]).
func MergeDegraded(check []string, native *Native) []string {
	if native == nil {
		return check
	}
	return mergeDegraded(check, native.Degraded)
}
