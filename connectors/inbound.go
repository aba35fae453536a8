package connectors

import (
	"sort"

	"github.com/sluicegw/sluice/compiler"
)

// The inbound APIs: a request may come in as chat completions (the shape
// every connector translates from), as the Messages API, or as embeddings.
// This file picks, per (connector, API), the translation of the request and
// the reading of the answer; the translations themselves live in
// messages_request.go (a Messages request into the chat shape),
// messages_answer.go and messages_stream.go (a chat answer and stream back
// into the Messages shape), anthropic_native.go (the Messages API passed to
// the Anthropic upstream as it is) and embeddings.go.

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
)

// String returns the API's name as the request log records it: "chat",
// "messages", "embeddings" or "count_tokens".
func (a API) String() string {
	switch a {
	case APIMessages:
		return "messages"
	case APIEmbeddings:
		return "embeddings"
	case APICountTokens:
		return "count_tokens"
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
	// Beta holds the caller's anthropic-beta header values, passed to an
	// upstream that speaks the Messages API itself and ignored elsewhere.
	Beta []string
	// Untranslatable is set when a Messages request uses what has no
	// equivalent in the chat shape (a server tool, a document of a kind the
	// chat shape cannot carry, ...): every upstream but a native one refuses
	// it, with this error.
	Untranslatable *TranslateError
}

// messagesNative is a connector whose upstream speaks the Messages API
// itself: a Messages request is passed through and its answer relayed.
type messagesNative interface {
	// translateMessages builds the native request from the caller's body.
	translateMessages(in *Inbound, body Body, out *compiler.Outcome) (*Native, error)
	// messagesResponse reads back who served and returns the answer as it is.
	messagesResponse(call *Call, body []byte) ([]byte, Result, error)
	// newMessagesStream relays the event stream as it is, reading it back.
	newMessagesStream(call *Call) Stream
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
// Messages API; only those whose upstream has an embeddings endpoint serve
// embeddings.
func Serves(c Connector, api API) bool {
	if api == APIEmbeddings {
		_, ok := c.(embedder)
		return ok
	}
	return true
}

// SpeaksNatively reports whether a connector's upstream speaks the API
// itself, so that the caller's request is passed through rather than
// translated.
func SpeaksNatively(c Connector, api API) bool {
	switch api {
	case APIMessages:
		_, ok := c.(messagesNative)
		return ok
	case APIEmbeddings:
		return Serves(c, api)
	}
	return true
}

// CapabilitiesFor returns what the connector can express for a request of
// the API: its embeddings endpoint's capabilities for embeddings, its own
// otherwise.
func CapabilitiesFor(c Connector, api API) compiler.Capabilities {
	if e, ok := c.(embedder); ok && api == APIEmbeddings {
		return e.embeddingsCapabilities()
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
	if in == nil {
		return c.Translate(body, plan, out)
	}
	switch in.API {
	case APIMessages:
		if n, ok := c.(messagesNative); ok {
			return n.translateMessages(in, body, out)
		}
		if in.Untranslatable != nil {
			return nil, in.Untranslatable
		}
		tr := apart(func() (tr translated) {
			tr.chat, tr.lost, tr.err = chatFromMessages(body, dialectOf(c.Kind()))
			return tr
		})
		if tr.err != nil {
			return nil, tr.err
		}
		native, err := c.Translate(tr.chat, plan, out)
		if err != nil {
			return nil, err
		}
		native.Degraded = tr.lost
		return native, nil
	case APIEmbeddings:
		if e, ok := c.(embedder); ok {
			return e.translateEmbeddings(body, plan, out)
		}
	case APICountTokens:
		if n, ok := c.(messagesNative); ok {
			native, err := n.translateMessages(in, body, out)
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
	body []byte
	chat Body
	lost []string
	err  error
}

// CountTokensPath is the Messages API's token count, relative to the
// upstream's base URL. A count's [Native] for any other upstream has no
// path: nothing is sent, and the gateway estimates.
const CountTokensPath = "/messages/count_tokens"

// Respond reads a successful non-streaming answer of a call: who served,
// and the answer in the shape of the API the request came in on.
func Respond(c Connector, call *Call, body []byte) ([]byte, Result, error) {
	switch callAPI(call) {
	case APIMessages:
		if n, ok := c.(messagesNative); ok {
			return n.messagesResponse(call, body)
		}
		chat, res, err := c.Response(call, body)
		if err != nil {
			return nil, res, err
		}
		tr := apart(func() (tr translated) {
			tr.body, tr.err = messageFromChat(chat, call)
			return tr
		})
		return tr.body, res, tr.err
	case APIEmbeddings:
		if e, ok := c.(embedder); ok {
			return e.embeddingsResponse(call, body)
		}
	}
	return c.Response(call, body)
}

// OpenStream returns the translator of one streaming answer of a call. For
// the Messages API each payload it emits is one whole server-sent event, its
// "event:" line included ("event: message_start\ndata: {...}"); for chat
// completions each is an event's data.
func OpenStream(c Connector, call *Call) Stream {
	if callAPI(call) == APIMessages {
		if n, ok := c.(messagesNative); ok {
			return n.newMessagesStream(call)
		}
		return newMessagesStream(c.NewStream(call), call)
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
