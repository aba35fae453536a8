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

// Translate implements [Connector.Translate]: the native model id; a
// stream asks for usage (see [withStreamUsage]); max_tokens is sent as
// max_completion_tokens, which OpenAI's API reference documents as
// replacing it and its reasoning models require.
func (*openAI) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set := make([]member, 1, 4)
	set[0] = member{"model", jsonscan.AppendString(nil, out.NativeModel)}
	if mt, ok := body["max_tokens"]; ok {
		if _, both := body["max_completion_tokens"]; !both {
			set = append(set, member{"max_tokens", nil}, member{"max_completion_tokens", mt})
		}
	}
	set, added := withStreamUsage(body, set)
	var affinity string
	if _, own := body["prompt_cache_key"]; !own && plan != nil && plan.Session != "" {
		// prompt_cache_key is chat completions' documented cache-routing
		// key (developers.openai.com/api/docs/guides/prompt-caching): it is
		// hashed with the prompt's first tokens to pick the machine, so a
		// session's turns land where its prefix is cached. A key the client
		// set itself is left as it is.
		set = append(set, member{"prompt_cache_key", jsonscan.AppendString(nil, plan.Session)})
		affinity = "prompt_cache_key"
	}
	return &Native{Path: "/chat/completions", Header: noHeaders, Body: encodeBody(body, set...), UsageAdded: added, Affinity: affinity}, nil
}

// Response implements [Connector.Response].
func (*openAI) Response(_ *Call, body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: "openai"}
	if err := readHead(body, &res); err != nil {
		return nil, res, err
	}
	return body, res, nil
}

// NewStream implements [Connector.NewStream].
func (*openAI) NewStream(call *Call) Stream {
	return &openAIStream{read: readHead, res: Result{ServedProvider: "openai"}, hideUsage: call != nil && call.UsageAdded}
}
