package connectors

import (
	"net/http"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// openAI translates for OpenAI's own API: one provider, nothing to rank and
// no model chain. The request goes through as it is, with the native model id.
type openAI struct{}

var _ Connector = (*openAI)(nil)

func newOpenAI() *openAI { return &openAI{} }

// Kind implements [Connector.Kind].
func (*openAI) Kind() string { return "openai" }

// Capabilities implements [Connector.Capabilities].
func (*openAI) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: "openai"}
}

// Authorize implements [Connector.Authorize].
func (*openAI) Authorize(h http.Header, key string) { bearer(h, key) }

// Translate implements [Connector.Translate].
func (*openAI) Translate(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	b := encodeBody(body, member{"model", jsonscan.AppendString(nil, out.NativeModel)})
	return &Native{Path: "/chat/completions", Header: noHeaders, Body: b}, nil
}

// Response implements [Connector.Response].
func (*openAI) Response(call *Call, body []byte) ([]byte, Result, error) {
	var res Result
	if err := readHead(body, &res); err != nil {
		return nil, res, err
	}
	res.ServedModel = directServed(call, "openai", res.ServedModel)
	res.ServedProvider = "openai"
	return body, res, nil
}

// NewStream implements [Connector.NewStream].
func (*openAI) NewStream(call *Call) Stream {
	return &openAIStream{read: readHead, finish: func(res *Result) {
		res.ServedModel = directServed(call, "openai", res.ServedModel)
		res.ServedProvider = "openai"
	}}
}
