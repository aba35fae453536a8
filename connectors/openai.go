package connectors

import (
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/compiler"
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
	b := encodeBody(body, member{"model", appendJSONString(nil, out.NativeModel)})
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

// directServed maps the model id a direct provider reports back to a slug:
// the decided slug when it is the native id sent or a dated snapshot of it,
// "<provider>/<id>" otherwise, so a substitution stays visible — including
// one whose id merely starts with the id sent (gpt-4o-mini for gpt-4o).
func directServed(call *Call, provider, reported string) string {
	if call == nil || call.Plan == nil || call.Outcome == nil {
		return reported
	}
	native := call.Outcome.NativeModel
	if reported == "" || reported == native {
		return call.Plan.DecidedModel
	}
	if date, ok := strings.CutPrefix(reported, native+"-"); ok && isSnapshotDate(date) {
		return call.Plan.DecidedModel
	}
	return provider + "/" + reported
}

// isSnapshotDate reports whether s is the date a provider appends to a model
// id to name a snapshot: 2024-08-06 (OpenAI) or 20250929 (Anthropic).
func isSnapshotDate(s string) bool {
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	switch len(s) {
	case 8:
		return digits(s)
	case 10:
		return s[4] == '-' && s[7] == '-' && digits(s[:4]) && digits(s[5:7]) && digits(s[8:])
	}
	return false
}
