package connectors

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
)

var updateVertex = flag.Bool("update-vertex", false, "rewrite the vertex connector's golden files (testdata/connectors/vertex)")

// vertexCorpus holds one directory per case: case.json (the API a request
// came in on, its anthropic-beta values and its body) and native.json (the
// request sent: path, headers, body, what was left out) or error.txt; or
// recorded.txt naming a recorded Vertex AI answer in testdata/recorded/vertex,
// read back into answer.json (the chat answer) or chunks.jsonl (a stream's
// chat chunks) and relayed.sse (the Messages stream relayed as it came),
// with result.json.
const vertexCorpus = "../testdata/connectors/vertex"

// vertexTestConnector is the connector of project "proj" in us-east5,
// its token a fixed one.
func vertexTestConnector() *vertex {
	v := &vertex{anth: &anthropic{now: anthTestConnector().now, provider: "google-vertex"}, name: "gcp",
		models: "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/",
		tokens: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test"})}
	v.gemini = newVertexGemini(v.models, v.Capabilities())
	v.gemini.now = anthTestConnector().now
	return v
}

// testConnector is the connector of a kind as the tests build it: [New]'s,
// for vertex [vertexTestConnector], for bedrock one on a test region
// with a bearer key.
func testConnector(t testing.TB, kind string) Connector {
	t.Helper()
	switch kind {
	case "vertex":
		return vertexTestConnector()
	case "bedrock":
		c, err := NewFor(&profiles.Upstream{Connector: kind, Region: "us-east-1", APIKeyEnv: "SLUICE_TEST_KEY"}, "")
		require.NoError(t, err)
		return c
	}
	c, err := New(kind)
	require.NoError(t, err)
	return c
}

// vertexCall is the check's outcome for Claude 3.7 Sonnet on Vertex AI.
func vertexCall(api API) *Call {
	call := &Call{Plan: &compiler.Plan{DecidedModel: "anthropic/claude-3.7-sonnet"},
		Outcome: &compiler.Outcome{NativeModel: "claude-3-7-sonnet@20250219", Degraded: []string{}}}
	if api != APIChat {
		call.Inbound = &Inbound{API: api, Model: "claude-3-7-sonnet-20250219"}
	}
	return call
}

func TestVertexTranslateCorpus(t *testing.T) {
	c := vertexTestConnector()
	for _, dir := range caseDirs(t, vertexCorpus, "case.json") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var tc struct {
				API             string          `json:"api"`
				Beta            []string        `json:"beta"`
				Body            json.RawMessage `json:"body"`
				RecordedRequest string          `json:"recorded_request"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &tc))
			body, err := ParseBody(tc.Body)
			require.NoError(t, err)
			api := map[string]API{"chat": APIChat, "messages": APIMessages, "count_tokens": APICountTokens}[tc.API]
			call := vertexCall(api)
			var in *Inbound
			if call.Inbound != nil {
				in = &Inbound{API: api, Model: call.Inbound.Model, Beta: tc.Beta, Request: body}
			}
			// The check's part: the flags Vertex AI takes are sent, the others
			// degrade the request (or refuse it).
			kept, lost, refused := compiler.CheckBetas(compiler.SplitBetas(tc.Beta), c.Capabilities().Betas, "vertex")
			require.Nil(t, refused)
			call.Outcome.Betas = kept
			native, err := TranslateFor(c, in, body, call.Plan, call.Outcome)
			if err == nil {
				native.Degraded = append(native.Degraded, lost...)
			}
			if err != nil {
				golden(t, *updateVertex, dir, "error.txt", []byte(err.Error()+"\n"))
				golden(t, *updateVertex, dir, "native.json", nil)
				return
			}
			assert.NotContains(t, string(native.Body), `"model"`+":\"claude-3-7-sonnet-20250219\"", "the caller's model is never sent")
			if api != APICountTokens {
				assert.NotContains(t, string(native.Body), `"model":`, "the path names the model, the body does not")
			}
			if tc.RecordedRequest != "" {
				rec, err := os.ReadFile(filepath.Join("../testdata/recorded/vertex", tc.RecordedRequest))
				require.NoError(t, err)
				assert.JSONEq(t, string(rec), string(native.Body), "the body the live upstream was sent")
			}
			out, err := json.Marshal(struct {
				Path     string          `json:"path"`
				Header   http.Header     `json:"header,omitempty"`
				Body     json.RawMessage `json:"body"`
				Degraded []string        `json:"degraded,omitempty"`
			}{native.Path, native.Header, native.Body, native.Degraded})
			require.NoError(t, err)
			golden(t, *updateVertex, dir, "native.json", indentJSON(t, out))
			golden(t, *updateVertex, dir, "error.txt", nil)
		})
	}
}

func TestVertexAnswerCorpus(t *testing.T) {
	c := vertexTestConnector()
	for _, dir := range caseDirs(t, vertexCorpus, "recorded.txt") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			name, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
			require.NoError(t, err)
			raw, err := os.ReadFile(filepath.Join("../testdata/recorded/vertex", strings.TrimSpace(string(name))))
			require.NoError(t, err)
			if !strings.HasSuffix(strings.TrimSpace(string(name)), ".sse") {
				out, res, err := Respond(c, vertexCall(APIChat), raw)
				require.NoError(t, err)
				assert.Equal(t, "google-vertex", res.ServedProvider)
				golden(t, *updateVertex, dir, "answer.json", indentJSON(t, out))
				golden(t, *updateVertex, dir, "result.json", resultJSON(t, res))
				// The Messages answer passes through as it came, read back alike.
				back, mres, err := Respond(c, vertexCall(APIMessages), raw)
				require.NoError(t, err)
				assert.Equal(t, raw, back)
				assert.Equal(t, res.Usage, mres.Usage)
				assert.Equal(t, res.ServedModel, mres.ServedModel)
				return
			}
			// Vertex AI pads a stream's events with spaces before their last brace: the
			// reader takes each event whole all the same.
			require.Regexp(t, `\} +\}\n`, string(raw), "the recording keeps the spaces Vertex AI pads its events with")
			s := OpenStream(c, vertexCall(APIChat))
			chunks, done, err := runStream(t, s, raw)
			require.NoError(t, err)
			require.True(t, done, "the stream ends at message_stop")
			var lines bytes.Buffer
			for _, ch := range chunks {
				lines.Write(ch)
				lines.WriteByte('\n')
			}
			res := s.Result()
			assert.Equal(t, "google-vertex", res.ServedProvider)
			assert.Positive(t, res.Usage.CompletionTokens)
			golden(t, *updateVertex, dir, "chunks.jsonl", lines.Bytes())
			golden(t, *updateVertex, dir, "result.json", resultJSON(t, res))

			relay := OpenStream(c, vertexCall(APIMessages))
			events, done, err := runStream(t, relay, raw)
			require.NoError(t, err)
			require.True(t, done)
			assert.Equal(t, res.Usage, relay.Result().Usage, "relayed or translated, the same usage")
			assert.Equal(t, res.ServedModel, relay.Result().ServedModel)
			golden(t, *updateVertex, dir, "relayed.sse", bytes.Join(events, []byte("\n\n")))
		})
	}
}

// Vertex AI is a direct provider of its own name, takes no key, and its
// token goes on the request once it is final.
func TestVertexConnector(t *testing.T) {
	c := vertexTestConnector()
	assert.Equal(t, "vertex", c.Kind())
	caps := c.Capabilities()
	assert.Equal(t, "google-vertex", caps.DirectProvider)
	for flag, source := range caps.Betas {
		assert.NotEmpty(t, source, "beta %s cites its source", flag)
	}
	assert.False(t, SpeaksNatively(c, APIChat))
	assert.True(t, SpeaksNatively(c, APIMessages))
	assert.True(t, SpeaksNatively(c, APICountTokens))
	assert.Equal(t, "via chat, as messages", Asked(c, APIResponses))
	assert.False(t, Serves(c, APIEmbeddings))

	h := http.Header{}
	c.Authorize(h, "sk-caller")
	assert.Empty(t, h, "no key, no version header")
	req := httptest.NewRequest(http.MethodPost, "http://x/", nil)
	require.NoError(t, c.Sign(req, nil))
	assert.Equal(t, "Bearer ya29.test", req.Header.Get("Authorization"))
}

// The body rewrite keeps every member but the model, whatever the
// translation wrote first.
func TestVertexBody(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"claude-x@1","max_tokens":5,"messages":[]}`: `{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[]}`,
		`{"max_tokens":5,"model":"m","messages":[]}`:          `{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[]}`,
		`{"model":"m"}`: `{"anthropic_version":"vertex-2023-10-16"}`,
	} {
		got := vertexBody([]byte(in))
		assert.True(t, json.Valid(got), "%s -> %s", in, got)
		assert.JSONEq(t, want, string(got), in)
	}
}

// writeServiceAccount writes a service-account key file whose token_uri is
// tokenURL, and returns its path and the key.
func writeServiceAccount(t *testing.T, tokenURL string) (string, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sluice@proj.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURL,
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path, key
}

// The connector is built from the upstream's project, region and
// Application Default Credentials; what it lacks is said, and a key file
// that cannot be loaded is an error of the upstream's configuration.
func TestNewForVertex(t *testing.T) {
	var hits atomic.Int64
	life := atomic.Int64{}
	life.Store(3600)
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if life.Load() < 0 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"secret-detail-from-endpoint"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "ya29.t" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": life.Load()})
	}))
	defer tokens.Close()
	path, _ := writeServiceAccount(t, tokens.URL)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)

	for _, tc := range []struct {
		u    profiles.Upstream
		want string
	}{
		{profiles.Upstream{Name: "gcp", Connector: "vertex", Region: "us-east5"}, "needs project"},
		{profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj"}, "needs region"},
		{profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj", Region: "us/east5"}, "not a Vertex AI location"},
		{profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "p/../x", Region: "us-east5"}, "not a Google Cloud project id"},
	} {
		_, err := NewFor(&tc.u, ".")
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}

	c, err := NewFor(&profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj", Region: "global"}, ".")
	require.NoError(t, err)
	v := c.(*vertex)
	assert.Equal(t, "/v1/projects/proj/locations/global/publishers/anthropic/models/m:rawPredict", v.path("m", false))
	sign := func() (string, error) {
		req := httptest.NewRequest(http.MethodPost, "http://x/", nil)
		err := v.Sign(req, nil)
		return req.Header.Get("Authorization"), err
	}
	for range 3 {
		got, err := sign()
		require.NoError(t, err)
		assert.Equal(t, "Bearer ya29.t1", got)
	}
	assert.EqualValues(t, 1, hits.Load(), "a live token is reused")

	// A token about to expire is refreshed before it is used: the library
	// takes one within 10s of its expiry as expired.
	c, err = NewFor(&profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj", Region: "us-east5"}, ".")
	require.NoError(t, err)
	v = c.(*vertex)
	life.Store(5)
	hits.Store(0)
	for i := range 3 {
		got, err := sign()
		require.NoError(t, err)
		assert.Equal(t, "Bearer ya29.t"+string(rune('1'+i)), got)
	}
	assert.EqualValues(t, 3, hits.Load(), "each token fetched was already due for refresh")

	// A token endpoint that refuses: a credential error, with nothing of
	// its answer but the status and code.
	life.Store(-1)
	_, err = sign()
	var ce *CredentialError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "gcp", ce.Upstream)
	assert.Contains(t, err.Error(), "HTTP 400, invalid_grant")
	assert.NotContains(t, err.Error(), "secret-detail")

	// A key file that cannot be loaded.
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"service_account","private_key":"not a key"`), 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", bad)
	_, err = NewFor(&profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj", Region: "us-east5"}, ".")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "application default credentials could not be loaded")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	_, err = NewFor(&profiles.Upstream{Name: "gcp", Connector: "vertex", Project: "proj", Region: "us-east5"}, ".")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "application default credentials could not be loaded")
}

// BenchmarkVertexSign is the per-request price of Vertex AI's credentials:
// the cached token (a live one, as the library keeps it) set as the bearer.
func BenchmarkVertexSign(b *testing.B) {
	v := vertexTestConnector()
	v.tokens = oauth2.ReuseTokenSource(&oauth2.Token{AccessToken: "ya29.bench", Expiry: time.Now().Add(time.Hour)}, v.tokens)
	req := httptest.NewRequest(http.MethodPost, "http://x/", nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Sign(req, nil); err != nil {
			b.Fatal(err)
		}
	}
}
