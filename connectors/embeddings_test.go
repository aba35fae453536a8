package connectors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
)

// embCall is the call an embeddings answer is read under.
func embCall() *Call {
	return &Call{Plan: &compiler.Plan{DecidedModel: "openai/text-embedding-3-small"},
		Outcome: &compiler.Outcome{NativeModel: "text-embedding-3-small", Degraded: []string{}},
		Inbound: &Inbound{API: APIEmbeddings}}
}

// Each upstream's recorded or documented embeddings answer is read back —
// model, input tokens, billed cost and provider where it reports them — and
// reaches the caller without the upstream's routing report.
func TestEmbeddingsRecordedAnswers(t *testing.T) {
	tests := []struct {
		file, kind, model, provider string
		prompt                      int64
		cost                        float64
		costReported                bool
	}{
		{"openai-base64-one-input-text-embedding-3-small.json", "openai", "text-embedding-3-small", "openai", 4, 0, false},
		{"openai-base64-two-inputs-text-embedding-3-small.json", "openai", "text-embedding-3-small", "openai", 2, 0, false},
		{"openrouter-docs-example-float.json", "openrouter", "openai/text-embedding-3-small", "", 8, 0, false},
		{"vercel-docs-example-float.json", "vercel", "openai/text-embedding-3-small", "", 6, 1.2e-7, true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(anthRecordedDir, "embeddings", tc.file))
			require.NoError(t, err)
			conn, err := New(tc.kind)
			require.NoError(t, err)
			body, res, err := Respond(conn, embCall(), raw)
			require.NoError(t, err)
			assert.Equal(t, tc.model, res.ServedModel)
			assert.Equal(t, tc.provider, res.ServedProvider)
			assert.Equal(t, tc.prompt, res.Usage.PromptTokens)
			assert.Zero(t, res.Usage.CompletionTokens)
			assert.Equal(t, tc.costReported, res.CostReported)
			assert.InDelta(t, tc.cost, res.Cost, 1e-15)
			assert.NotContains(t, string(body), "providerMetadata")
			var v struct {
				Object string            `json:"object"`
				Data   []json.RawMessage `json:"data"`
			}
			require.NoError(t, json.Unmarshal(body, &v))
			assert.Equal(t, "list", v.Object)
			assert.NotEmpty(t, v.Data)
		})
	}
	// An answer without data is no embeddings answer.
	conn, _ := New("openai")
	_, _, err := Respond(conn, embCall(), []byte(`{"object":"list","model":"m"}`))
	require.Error(t, err)
}

// The request is the caller's with the model and the routing knobs in the
// upstream's names; no chain is sent (neither embeddings endpoint documents
// one), and Anthropic has no embeddings endpoint.
func TestEmbeddingsTranslate(t *testing.T) {
	body := Body{"model": json.RawMessage(`"text-embedding-3-small"`), "input": json.RawMessage(`["a","b"]`),
		"dimensions": json.RawMessage(`256`), "encoding_format": json.RawMessage(`"base64"`), "user": json.RawMessage(`"u"`)}
	out := &compiler.Outcome{NativeModel: "openai/text-embedding-3-small", Chain: []string{"x/y"},
		Providers: compiler.Providers{RankBy: "cost", Preferred: []string{"openai"}, Allowed: []string{"openai", "azure"}, Denied: []string{"deepinfra"}}}
	in := &Inbound{API: APIEmbeddings}
	for _, tc := range []struct {
		kind, want string
	}{
		{"openai", `{"dimensions":256,"encoding_format":"base64","input":["a","b"],"model":"openai/text-embedding-3-small","user":"u"}`},
		{"openrouter", `{"dimensions":256,"encoding_format":"base64","input":["a","b"],"model":"openai/text-embedding-3-small","provider":{"order":["openai"],"only":["openai","azure"],"ignore":["deepinfra"],"sort":"price"},"user":"u"}`},
		{"vercel", `{"dimensions":256,"encoding_format":"base64","input":["a","b"],"model":"openai/text-embedding-3-small","providerOptions":{"gateway":{"order":["openai"],"only":["openai","azure"],"sort":"cost"}},"user":"u"}`},
	} {
		conn, _ := New(tc.kind)
		require.True(t, Serves(conn, APIEmbeddings))
		assert.False(t, CapabilitiesFor(conn, APIEmbeddings).Chain, tc.kind)
		native, err := TranslateFor(conn, in, body, &compiler.Plan{}, out)
		require.NoError(t, err)
		assert.Equal(t, "/embeddings", native.Path)
		assert.Equal(t, tc.want, string(native.Body), tc.kind)
	}
	conn, _ := New("anthropic")
	assert.False(t, Serves(conn, APIEmbeddings))
}

// FuzzEmbeddingsResponse: whatever an upstream answers, reading it never
// panics, and what is relayed of an answer that reads is JSON.
func FuzzEmbeddingsResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(anthRecordedDir, "embeddings", "*.json"))
	for _, p := range files {
		if strings.HasSuffix(p, ".meta.json") {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, kind := range []string{"openai", "openrouter", "vercel"} {
			conn, _ := New(kind)
			body, _, err := Respond(conn, embCall(), raw)
			if err == nil && !json.Valid(body) {
				t.Fatalf("%s relayed invalid JSON: %q", kind, body)
			}
		}
	})
}
