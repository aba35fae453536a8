package gateway_test

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/simulator"
)

// secretBenchVertex is the key of the benchmark's Vertex AI upstream.
const secretBenchVertex = "sk-sluice-bench-vertex"

// BenchmarkRequestPathVertex is BenchmarkRequestPath on the Messages API,
// the same request and the same recorded Messages answer, once on the
// Anthropic upstream and once on Vertex AI: the Vertex request's own work
// (its path, the body without the model, the bearer token of a cached
// token source) is held to cost no more than Anthropic's.
func BenchmarkRequestPathVertex(b *testing.B) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	tokens := simulator.NewVertex(&key.PublicKey, time.Hour)
	if _, err := tokens.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tokens.Close)
	b.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeVertexKey(b, key, tokens.TokenURL()))
	answer, err := os.ReadFile("../testdata/recorded/anthropic/nonstream-plain-claude-sonnet-4.json")
	if err != nil {
		b.Fatal(err)
	}
	gcp := [2]string{"[[keys]]\nid = \"k-chat\"", "[[upstreams]]\nname = \"gcp\"\nconnector = \"vertex\"\nproject = \"sluice-bench\"\nregion = \"us-east5\"\n\n" +
		"[[keys]]\nid = \"k-bench-vertex\"\nsha256 = \"" + profiles.HashSecret(secretBenchVertex) + "\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"gcp\"\n\n[[keys]]\nid = \"k-chat\""}
	h := benchServer(b, nil, cannedTransport{answer}, claudeKeyEdit(), gcp)
	body := `{"model":"claude-sonnet-4-5","max_tokens":256,"system":"You are terse.","messages":[{"role":"user","content":"Summarise the incident report."}]}`
	for _, c := range []struct{ name, secret string }{{"anthropic", secretClaude}, {"vertex", secretBenchVertex}} {
		b.Run("messages/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body))
				req.Header.Set("x-api-key", c.secret)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
	if tokens.TokenHits() != 1 {
		b.Fatalf("%d token fetches, want 1: the token is cached", tokens.TokenHits())
	}
}
