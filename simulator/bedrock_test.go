package simulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var bedrockTestCreds = aws.Credentials{AccessKeyID: "AKIDSIMULATOR", SecretAccessKey: "simulator-secret-access-key"}

// bedrockTestServer serves the recorded models on Bedrock under the
// inference profile ids the recordings name.
func bedrockTestServer(t *testing.T) *Server {
	t.Helper()
	ep := []Endpoint{{Provider: "amazon-bedrock", PriceIn: 1, PriceOut: 5}}
	s := New(Config{
		Models: []Model{
			{Slug: "anthropic/claude-haiku-4.5", Native: map[string]string{"amazon-bedrock": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}, Endpoints: ep},
			{Slug: "anthropic/claude-opus-4.6", Native: map[string]string{"amazon-bedrock": "us.anthropic.claude-opus-4-6-v1"}, Endpoints: ep},
			{Slug: "anthropic/claude-sonnet-4.5", Native: map[string]string{"amazon-bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, Endpoints: ep},
		},
		AWSCredentials: map[string]string{bedrockTestCreds.AccessKeyID: bedrockTestCreds.SecretAccessKey},
		BedrockAPIKeys: []string{"bedrock-api-key-sim"},
	})
	_, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// bedrockPost sends body to path, signed with creds (or with a bearer key
// when key is set); tamper changes the body after signing.
func bedrockPost(t *testing.T, s *Server, path string, body []byte, creds aws.Credentials, key string, tamper bool) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL(KindBedrock)+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	} else {
		sum := sha256.Sum256(body)
		require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()))
	}
	if tamper {
		alt := bytes.Replace(body, []byte(`"max_tokens":4000`), []byte(`"max_tokens":4001`), 1)
		require.NotEqual(t, body, alt)
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(alt)), int64(len(alt))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// recordedPath is the path of a recording's request, under the base URL.
func recordedPath(t *testing.T, meta string) string {
	t.Helper()
	var m struct {
		Request struct {
			URL string `json:"url"`
		} `json:"request"`
	}
	raw, err := os.ReadFile(meta)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &m))
	_, path, ok := strings.Cut(m.Request.URL, ".amazonaws.com")
	require.True(t, ok, m.Request.URL)
	return path
}

// keys lists an object's member names, sorted.
func keys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Each recorded request, sent signed to the simulator, is answered in the
// recorded shape: the message's members and its usage's; a stream's
// frames with the recorded headers and payload members, and the same
// Messages events, message_stop carrying the invocation metrics.
func TestBedrockShapesMatchRecordings(t *testing.T) {
	s := bedrockTestServer(t)
	metas, err := filepath.Glob("../testdata/recorded/bedrock/*.meta.json")
	require.NoError(t, err)
	require.NotEmpty(t, metas)
	for _, meta := range metas {
		name := strings.TrimSuffix(filepath.Base(meta), ".meta.json")
		if strings.HasPrefix(name, "error-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Dir(meta)
			req, err := os.ReadFile(filepath.Join(dir, name+".request.json"))
			require.NoError(t, err)
			resp := bedrockPost(t, s, recordedPath(t, meta), req, bedrockTestCreds, "", false)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			if strings.HasPrefix(name, "nonstream-") {
				want, err := os.ReadFile(filepath.Join(dir, name+".json"))
				require.NoError(t, err)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.Equal(t, keys(t, want), keys(t, got))
				var w, g struct{ Usage json.RawMessage }
				require.NoError(t, json.Unmarshal(want, &w))
				require.NoError(t, json.Unmarshal(got, &g))
				assert.Equal(t, keys(t, w.Usage), keys(t, g.Usage))
				return
			}
			assert.Equal(t, "application/vnd.amazon.eventstream", resp.Header.Get("Content-Type"))
			want, err := os.ReadFile(filepath.Join(dir, name+".eventstream"))
			require.NoError(t, err)
			wantEvents, err := bedrockFrames(want)
			require.NoError(t, err)
			gotEvents, err := bedrockFrames(got)
			require.NoError(t, err)
			typeOf := func(b []byte) string {
				var e struct{ Type string }
				require.NoError(t, json.Unmarshal(b, &e))
				return e.Type
			}
			first := func(events [][]byte, typ string) []byte {
				for _, e := range events {
					if typeOf(e) == typ {
						return e
					}
				}
				t.Fatalf("no %s event", typ)
				return nil
			}
			assert.Equal(t, "message_start", typeOf(gotEvents[0]))
			assert.Equal(t, "message_stop", typeOf(gotEvents[len(gotEvents)-1]))
			for _, typ := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
				assert.Equal(t, keys(t, first(wantEvents, typ)), keys(t, first(gotEvents, typ)), typ)
			}
			var wm, gm struct {
				M json.RawMessage `json:"amazon-bedrock-invocationMetrics"`
			}
			require.NoError(t, json.Unmarshal(first(wantEvents, "message_stop"), &wm))
			require.NoError(t, json.Unmarshal(first(gotEvents, "message_stop"), &gm))
			assert.Equal(t, keys(t, wm.M), keys(t, gm.M))
		})
	}
}

// Bedrock's authentication: the signature is recomputed, so a wrong
// secret or a body changed after signing is refused 403 as Bedrock
// refuses it; an unknown key id or API key is refused too; a known API
// key is taken.
func TestBedrockAuthentication(t *testing.T) {
	s := bedrockTestServer(t)
	body, err := os.ReadFile("../testdata/recorded/bedrock/nonstream-plain-claude-haiku-4-5.request.json")
	require.NoError(t, err)
	path := recordedPath(t, "../testdata/recorded/bedrock/nonstream-plain-claude-haiku-4-5.meta.json")
	recorded, err := os.ReadFile("../testdata/recorded/bedrock/error-403-invalid-signature.json")
	require.NoError(t, err)

	wrong := bedrockTestCreds
	wrong.SecretAccessKey = "not-the-secret"
	cases := []struct {
		name   string
		creds  aws.Credentials
		key    string
		tamper bool
		status int
		typ    string
	}{
		{"signed", bedrockTestCreds, "", false, 200, ""},
		{"wrong secret", wrong, "", false, 403, "InvalidSignatureException"},
		{"body changed after signing", bedrockTestCreds, "", true, 403, "InvalidSignatureException"},
		{"unknown access key", aws.Credentials{AccessKeyID: "AKIDUNKNOWN", SecretAccessKey: "x"}, "", false, 403, "UnrecognizedClientException"},
		{"api key", aws.Credentials{}, "bedrock-api-key-sim", false, 200, ""},
		{"unknown api key", aws.Credentials{}, "bedrock-api-key-other", false, 403, "UnrecognizedClientException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := bedrockPost(t, s, path, body, c.creds, c.key, c.tamper)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, c.status, resp.StatusCode, "%s", got)
			assert.Equal(t, c.typ, resp.Header.Get("X-Amzn-Errortype"))
			if c.typ == "InvalidSignatureException" {
				assert.Equal(t, keys(t, recorded), keys(t, got))
				var w, g struct{ Message string }
				require.NoError(t, json.Unmarshal(recorded, &w))
				require.NoError(t, json.Unmarshal(got, &g))
				assert.True(t, strings.HasPrefix(w.Message, g.Message), "the recorded message begins with the simulator's: %q", g.Message)
			}
		})
	}
}

// A body Bedrock would refuse is refused: a model member, a stream member,
// no anthropic_version.
func TestBedrockRefusesAnthropicBody(t *testing.T) {
	s := bedrockTestServer(t)
	path := "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke"
	for _, body := range []string{
		`{"anthropic_version":"bedrock-2023-05-31","model":"claude-haiku-4-5","max_tokens":4000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"anthropic_version":"bedrock-2023-05-31","stream":true,"max_tokens":4000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4000,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		resp := bedrockPost(t, s, path, []byte(body), bedrockTestCreds, "", false)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Equal(t, "ValidationException", resp.Header.Get("X-Amzn-Errortype"), body)
	}
}
