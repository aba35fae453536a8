package connectors

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BenchmarkBedrockSign signs one InvokeModel request of a 2 KiB body with
// cached credentials (a session token among them, as the role and instance
// credentials of the default chain carry), the request's headers those the
// gateway sets before signing: the body hashed once, the SDK's signer over
// it.
func BenchmarkBedrockSign(b *testing.B) {
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: "token"}
	sg := &bedrock{upstream: "aws", region: "us-east-1", signer: v4.NewSigner(), now: func() time.Time { return time.Unix(1764676800, 0) },
		creds: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }))}
	body := bytes.Repeat([]byte("x"), 2048)
	req, _ := http.NewRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com"+bedrockPath("us.anthropic.claude-haiku-4-5-20251001-v1:0", false), bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "User-Agent": {"sluice"}}
	b.ReportAllocs()
	for b.Loop() {
		delete(req.Header, "Authorization")
		delete(req.Header, "X-Amz-Date")
		delete(req.Header, "X-Amz-Security-Token")
		if err := sg.Sign(req, body); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20251202/us-east-1/bedrock/aws4_request") {
		b.Fatal(req.Header.Get("Authorization"))
	}
}

// BenchmarkBedrockEventDecode reads a recorded InvokeModelWithResponseStream
// answer (10 frames) through the connector's event-stream reader; the
// figure is per frame.
func BenchmarkBedrockEventDecode(b *testing.B) {
	raw, err := os.ReadFile("../testdata/recorded/bedrock/stream-tooluse-claude-opus-4-6.eventstream")
	if err != nil {
		b.Fatal(err)
	}
	src := bytes.NewReader(raw)
	frames := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		src.Reset(raw)
		r := newBedrockEventReader(src)
		for {
			_, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			frames++
		}
		r.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
}
