package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// vertexCatalog prices Claude and Gemini on Vertex AI: the catalog's native
// ids at google-vertex, and Google's prices for them (Claude 3.7 Sonnet and
// Claude Sonnet 4.5: $3 in, $15 out, cache reads $0.30, cache writes $3.75
// a million tokens, as on Anthropic's own API; Gemini 2.5 Flash: $0.30 in,
// $2.50 out, cached input $0.03; Gemini 2.0 Flash-Lite $0.075 in, $0.30
// out; Vertex AI's generative AI pricing page). The simulator serves no
// Gemini 2.0 Flash-Lite: a request for it is Vertex AI's 404.
const vertexCatalog = `{"models": [
 {"slug": "anthropic/claude-3.7-sonnet", "context_window": 200000,
  "native": {"google-vertex": "claude-3-7-sonnet@20250219"},
  "endpoints": [{"provider": "google-vertex", "price_in": 3, "price_out": 15, "price_cache_read": 0.3, "price_cache_write": 3.75}]},
 {"slug": "anthropic/claude-sonnet-4.5", "context_window": 200000,
  "native": {"google-vertex": "claude-sonnet-4-5@20250929"},
  "endpoints": [{"provider": "google-vertex", "price_in": 3, "price_out": 15, "price_cache_read": 0.3, "price_cache_write": 3.75}]},
 {"slug": "google/gemini-2.5-flash", "context_window": 1048576,
  "native": {"google-vertex": "gemini-2.5-flash"},
  "endpoints": [{"provider": "google-vertex", "price_in": 0.3, "price_out": 2.5, "price_cache_read": 0.03}]},
 {"slug": "google/gemini-2.0-flash-lite", "context_window": 1048576,
  "native": {"google-vertex": "gemini-2.0-flash-lite-001"},
  "endpoints": [{"provider": "google-vertex", "price_in": 0.075, "price_out": 0.3}]}
]}`

// vertexGateway is a gateway whose one upstream is Vertex AI on the
// simulator, its credentials a service-account key file whose token_uri is
// the simulator's token endpoint, and the gateway's log.
type vertexGateway struct {
	srv  *gateway.Server
	ts   *httptest.Server
	sim  *simulator.Vertex
	logs *syncBuffer
}

const vertexSecret = "sk-vertex-caller"

// writeVertexKey writes a service-account key file of key naming tokenURL
// and returns its path.
func writeVertexKey(t testing.TB, key *rsa.PrivateKey, tokenURL string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "sluice-test", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sluice@sluice-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURL,
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// vertexConfig writes the gateway's configuration for a Vertex AI upstream
// at base.
func vertexConfig(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(vertexSecret))
	toml := `[store]
flush_interval = "20ms"

[[upstreams]]
name = "gcp"
connector = "vertex"
project = "sluice-test"
region = "us-east5"
base_url = "` + base + `"

[[keys]]
id = "k-vertex"
sha256 = "` + hex.EncodeToString(sum[:]) + `"
org = "acme"
team = "cloud"
project = "vertex"
upstream = "gcp"
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(toml), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(vertexCatalog), 0o644))
	return dir
}

// newVertexGateway starts the simulator's Vertex AI (tokens living life)
// and a gateway in front of it.
func newVertexGateway(t *testing.T, life time.Duration) *vertexGateway {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	sim := simulator.NewVertex(&key.PublicKey, life)
	base, err := sim.Start()
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	path := writeVertexKey(t, key, sim.TokenURL())
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	logs := &syncBuffer{}
	srv, err := gateway.New(gateway.Options{ConfigDir: vertexConfig(t, base), Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return &vertexGateway{srv: srv, ts: ts, sim: sim, logs: logs}
}

// send posts a body to path as an Anthropic client does (x-api-key) or, for
// chat completions, with a bearer key.
func (g *vertexGateway) send(t *testing.T, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if strings.HasPrefix(path, "/v1/messages") {
		req.Header.Set("x-api-key", vertexSecret)
	} else {
		req.Header.Set("Authorization", "Bearer "+vertexSecret)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, b
}

func vertexRecording(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(recordedDir, "vertex", name))
	require.NoError(t, err)
	return b
}

const vertexMessages = `{"model":"anthropic/claude-3.7-sonnet","max_tokens":4000,"system":"You are a helpful assistant","messages":[{"role":"user","content":"Say hi in Portuguese"}]`

// Claude on Vertex AI end to end on loopback: the Messages API natively
// (answer and stream as Vertex AI sent them), chat completions translated,
// the token count counted by Vertex AI, each row served by google-vertex
// and priced at the catalog's Vertex AI prices; one token fetched for all.
func TestVertexEndToEnd(t *testing.T) {
	g := newVertexGateway(t, time.Hour)

	resp, body := g.send(t, "/v1/messages", vertexMessages+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, string(vertexRecording(t, "nonstream-plain-claude-3-7-sonnet.json")), string(body), "passed through as Vertex AI sent it")
	row := waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "google-vertex", row.ServedProvider)
	require.Equal(t, "anthropic/claude-3.7-sonnet", row.ServedModel)
	require.Equal(t, "gcp", row.Upstream)
	require.EqualValues(t, 16, row.PromptTokens)
	require.EqualValues(t, 16, row.CompletionTokens)
	require.Equal(t, "catalog", row.CostSource)
	require.InDelta(t, (16*3+16*15)/1e6, row.CostUSD, 1e-12)

	resp, body = g.send(t, "/v1/messages", vertexMessages+`,"stream":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, sseEvents(t, vertexRecording(t, "stream-plain-claude-3-7-sonnet.sse")), sseEvents(t, body), "relayed event by event")
	row = waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "google-vertex", row.ServedProvider)
	require.EqualValues(t, 16, row.PromptTokens)
	require.EqualValues(t, 16, row.CompletionTokens)
	require.InDelta(t, (16*3+16*15)/1e6, row.CostUSD, 1e-12)

	// Claude Code's beta flags: those Vertex AI takes go along, the others
	// are left out (Vertex AI would refuse the request) and recorded.
	resp, body = g.send(t, "/v1/messages", vertexMessages+`}`, "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,prompt-caching-scope-2026-01-05")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	row = waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, []string{"beta:claude-code-20250219", "beta:prompt-caching-scope-2026-01-05"}, row.RoutingDegraded)

	// Chat completions, translated into the Messages API and back.
	resp, body = g.send(t, "/v1/chat/completions", `{"model":"anthropic/claude-3.7-sonnet","messages":[{"role":"user","content":"Say hi in Portuguese"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var chat struct {
		Object  string
		Choices []struct{ Message struct{ Content string } }
	}
	require.NoError(t, json.Unmarshal(body, &chat))
	require.Equal(t, "chat.completion", chat.Object)
	require.Contains(t, chat.Choices[0].Message.Content, "Olá")
	row = waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "chat", row.API)
	require.Equal(t, "google-vertex", row.ServedProvider)

	// A tool round trip over chat completions: the tool call, then the
	// answer to its result.
	tools := `"tools":[{"type":"function","function":{"name":"weather","description":"Get weather information for a location","parameters":{"type":"object","properties":{"location":{"type":"string","description":"the city"}},"required":["location"]}}}]`
	resp, body = g.send(t, "/v1/chat/completions", `{"model":"anthropic/claude-3.7-sonnet","messages":[{"role":"user","content":"What's the weather in Florence,Italy?"}],`+tools+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"finish_reason":"tool_calls"`)
	require.Contains(t, string(body), `toolu_vrtx_01PKrjavVyDh3fufyVCkCJ49`)
	resp, body = g.send(t, "/v1/chat/completions", `{"model":"anthropic/claude-3.7-sonnet","messages":[{"role":"user","content":"What's the weather in Florence,Italy?"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_vrtx_01PKrjavVyDh3fufyVCkCJ49","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Florence,Italy\"}"}}]},`+
		`{"role":"tool","tool_call_id":"toolu_vrtx_01PKrjavVyDh3fufyVCkCJ49","content":"40 C"}],`+tools+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "40°C")

	// Cache reads and writes, priced at the catalog's cache prices.
	resp, body = g.send(t, "/v1/messages", `{"model":"anthropic/claude-sonnet-4.5","max_tokens":1024,"system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"What is Python?"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	row = waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "google-vertex", row.ServedProvider)
	require.Equal(t, "anthropic/claude-sonnet-4.5", row.ServedModel)
	require.EqualValues(t, 3+418+1111, row.PromptTokens)
	require.EqualValues(t, 1111, row.CachedTokens)
	require.InDelta(t, (3*3+1111*0.3+418*3.75+33*15)/1e6, row.CostUSD, 1e-12, "cache reads and writes at their own prices")

	// The token count, counted by Vertex AI's count-tokens endpoint.
	resp, body = g.send(t, "/v1/messages/count_tokens", `{"model":"anthropic/claude-3.7-sonnet","messages":[{"role":"user","content":"Say hi in Portuguese"}]}`,
		"anthropic-beta", "web-search-2025-03-05")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Empty(t, resp.Header.Get(gateway.HeaderCountEstimated), "counted upstream, not estimated")
	require.JSONEq(t, `{"input_tokens":5}`, string(body))

	require.Equal(t, 1, g.sim.TokenHits(), "one token served every request")
	require.Equal(t, 8, g.sim.ModelHits())
}

// A token that is due for refresh is refreshed before the request that
// needs it: with tokens that live less than the client's margin, every
// request fetches a fresh one from the token endpoint. A token endpoint
// that refuses is a 502 upstream_credentials_unavailable that names no
// secret, in the answer or the log.
func TestVertexTokenRefresh(t *testing.T) {
	g := newVertexGateway(t, 5*time.Second)
	for i := 1; i <= 3; i++ {
		resp, body := g.send(t, "/v1/messages", vertexMessages+`}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.Equal(t, i, g.sim.TokenHits(), "request %d fetched its own token", i)
	}

	g.sim.FailTokens(true)
	resp, body := g.send(t, "/v1/messages", vertexMessages+`}`)
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, string(body))
	require.Contains(t, string(body), "upstream_credentials_unavailable")
	require.Contains(t, string(body), "invalid_grant")
	require.Equal(t, 3, g.sim.ModelHits(), "nothing reached the model without a token")
	row := waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, http.StatusBadGateway, row.Status)
	for _, secret := range []string{"ya29.", "PRIVATE KEY", "account disabled", "assertion"} {
		require.NotContains(t, string(body), secret)
		require.NotContains(t, g.logs.String(), secret)
	}
}

// A key file that cannot be loaded is the upstream's configuration's
// fault, reported at its [[upstreams]] entry.
func TestVertexBadKeyFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "key.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n","token_uri":"http://127.0.0.1:1/token"}`), 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", bad)
	_, err := gateway.New(gateway.Options{ConfigDir: vertexConfig(t, "http://127.0.0.1:1"), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.Error(t, err)
	require.Contains(t, err.Error(), "invalid_upstream")
	require.Contains(t, err.Error(), "/upstreams/0")
	require.Contains(t, err.Error(), "application default credentials could not be loaded")
	require.False(t, bytes.Contains([]byte(err.Error()), []byte("nope")), "the key's content is not echoed")
}
