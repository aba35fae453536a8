package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicegw/sluice/simulator"
)

// BenchmarkRequestPathAzure is BenchmarkRequestPath for the batch key's
// request on the direct OpenAI upstream and on an Azure OpenAI upstream
// (the same canned answer), by api-key and by Microsoft Entra ID token (one
// token fetched from a loopback tenant before the timer, then reused): an
// Azure request is held to cost no more than an OpenAI one.
func BenchmarkRequestPathAzure(b *testing.B) {
	toAzure := func(auth string) [][2]string {
		return [][2]string{
			{"[[keys]]\nid = \"k-chat\"", "[[upstreams]]\nname = \"azure\"\nconnector = \"azure\"\nbase_url = \"https://bench.openai.azure.com\"\n" + auth + "\n\n[[keys]]\nid = \"k-chat\""},
			{"project = \"batch\"\nupstream = \"openai\"\n", "project = \"batch\"\nupstream = \"azure\"\n"},
		}
	}
	run := func(b *testing.B, edits ...[2]string) {
		h := benchServer(b, nil, cannedTransport{cannedChat}, edits...)
		serveBatch(b, h) // the first request fetches what later ones reuse
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			serveBatch(b, h)
		}
	}
	b.Run("openai", func(b *testing.B) {
		b.Setenv("OPENAI_API_KEY", "bench-key") // a credential on both sides
		run(b)
	})
	b.Run("azure-api-key", func(b *testing.B) {
		b.Setenv("AZURE_BENCH_KEY", "bench-key")
		run(b, toAzure("api_key_env = \"AZURE_BENCH_KEY\"")...)
	})
	b.Run("azure-entra-token", func(b *testing.B) {
		entra := simulator.StartEntra(simulator.EntraConfig{TenantID: "t", ClientID: "c", ClientSecret: "s", ExpiresIn: []time.Duration{time.Hour}})
		b.Cleanup(entra.Close)
		b.Setenv("AZURE_TENANT_ID", "t")
		b.Setenv("AZURE_CLIENT_ID", "c")
		b.Setenv("AZURE_CLIENT_SECRET", "s")
		b.Setenv("AZURE_AUTHORITY_HOST", entra.Authority())
		ca := filepath.Join(b.TempDir(), "entra-ca.pem")
		if err := os.WriteFile(ca, entra.CAPEM(), 0o644); err != nil {
			b.Fatal(err)
		}
		run(b, toAzure("ca_file = \""+ca+"\"")...)
		if n := entra.Tokens(); n != 1 {
			b.Fatalf("%d tokens fetched, want 1", n)
		}
	})
}

// serveBatch serves the benchmark's chat completion for the batch key.
func serveBatch(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(benchBody+"}"))
	req.Header.Set("Authorization", "Bearer "+secretBatch)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatal(rec.Code, rec.Body.String())
	}
}
