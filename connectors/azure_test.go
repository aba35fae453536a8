package connectors

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
)

// TestAzureAnswerCorpus reads back testdata/connectors/azure, answers
// Azure OpenAI's v1 surface sent (testdata/recorded/azure): relayed as
// they came, content filter annotations included, served by azure.
func TestAzureAnswerCorpus(t *testing.T) {
	runAnswerCorpus(t, "azure", nil, nil)
}

// TestAzureUpstream: an azure upstream needs a base_url; the request names
// the deployment the upstream's table maps the decided slug to (else the
// native id) on every API; the key goes in api-key; a Responses answer
// naming the deployment is read back as the slug.
func TestAzureUpstream(t *testing.T) {
	_, err := NewFor(&profiles.Upstream{Name: "az", Connector: "azure", APIKeyEnv: "K"}, "")
	require.ErrorContains(t, err, "base_url")

	c, err := NewFor(&profiles.Upstream{Name: "az", Connector: "azure", APIKeyEnv: "K",
		BaseURL: "https://r.openai.azure.com/openai/v1", Deployments: map[string]string{"openai/gpt-4o": "prod-4o"}}, "")
	require.NoError(t, err)
	assert.Equal(t, "azure", c.Kind())
	assert.Equal(t, "azure", c.Capabilities().DirectProvider)
	_, signs := c.(Signer)
	assert.False(t, signs, "an api-key upstream does not sign")

	out := &compiler.Outcome{NativeModel: "gpt-4o", Degraded: []string{}}
	for _, tc := range []struct {
		api  API
		body string
		path string
	}{
		{APIChat, `{"model":"x","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, "/chat/completions"},
		{APIResponses, `{"model":"x","input":"hi"}`, "/responses"},
		{APIEmbeddings, `{"model":"x","input":"hi"}`, "/embeddings"},
	} {
		body, err := ParseBody([]byte(tc.body))
		require.NoError(t, err)
		for slug, want := range map[string]string{"openai/gpt-4o": "prod-4o", "openai/gpt-4o-mini": "gpt-4o"} {
			var in *Inbound
			if tc.api != APIChat {
				in = &Inbound{API: tc.api, Model: "x"}
			}
			n, err := TranslateFor(c, in, body, &compiler.Plan{DecidedModel: slug}, out)
			require.NoError(t, err)
			assert.Equal(t, tc.path, n.Path)
			got, err := ParseBody(n.Body)
			require.NoError(t, err)
			assert.Equal(t, `"`+want+`"`, string(got["model"]), "%v %s", tc.api, slug)
		}
	}
	assert.Equal(t, "gpt-4o", out.NativeModel, "the shared outcome is left as it was")

	h := http.Header{}
	c.Authorize(h, "secret")
	assert.Equal(t, "secret", h.Get("api-key"))
	assert.Empty(t, h.Get("Authorization"))

	_, res, err := c.(responsesNative).responsesResponse(nil, []byte(`{"id":"resp_1","object":"response","model":"prod-4o","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":1,"input_tokens_details":{"cached_tokens":2}}}`))
	require.NoError(t, err)
	assert.Equal(t, "openai/gpt-4o", res.ServedModel)
	assert.Equal(t, "azure", res.ServedProvider)
	assert.Equal(t, int64(2), res.Usage.CachedTokens)
}

// fixedCredential hands out one token valid for an hour.
type fixedCredential struct{ n *int }

func (c fixedCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	*c.n++
	return azcore.AccessToken{Token: "tok", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestAzureEntraSign: Sign sets the bearer from a token fetched once, and
// leaves a request carrying a caller's own api-key alone.
func TestAzureEntraSign(t *testing.T) {
	n := 0
	a := &azureEntra{azure: &azure{}, tokens: &entraToken{upstream: "az", source: "test", cred: fixedCredential{&n}}}
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, "https://r.openai.azure.com/openai/v1/chat/completions", nil)
		require.NoError(t, a.Sign(req, nil))
		assert.Equal(t, "Bearer tok", req.Header.Get("Authorization"))
	}
	assert.Equal(t, 1, n, "one token, reused")
	req, _ := http.NewRequest(http.MethodPost, "https://r.openai.azure.com/openai/v1/chat/completions", nil)
	a.Authorize(req.Header, "callers-own")
	require.NoError(t, a.Sign(req, nil))
	assert.Empty(t, req.Header.Get("Authorization"))
}

// BenchmarkAzureEntraSign is the token path's cost on a request once the
// token is cached: an atomic load, a clock read and one header.
func BenchmarkAzureEntraSign(b *testing.B) {
	n := 0
	a := &azureEntra{azure: &azure{}, tokens: &entraToken{upstream: "az", source: "test", cred: fixedCredential{&n}}}
	req, _ := http.NewRequest(http.MethodPost, "https://r.openai.azure.com/openai/v1/chat/completions", nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Sign(req, nil); err != nil {
			b.Fatal(err)
		}
	}
}
