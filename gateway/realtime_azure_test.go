package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// Azure OpenAI's Realtime API through sluice: the azure upstream of
// azure_test.go's harness, the simulator replaying the sessions recorded
// against Azure (testdata/recorded/realtime/azure-*.jsonl).

// azureRealtimePrices reads the demo catalog's Azure endpoint of
// openai/gpt-realtime: text in, text out, cached text in. Those prices are
// gpt-realtime's published list prices per million tokens (text $4, cached
// $0.40, out $16; audio $32, cached $0.40, out $64; image $5, cached
// $0.50: developers.openai.com/api/docs/models/gpt-realtime), which Azure's
// Global Standard deployments list alike; Azure's own pricing page
// (azure.microsoft.com/pricing/details/azure-openai) renders its figures
// per region when loaded, so no copy of it gave a number to cite.
func azureRealtimePrices(t *testing.T, dir string) (in, out, cacheRead float64) {
	b, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	require.NoError(t, err)
	var cat struct {
		Models []struct {
			Slug      string            `json:"slug"`
			Native    map[string]string `json:"native"`
			Endpoints []struct {
				Provider  string  `json:"provider"`
				In        float64 `json:"price_in"`
				Out       float64 `json:"price_out"`
				CacheRead float64 `json:"price_cache_read"`
			} `json:"endpoints"`
		} `json:"models"`
	}
	require.NoError(t, json.Unmarshal(b, &cat))
	for _, m := range cat.Models {
		if m.Slug != "openai/gpt-realtime" {
			continue
		}
		require.Equal(t, "gpt-realtime", m.Native["azure"], "the deployment the session names")
		for _, e := range m.Endpoints {
			if e.Provider == "azure" {
				return e.In, e.Out, e.CacheRead
			}
		}
	}
	t.Fatal("the demo catalog serves openai/gpt-realtime on azure")
	return
}

// TestRealtimeAzure: a session of k-batch (sent to the azure upstream)
// reaches Azure's /openai/v1/realtime with the api-key and the deployment
// as the model; Azure's recorded answer comes back through sluice, and the
// row says azure served it, metered from Azure's response.done and priced
// at the catalog's Azure prices (cached text at the cache price).
func TestRealtimeAzure(t *testing.T) {
	t.Setenv("AZURE_OPENAI_API_KEY", azureKey)
	var dir string
	h := azureHarness(t, "api_key_env = \"AZURE_OPENAI_API_KEY\"", func(c *simulator.Config) { c.AzureAPIKey = azureKey },
		func(d string) { dir = d })
	in, out, cacheRead := azureRealtimePrices(t, dir)
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
	require.NoError(t, err)
	id := resp.Header.Get(gateway.HeaderRequestID)
	until(ctx, t, c, "session.created")
	for _, f := range recordedSent(t, "azure-history-text-out") {
		require.NoError(t, c.Write(ctx, websocket.MessageText, f))
	}
	var text string
	for _, ev := range until(ctx, t, c, "response.done") {
		if ev["type"] == "response.output_text.done" {
			text = ev["text"].(string)
		}
	}
	require.Equal(t, "Your name is Alice, and your favorite color is teal! Got it locked in. Let’s make this chat as vibrant as that color, shall we?", text)
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))

	sent := h.sent.take()
	require.Len(t, sent, 1)
	require.True(t, strings.HasSuffix(sent[0].URL, "/azure/openai/v1/realtime?model=gpt-realtime"), sent[0].URL)
	require.Empty(t, sent[0].Auth, "the key goes in api-key (which the simulator checks); the caller's bearer is not forwarded")
	r := h.row(id)
	require.Equal(t, "realtime", r.API)
	require.Equal(t, "azure", r.Upstream)
	require.Equal(t, "azure", r.ServedProvider)
	require.Equal(t, "openai/gpt-realtime", r.ServedModel)
	require.Equal(t, 1, r.Responses)
	// The recording's usage: 149 text in, 128 of them cached; 33 text out.
	require.Equal(t, int64(149), r.PromptTokens)
	require.Equal(t, int64(128), r.CachedTokens)
	require.Equal(t, int64(33), r.CompletionTokens)
	require.InDelta(t, ((149-128)*in+128*cacheRead+33*out)/1e6, r.CostUSD, 1e-12)
	require.Equal(t, "catalog", r.CostSource)
	// The simulator upgrades only a handshake with Azure's api-key.
	require.Equal(t, 1, h.sim.CallCount(simulator.CallFilter{API: simulator.APIRealtime, Kind: simulator.KindAzure,
		Status: http.StatusSwitchingProtocols}))
}

// TestRealtimeAzureEntra: an azure upstream on Microsoft Entra ID signs the
// session's handshake with its bearer token. A token that cannot be had
// fails the attempt at connect: on a route the session goes on to the next
// ordinary target (OpenAI's), and alone it is answered 502
// upstream_credentials_unavailable, nothing dialled.
func TestRealtimeAzureEntra(t *testing.T) {
	entra := simulator.StartEntra(simulator.EntraConfig{TenantID: "tenant-1", ClientID: "client-1", ClientSecret: entraSecret})
	t.Cleanup(entra.Close)
	t.Setenv("AZURE_TENANT_ID", "tenant-1")
	t.Setenv("AZURE_CLIENT_ID", "client-1")
	t.Setenv("AZURE_CLIENT_SECRET", entraSecret)
	t.Setenv("AZURE_AUTHORITY_HOST", entra.Authority())
	route := "\n[[routes]]\nmodel = \"voice\"\nstrategy = \"priority\"\n" +
		"[[routes.targets]]\nupstream = \"azure\"\nmodel = \"openai/gpt-realtime\"\n" +
		"[[routes.targets]]\nupstream = \"openai\"\nmodel = \"openai/gpt-realtime\"\n"
	h := azureHarness(t, "ca_file = \"entra-ca.pem\"", func(c *simulator.Config) { c.Entra = entra }, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "entra-ca.pem"), entra.CAPEM(), 0o644))
		p := filepath.Join(dir, "sluice.toml")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, append(b, route...), 0o644))
	})
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()

	entra.SetFailing(true)
	t.Run("failover to openai", func(t *testing.T) {
		c, resp, err := h.dialRealtime(ctx, "model=voice", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
		r := h.row(resp.Header.Get(gateway.HeaderRequestID))
		require.Equal(t, "openai", r.Upstream)
		require.Equal(t, "openai", r.ServedProvider)
		require.Equal(t, 2, r.Attempts)
		require.Equal(t, "connection", r.FallbackReason)
		sent := h.sent.take()
		require.Len(t, sent, 1, "the azure target was never dialled")
		require.True(t, strings.HasSuffix(sent[0].URL, "/openai/v1/realtime?model=gpt-realtime") &&
			!strings.Contains(sent[0].URL, "/azure/"), sent[0].URL)
	})
	t.Run("no other target", func(t *testing.T) {
		_, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.Error(t, err)
		require.NotNil(t, resp)
		require.Equal(t, http.StatusBadGateway, resp.StatusCode)
		var body struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, "upstream_credentials_unavailable", body.Error.Code)
		require.Empty(t, h.sent.take())
	})
	entra.SetFailing(false)
	t.Run("signed", func(t *testing.T) {
		c, resp, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
		require.NoError(t, err)
		until(ctx, t, c, "session.created")
		require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
		sent := h.sent.take()
		require.Len(t, sent, 1)
		require.True(t, strings.HasSuffix(sent[0].URL, "/azure/openai/v1/realtime?model=gpt-realtime"), sent[0].URL)
		require.True(t, strings.HasPrefix(sent[0].Auth, "Bearer "), "the Entra token signs the handshake")
		require.NotEqual(t, "Bearer "+secretBatch, sent[0].Auth, "not the caller's sluice key")
		require.Equal(t, 1, entra.Tokens())
		require.Equal(t, "azure", h.row(resp.Header.Get(gateway.HeaderRequestID)).ServedProvider)
		require.NotContains(t, h.logs.String(), strings.TrimPrefix(sent[0].Auth, "Bearer "), "no token in the log")
	})
}
