package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicegw/sluice/profiles"
)

// The keys of the benchmark's Amazon Bedrock upstreams: signed with SigV4,
// and with a Bedrock API key.
const (
	secretBenchBedrock    = "sk-sluice-bench-bedrock"
	secretBenchBedrockKey = "sk-sluice-bench-bedrock-key"
)

// BenchmarkRequestPathBedrock is BenchmarkRequestPath on the Messages API,
// the same request and the same recorded InvokeModel answer (a Messages
// answer), once on the Anthropic upstream and once on Amazon Bedrock signed
// with SigV4 from the environment's credentials: the Bedrock request's own
// work (its path, the body without the model and with anthropic_version,
// the signature over the body's hash) is measured against Anthropic's; a
// third run, on a Bedrock upstream with an API key (a bearer header, no
// signature), tells sluice's own part from the SDK signer's.
func BenchmarkRequestPathBedrock(b *testing.B) {
	dir := b.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_ACCESS_KEY_ID": bedrockKeyID, "AWS_SECRET_ACCESS_KEY": bedrockSecret, "AWS_SESSION_TOKEN": "",
	} {
		b.Setenv(k, v)
	}
	b.Setenv("SLUICE_BENCH_BEDROCK_KEY", "bedrock-api-key-bench")
	answer, err := os.ReadFile("../testdata/recorded/bedrock/nonstream-plain-claude-haiku-4-5.json")
	if err != nil {
		b.Fatal(err)
	}
	aws := [2]string{"[[keys]]\nid = \"k-chat\"", "[[upstreams]]\nname = \"aws\"\nconnector = \"bedrock\"\nregion = \"us-east-1\"\n\n" +
		"[[keys]]\nid = \"k-bench-bedrock\"\nsha256 = \"" + profiles.HashSecret(secretBenchBedrock) + "\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"aws\"\n\n" +
		"[[upstreams]]\nname = \"awskey\"\nconnector = \"bedrock\"\nregion = \"us-east-1\"\napi_key_env = \"SLUICE_BENCH_BEDROCK_KEY\"\n\n" +
		"[[keys]]\nid = \"k-bench-bedrock-key\"\nsha256 = \"" + profiles.HashSecret(secretBenchBedrockKey) + "\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"awskey\"\n\n[[keys]]\nid = \"k-chat\""}
	signed := &signedTransport{answer: answer}
	h := benchServer(b, nil, signed, claudeKeyEdit(), aws)
	body := `{"model":"claude-haiku-4-5","max_tokens":256,"system":"You are terse.","messages":[{"role":"user","content":"Summarise the incident report."}]}`
	for _, c := range []struct{ name, secret string }{{"anthropic", secretClaude}, {"bedrock", secretBenchBedrock}, {"bedrock-api-key", secretBenchBedrockKey}} {
		b.Run("messages/"+c.name, func(b *testing.B) {
			signed.sigv4 = 0
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
			if c.name == "bedrock" && signed.sigv4 == 0 {
				b.Fatal("no request reached the upstream signed with SigV4")
			}
		})
	}
}

// signedTransport is cannedTransport counting the requests that came
// signed with SigV4.
type signedTransport struct {
	answer []byte
	sigv4  int
}

func (s *signedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+bedrockKeyID+"/") {
		s.sigv4++
	}
	return cannedTransport{s.answer}.RoundTrip(r)
}
