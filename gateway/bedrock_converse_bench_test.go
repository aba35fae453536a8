package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sluicegw/sluice/profiles"
)

// secretBenchConverse is the key of the Converse benchmark's Bedrock upstream.
const secretBenchConverse = "sk-sluice-bench-bedrock-converse"

// bedrockCanned answers a Converse path with a recorded Converse answer
// and any other with a recorded Messages answer.
type bedrockCanned struct{ converse, messages []byte }

func (c bedrockCanned) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	body := c.messages
	if strings.HasSuffix(r.URL.Path, "/converse") {
		body = c.converse
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// BenchmarkRequestPathBedrockConverse is BenchmarkRequestPath for one chat
// request, translated onto Anthropic's Messages API on the Anthropic
// upstream and onto Converse for Llama on a Bedrock upstream (a Bedrock
// API key, so that the figure is the translation's and not SigV4's, which
// BenchmarkBedrockSign measures): a Converse request is held to cost no
// more than an Anthropic one.
func BenchmarkRequestPathBedrockConverse(b *testing.B) {
	conv, err := os.ReadFile("../testdata/recorded/bedrock/converse/converse-nonstream-openai-cris.json")
	if err != nil {
		b.Fatal(err)
	}
	msg, err := os.ReadFile("../testdata/recorded/anthropic/nonstream-plain-claude-sonnet-4.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bench-key")
	aws := [2]string{"[[keys]]\nid = \"k-chat\"", "[[upstreams]]\nname = \"aws\"\nconnector = \"bedrock\"\nregion = \"us-east-1\"\napi_key_env = \"AWS_BEARER_TOKEN_BEDROCK\"\n\n" +
		"[[keys]]\nid = \"k-bench-converse\"\nsha256 = \"" + profiles.HashSecret(secretBenchConverse) + "\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"aws\"\n\n[[keys]]\nid = \"k-chat\""}
	h := benchServer(b, nil, bedrockCanned{converse: conv, messages: msg}, claudeKeyEdit(), aws)
	for _, c := range []struct{ name, secret, model string }{
		{"anthropic", secretClaude, "anthropic/claude-sonnet-4.5"},
		{"bedrock-converse", secretBenchConverse, "meta-llama/llama-3.3-70b-instruct"},
	} {
		body := `{"model":"` + c.model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident report."}],"max_tokens":256}`
		b.Run("chat/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+c.secret)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
