package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// The Azure OpenAI upstream end to end on loopback: the demo configuration
// with an azure upstream (k-batch's), a route whose restricted target takes
// over Azure's hate refusals, and the simulator's Azure endpoints.

const (
	azureKey = "azure-platform-key-5"
	// entraSecret is the service principal's secret: it must appear in no
	// answer and no log line.
	entraSecret = "entra-client-secret-do-not-leak"
)

// azureRoute sends to Azure, and takes an Azure refusal for hate over on
// Anthropic.
const azureRoute = `
[[routes]]
model = "az-guarded"
[[routes.targets]]
upstream = "azure"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "anthropic"
model = "anthropic/claude-sonnet-4.5"
takes_over = ["refusal:hate"]
`

// azureHarness is the demo gateway with an azure upstream authenticating
// with auth (its [[upstreams]] lines beyond name and connector), k-batch
// sent to it and the response cache off (repeated prompts reach the
// upstream).
func azureHarness(t *testing.T, auth string, simCfg func(*simulator.Config), prep func(dir string)) *harness {
	upstream := "[[upstreams]]\nname = \"azure\"\nconnector = \"azure\"\nbase_url = \"https://sluice-test.openai.azure.com\"\n" +
		"first_byte_timeout = \"2s\"\ntimeout = \"5s\"\n" + auth + "\n"
	return newHarnessOpts(t, func(dir string) {
		priceAzureCache(t, dir)
		if prep != nil {
			prep(dir)
		}
	}, simCfg, func(o *gateway.Options) {
		o.UpstreamURLs["azure"] = strings.Replace(o.UpstreamURLs["openai"], "/openai/v1", "/azure/openai/v1", 1)
	},
		[2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"},
		[2]string{"max_body_bytes = 65536\n", "max_body_bytes = 1048576\n"},
		[2]string{"[[keys]]\nid = \"k-chat\"", upstream + "[[keys]]\nid = \"k-chat\""},
		[2]string{"project = \"batch\"\nupstream = \"openai\"\n", "project = \"batch\"\nupstream = \"azure\"\n"},
		[2]string{"\n# A free pool", azureRoute + "\n# A free pool"})
}

// Azure's gpt-4o prices in the test catalog (USD per million tokens).
const azureIn, azureOut, azureCacheRead = 2.5, 10.0, 1.25

// priceAzureCache checks the prices the test computes costs with against
// the demo catalog's Azure gpt-4o endpoint (Azure's published prices for
// GPT-4o: input, cached input and output per million tokens).
func priceAzureCache(t *testing.T, dir string) {
	p := filepath.Join(dir, "catalog.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var cat map[string]any
	require.NoError(t, json.Unmarshal(b, &cat))
	found := false
	for _, m := range cat["models"].([]any) {
		m := m.(map[string]any)
		if m["slug"] != "openai/gpt-4o" {
			continue
		}
		for _, e := range m["endpoints"].([]any) {
			e := e.(map[string]any)
			if e["provider"] == "azure" {
				require.Equal(t, azureIn, e["price_in"])
				require.Equal(t, azureOut, e["price_out"])
				require.Equal(t, azureCacheRead, e["price_cache_read"])
				found = true
			}
		}
	}
	require.True(t, found, "the demo catalog serves openai/gpt-4o on azure")
}

// longSystem is a system prompt past the 1,024 tokens Azure's prompt cache
// needs.
var longSystem = strings.Repeat("You answer questions about the sluice gateway precisely. ", 100)

// TestAzureAPIKey: chat (stream and not), Responses (stream and not),
// embeddings and a translated Messages request reach Azure's v1 surface
// with the api-key and the catalog's native id as the deployment; rows
// say azure served, with Azure's cached tokens priced at the catalog's
// Azure cache price; a content filter refusal goes on to the target that
// takes it over, recorded refusal:hate; a filtered completion stays a 200.
func TestAzureAPIKey(t *testing.T) {
	t.Setenv("AZURE_OPENAI_API_KEY", azureKey)
	h := azureHarness(t, "api_key_env = \"AZURE_OPENAI_API_KEY\"", func(c *simulator.Config) { c.AzureAPIKey = azureKey }, nil)

	chat := `{"model":"openai/gpt-4o","messages":[{"role":"system","content":"` + longSystem + `"},{"role":"user","content":"Hello"}]}`
	var rows []string
	for range 2 {
		resp, body := h.post(secretBatch, chat)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		assert.Contains(t, string(body), `"prompt_filter_results"`, "Azure's answer is relayed as it came")
		rows = append(rows, resp.Header.Get(gateway.HeaderRequestID))
	}
	sent := h.sent.take()
	require.Len(t, sent, 2)
	for _, s := range sent {
		assert.True(t, strings.HasSuffix(s.URL, "/azure/openai/v1/chat/completions"), s.URL)
		assert.Empty(t, s.Auth, "the key goes in api-key, no bearer")
		assert.Contains(t, string(s.Body), `"model":"gpt-4o"`)
	}
	first, second := h.row(rows[0]), h.row(rows[1])
	assert.Equal(t, "azure", first.Upstream)
	assert.Equal(t, "azure", first.ServedProvider)
	assert.Equal(t, "openai/gpt-4o", first.ServedModel)
	assert.Zero(t, first.CachedTokens, "a first prompt is not cached")
	assert.Positive(t, second.CachedTokens, "Azure's prompt cache serves the repeated prompt")
	for _, r := range []struct {
		prompt, cached, completion int64
		cost                       float64
	}{{first.PromptTokens, first.CachedTokens, first.CompletionTokens, first.CostUSD},
		{second.PromptTokens, second.CachedTokens, second.CompletionTokens, second.CostUSD}} {
		want := (float64(r.prompt-r.cached)*azureIn + float64(r.cached)*azureCacheRead + float64(r.completion)*azureOut) / 1e6
		assert.InDelta(t, want, r.cost, 1e-12, "priced at the catalog's Azure prices")
	}
	assert.True(t, second.CacheDiscountApplied)
	assert.Less(t, second.CostUSD, first.CostUSD)

	// A stream.
	resp, body := h.post(secretBatch, `{"model":"openai/gpt-4o","stream":true,"messages":[{"role":"user","content":"Hello"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "data: [DONE]")
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	assert.Equal(t, "azure", row.ServedProvider)
	assert.Positive(t, row.CompletionTokens, "usage read from the stream the connector asked it of")

	// The Responses API, natively, stream and not; Azure stores a
	// response, which GET passes to it for the key that stored it.
	for _, stream := range []string{"false", "true"} {
		resp, body = h.do(http.MethodPost, "/v1/responses", secretBatch, `{"model":"openai/gpt-4o","stream":`+stream+`,"input":"Hello"}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		if stream == "false" {
			var stored struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(body, &stored))
			got, again := h.do(http.MethodGet, "/v1/responses/"+stored.ID, secretBatch, "")
			require.Equal(t, http.StatusOK, got.StatusCode, "%s", again)
			assert.Contains(t, string(again), stored.ID)
			assert.Equal(t, "azure", got.Header.Get("X-Sluice-Upstream"))
		}
		row = h.row(resp.Header.Get(gateway.HeaderRequestID))
		assert.Equal(t, "responses", row.API)
		assert.Equal(t, "azure", row.ServedProvider)
		assert.Equal(t, "openai/gpt-4o", row.ServedModel, "the deployment Azure reports names the model")
		assert.Positive(t, row.PromptTokens)
	}
	// Embeddings.
	resp, body = h.do(http.MethodPost, "/v1/embeddings", secretBatch, `{"model":"openai/text-embedding-3-small","input":"Hello"}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	assert.Equal(t, "embeddings", row.API)
	assert.Equal(t, "azure", row.ServedProvider)
	// A Messages request, translated to chat.
	resp, body = h.do(http.MethodPost, "/v1/messages", secretBatch, `{"model":"openai/gpt-4o","max_tokens":50,"messages":[{"role":"user","content":"Hello"}]}`,
		"Content-Type", "application/json", "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"type":"message"`)
	sent = h.sent.take()
	assert.True(t, strings.HasSuffix(sent[len(sent)-1].URL, "/azure/openai/v1/chat/completions"))

	// Azure's content filter refuses for hate: the target that takes it
	// over answers, and the row says why.
	resp, body = h.post(secretChat, chatBody("az-guarded", ""), "X-Sim-Fault", "error=azure/content_filter;provider=azure")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	assert.Equal(t, "refusal:hate", row.FallbackReason)
	assert.Equal(t, 2, row.Attempts)
	assert.Equal(t, "anthropic", row.ServedProvider)
	// A completion Azure's filter stopped is an answer: relayed, not
	// taken over.
	resp, body = h.post(secretChat, chatBody("az-guarded", ""), "X-Sim-Fault", "filtered;provider=azure")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"finish_reason":"content_filter"`)
	row = h.row(resp.Header.Get(gateway.HeaderRequestID))
	assert.Equal(t, 1, row.Attempts)
	assert.Empty(t, row.FallbackReason)
	assert.Equal(t, "azure", row.ServedProvider)
}

// TestAzureEntraToken: without api_key_env the upstream takes Microsoft
// Entra ID tokens from the loopback tenant through azidentity: a token
// endpoint that fails is a 502 upstream_credentials_unavailable naming no
// secret; a token is then fetched once and reused, a token inside its
// refresh margin is refreshed by the next request, and a fresh one is
// reused again — counted at the token endpoint, no sleeps.
func TestAzureEntraToken(t *testing.T) {
	entra := simulator.StartEntra(simulator.EntraConfig{TenantID: "tenant-1", ClientID: "client-1", ClientSecret: entraSecret,
		// The first token lives a minute, inside the five-minute refresh
		// margin: the next request refreshes it. The second lives an hour.
		ExpiresIn: []time.Duration{time.Minute, time.Hour}})
	t.Cleanup(entra.Close)
	t.Setenv("AZURE_TENANT_ID", "tenant-1")
	t.Setenv("AZURE_CLIENT_ID", "client-1")
	t.Setenv("AZURE_CLIENT_SECRET", entraSecret)
	t.Setenv("AZURE_AUTHORITY_HOST", entra.Authority())
	h := azureHarness(t, "ca_file = \"entra-ca.pem\"", func(c *simulator.Config) { c.Entra = entra }, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "entra-ca.pem"), entra.CAPEM(), 0o644))
	})
	chat := chatBody("openai/gpt-4o", "")

	entra.SetFailing(true)
	resp, body := h.post(secretBatch, chat)
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"code":"upstream_credentials_unavailable"`)
	assert.Contains(t, string(body), "HTTP 500")
	assert.Zero(t, entra.Tokens())
	assert.Empty(t, h.sent.take(), "nothing is sent without a token")
	entra.SetFailing(false)

	var auths []string
	for i, wantTokens := range []int{1, 2, 2, 2} {
		resp, body = h.post(secretBatch, chat)
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, body)
		assert.Equal(t, wantTokens, entra.Tokens(), "tokens issued after request %d", i)
		sent := h.sent.take()
		require.Len(t, sent, 1)
		require.True(t, strings.HasPrefix(sent[0].Auth, "Bearer "), "request %d", i)
		auths = append(auths, sent[0].Auth)
		row := h.row(resp.Header.Get(gateway.HeaderRequestID))
		assert.Equal(t, "azure", row.ServedProvider)
	}
	assert.NotEqual(t, auths[0], auths[1], "the token inside its margin was refreshed")
	assert.Equal(t, auths[1], auths[2])
	assert.Equal(t, auths[1], auths[3])
	for _, tok := range auths {
		assert.NotContains(t, h.logs.String(), strings.TrimPrefix(tok, "Bearer "), "no token in the log")
	}
	assert.NotContains(t, h.logs.String(), entraSecret)
	assert.NotContains(t, string(body), entraSecret)
}
