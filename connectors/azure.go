package connectors

import (
	"fmt"
	"net/http"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
)

// azure translates for Azure OpenAI's (and Azure AI Foundry's) OpenAI v1
// surface, {endpoint}/openai/v1: chat completions, Responses and
// embeddings on the OpenAI wire, so the openai connector's files do the
// translating and the reading; what differs is here. The request names a
// deployment in its model member (the v1 surface takes the deployment name
// there, not in the path), mapped from the catalog slug by the upstream's
// deployments table, else the catalog's native id for azure. It is one
// provider, "azure" in the catalog's terms: nothing to rank, no model
// chain. The Realtime API's WebSocket is /openai/v1/realtime?model=
// <deployment>, OpenAI's path under the v1 surface. Credentials are the
// api-key header (api_key_env) or, without a key, Microsoft Entra ID
// bearer tokens (azure_entra.go). A Messages request goes through the
// Messages→chat translation like on OpenAI.
type azure struct {
	// deployments maps catalog slugs to deployment names; byDeployment is
	// the reverse, so that a Responses answer, which reports the
	// deployment as its model, is read back as the slug.
	deployments, byDeployment map[string]string
}

// azureEntra is an azure upstream authenticating with Microsoft Entra ID
// tokens: the api-key one plus a [Signer].
type azureEntra struct {
	*azure
	tokens *entraToken
}

var (
	_ Connector       = (*azure)(nil)
	_ responsesNative = (*azure)(nil)
	_ embedder        = (*azure)(nil)
	_ realtimeNative  = (*azure)(nil)
	_ Signer          = (*azureEntra)(nil)
)

// openAIWire is the openai connector, whose translations and read-backs
// the azure one shares.
var openAIWire = newOpenAI()

// newAzure builds an azure upstream's connector from its settings: a
// base_url is required (a resource has no public default), and without
// api_key_env the credentials are Microsoft Entra ID's.
func newAzure(u *profiles.Upstream) (Connector, error) {
	if u.BaseURL == "" {
		return nil, fmt.Errorf("connector azure needs base_url, the resource's endpoint (https://{resource}.openai.azure.com)")
	}
	a := &azure{deployments: u.Deployments}
	if len(u.Deployments) > 0 {
		a.byDeployment = make(map[string]string, len(u.Deployments))
		for slug, d := range u.Deployments {
			a.byDeployment[d] = slug
		}
	}
	if u.APIKeyEnv != "" {
		return a, nil
	}
	t, err := newEntraToken(u.Name, u.CAFile)
	if err != nil {
		return nil, err
	}
	return &azureEntra{azure: a, tokens: t}, nil
}

// Kind implements [Connector.Kind].
func (*azure) Kind() string { return "azure" }

// Capabilities implements [Connector.Capabilities].
func (*azure) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: "azure"}
}

// Authorize implements [Connector.Authorize]: Azure OpenAI's api-key
// header.
func (*azure) Authorize(h http.Header, key string) {
	if key != "" {
		h["Api-Key"] = []string{key}
	}
}

// deployed is the outcome with the deployment as the model to send: a
// copy when the deployments table names one (the check's outcome is
// shared by the plan's attempts), the outcome itself otherwise.
func (a *azure) deployed(plan *compiler.Plan, out *compiler.Outcome) *compiler.Outcome {
	if plan == nil {
		return out
	}
	d, ok := a.deployments[plan.DecidedModel]
	if !ok || d == out.NativeModel {
		return out
	}
	o := *out
	o.NativeModel = d
	return &o
}

// Translate implements [Connector.Translate]: OpenAI's chat request
// (max_completion_tokens, usage asked for on a stream, the session's
// prompt_cache_key, which Azure documents for prompt caching:
// learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching), the
// deployment as the model.
func (a *azure) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return openAIWire.Translate(body, plan, a.deployed(plan, out))
}

// served is the result of an answer read as OpenAI's, served by azure, a
// deployment reported as its model named by its slug. (By value: a
// pointer would move the result to the heap on the request path.)
func (a *azure) served(res Result) Result {
	res.ServedProvider = "azure"
	if slug, ok := a.byDeployment[res.ServedModel]; ok {
		res.ServedModel = slug
	}
	return res
}

// Response implements [Connector.Response].
func (a *azure) Response(call *Call, body []byte) ([]byte, Result, error) {
	b, res, err := openAIWire.Response(call, body)
	return b, a.served(res), err
}

// NewStream implements [Connector.NewStream].
func (a *azure) NewStream(call *Call) Stream {
	return &azureStream{Stream: openAIWire.NewStream(call), a: a}
}

// azureStream is an OpenAI stream read back as azure's.
type azureStream struct {
	Stream
	a *azure
}

// Result implements [Stream.Result].
func (s *azureStream) Result() Result {
	return s.a.served(s.Stream.Result())
}

// responsesCapabilities implements [responsesNative].
func (a *azure) responsesCapabilities() compiler.Capabilities { return a.Capabilities() }

// responsesStateful implements [responsesNative]: the v1 surface stores
// responses (store defaults to true) and serves GET and DELETE
// /openai/v1/responses/{id}.
func (*azure) responsesStateful() bool { return true }

// translateResponses implements [responsesNative].
func (a *azure) translateResponses(in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return openAIWire.translateResponses(in, body, plan, a.deployed(plan, out))
}

// responsesResponse implements [responsesNative].
func (a *azure) responsesResponse(call *Call, body []byte) ([]byte, Result, error) {
	b, res, err := openAIWire.responsesResponse(call, body)
	return b, a.served(res), err
}

// newResponsesStream implements [responsesNative].
func (a *azure) newResponsesStream(call *Call) Stream {
	return &azureStream{Stream: openAIWire.newResponsesStream(call), a: a}
}

// embeddingsCapabilities implements [embedder].
func (a *azure) embeddingsCapabilities() compiler.Capabilities { return a.Capabilities() }

// translateEmbeddings implements [embedder].
func (a *azure) translateEmbeddings(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return openAIWire.translateEmbeddings(body, plan, a.deployed(plan, out))
}

// embeddingsResponse implements [embedder].
func (a *azure) embeddingsResponse(call *Call, body []byte) ([]byte, Result, error) {
	b, res, err := openAIWire.embeddingsResponse(call, body)
	return b, a.served(res), err
}

// realtimeCapabilities implements [realtimeNative].
func (a *azure) realtimeCapabilities() compiler.Capabilities { return a.Capabilities() }

// translateRealtime implements [realtimeNative]: OpenAI's
// /realtime?model=, under the v1 surface, naming the deployment, as
// Microsoft documents the GA WebSocket URL
// (learn.microsoft.com/azure/foundry/openai/how-to/realtime-audio-websockets).
// The handshake carries the api-key header or, on an azureEntra upstream,
// the Entra ID bearer its [Signer] sets.
func (a *azure) translateRealtime(plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return openAIWire.translateRealtime(plan, a.deployed(plan, out))
}
