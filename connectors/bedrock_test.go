package connectors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
)

var updateBedrock = flag.Bool("update-bedrock", false, "rewrite the bedrock connector's golden files")

// bedrockCorpus is the connector's corpus: one directory per case, holding
// any of
//
//   - request.json, a chat-completions body, and native.json, its
//     translation (path and body);
//   - messages.json, a Messages API body (beta.txt: the caller's
//     anthropic-beta values, one a line), and messages-native.json, its
//     pass-through; recorded-request.txt names the request the live
//     upstream was sent, which the pass-through's body must equal;
//   - recorded.txt, naming a recorded answer under testdata/recorded (a
//     .json InvokeModel answer or an .eventstream stream): the chat
//     translation's openai.json or chunks.jsonl, the Messages relay's
//     relay.sse (streams), and result.json, what was read back (the same
//     both ways).
const bedrockCorpus = "../testdata/connectors/bedrock"

// bedrockTestUpstream is the upstream the corpus is translated for: a
// Bedrock API key, so that no credential chain is set up.
func bedrockTestUpstream() *profiles.Upstream {
	return &profiles.Upstream{Name: "aws", Connector: "bedrock", Region: "us-east-1", APIKeyEnv: "SLUICE_TEST_BEDROCK_KEY"}
}

func bedrockTestConnector(t testing.TB) *bedrock {
	t.Helper()
	c, err := NewFor(bedrockTestUpstream(), "")
	require.NoError(t, err)
	b := c.(*bedrock)
	b.anth.now = func() time.Time { return anthCreated }
	return b
}

// bedrockTestCall is the check's outcome on Bedrock: the catalog's native
// id, a cross-region inference profile.
func bedrockTestCall() *Call {
	return &Call{
		Plan:    &compiler.Plan{DecidedModel: "anthropic/claude-haiku-4.5"},
		Outcome: &compiler.Outcome{NativeModel: "us.anthropic.claude-haiku-4-5-20251001-v1:0", Degraded: []string{}},
	}
}

func nativeJSON(t *testing.T, n *Native) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Path string          `json:"path"`
		Body json.RawMessage `json:"body"`
	}{n.Path, n.Body})
	require.NoError(t, err)
	return indentJSON(t, b)
}

func TestBedrockCorpus(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(bedrockCorpus, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := bedrockTestConnector(t)
			call := bedrockTestCall()
			if raw, err := os.ReadFile(filepath.Join(dir, "request.json")); err == nil {
				body, err := ParseBody(raw)
				require.NoError(t, err)
				n, err := TranslateFor(c, nil, body, call.Plan, call.Outcome)
				require.NoError(t, err)
				golden(t, *updateBedrock, dir, "native.json", nativeJSON(t, n))
				call.UsageAdded = n.UsageAdded
			}
			if raw, err := os.ReadFile(filepath.Join(dir, "messages.json")); err == nil {
				body, err := ParseBody(raw)
				require.NoError(t, err)
				var beta []string
				if b, err := os.ReadFile(filepath.Join(dir, "beta.txt")); err == nil {
					beta = strings.Fields(string(b))
				}
				// The check's part: the flags Bedrock takes are kept.
				mout := *call.Outcome
				kept, _, refused := compiler.CheckBetas(compiler.SplitBetas(beta), c.Capabilities().Betas, "aws")
				require.Nil(t, refused)
				mout.Betas = kept
				n, err := TranslateFor(c, &Inbound{API: APIMessages, Beta: beta}, body, call.Plan, &mout)
				require.NoError(t, err)
				golden(t, *updateBedrock, dir, "messages-native.json", nativeJSON(t, n))
				if rec, err := os.ReadFile(filepath.Join(dir, "recorded-request.txt")); err == nil {
					want, err := os.ReadFile(filepath.Join(anthRecordedDir, strings.TrimSpace(string(rec))))
					require.NoError(t, err)
					assert.JSONEq(t, string(want), string(n.Body), "the body the live upstream was sent")
				}
			}
			rec, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
			if err != nil {
				return
			}
			answer, err := os.ReadFile(filepath.Join(anthRecordedDir, strings.TrimSpace(string(rec))))
			require.NoError(t, err)
			if !strings.HasSuffix(strings.TrimSpace(string(rec)), ".eventstream") {
				out, res, err := Respond(c, call, answer)
				require.NoError(t, err)
				golden(t, *updateBedrock, dir, "openai.json", indentJSON(t, out))
				golden(t, *updateBedrock, dir, "result.json", resultJSON(t, res))
				mcall := *call
				mcall.Inbound = &Inbound{API: APIMessages}
				relayed, mres, err := Respond(c, &mcall, answer)
				require.NoError(t, err)
				assert.Equal(t, answer, relayed, "a Messages answer is relayed as it came")
				assert.Equal(t, res.Usage, mres.Usage)
				assert.Equal(t, bedrockProvider, mres.ServedProvider)
				return
			}
			chunks, done, err := bedrockRun(t, c.NewStream(call), answer)
			require.NoError(t, err)
			assert.True(t, done, "the stream ends with message_stop")
			var lines bytes.Buffer
			for _, ch := range chunks {
				lines.Write(ch)
				lines.WriteByte('\n')
			}
			golden(t, *updateBedrock, dir, "chunks.jsonl", lines.Bytes())
			res := c.NewStream(call)
			_, _, err = bedrockRun(t, res, answer)
			require.NoError(t, err)
			golden(t, *updateBedrock, dir, "result.json", resultJSON(t, res.Result()))

			mcall := *call
			mcall.Inbound = &Inbound{API: APIMessages}
			relay := OpenStream(c, &mcall)
			events, done, err := bedrockRun(t, relay, answer)
			require.NoError(t, err)
			assert.True(t, done)
			golden(t, *updateBedrock, dir, "relay.sse", bytes.Join(events, nil))
			assert.Equal(t, res.Result(), relay.Result(), "the relay reads back what the translation reads")
		})
	}
}

// bedrockRun feeds a recorded event stream, read by the connector's own
// framing, to s.
func bedrockRun(t testing.TB, s Stream, stream []byte) (out [][]byte, done bool, err error) {
	r := NewEventReader(&bedrock{}, bytes.NewReader(stream))
	defer r.Release()
	for {
		event, data, rerr := r.Next()
		if rerr == io.EOF {
			return out, done, nil
		}
		if rerr != nil {
			return out, done, rerr
		}
		done, err = s.Event(event, data, func(p []byte) error {
			out = append(out, bytes.Clone(p))
			return nil
		})
		if err != nil || done {
			return out, done, err
		}
	}
}

// Every recorded stream decodes to the Messages events it carries, in
// order, and ends at EOF; a stream cut inside a frame or with a byte
// flipped fails as malformed, never as a clean end.
func TestBedrockEventReaderRecordings(t *testing.T) {
	paths, err := filepath.Glob("../testdata/recorded/bedrock/*.eventstream")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		r := newBedrockEventReader(bytes.NewReader(raw))
		var types []string
		for {
			ev, data, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, p)
			require.True(t, json.Valid(data), p)
			types = append(types, string(ev))
		}
		r.Release()
		require.NotEmpty(t, types, p)
		assert.Equal(t, "message_start", types[0], p)
		assert.Equal(t, "message_stop", types[len(types)-1], p)

		cut := newBedrockEventReader(bytes.NewReader(raw[:len(raw)-7]))
		for {
			_, _, err = cut.Next()
			if err != nil {
				break
			}
		}
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, p)

		flipped := bytes.Clone(raw)
		flipped[40] ^= 0x20
		bad := newBedrockEventReader(bytes.NewReader(flipped))
		_, _, err = bad.Next()
		assert.ErrorIs(t, err, ErrEventStream, p)
	}
}

// An exception frame is told as the Anthropic error event of the same
// meaning, which the relay and the gateway's first-event check read.
func TestBedrockEventReaderException(t *testing.T) {
	frame := bedrockTestFrame(t, map[string]string{":message-type": "exception", ":exception-type": "throttlingException", ":content-type": "application/json"},
		`{"message":"Too many requests, please wait before trying again."}`)
	r := newBedrockEventReader(bytes.NewReader(frame))
	ev, data, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "error", string(ev))
	assert.JSONEq(t, `{"type":"error","error":{"type":"rate_limit_error","message":"Too many requests, please wait before trying again."}}`, string(data))
	_, _, err = r.Next()
	assert.Equal(t, io.EOF, err)
}

func TestBedrockConnector(t *testing.T) {
	_, err := NewFor(&profiles.Upstream{Name: "aws", Connector: "bedrock"}, "")
	require.ErrorContains(t, err, "region is required")
	_, err = NewFor(&profiles.Upstream{Name: "aws", Connector: "bedrock", Region: "us-east-1.evil.example"}, "")
	require.ErrorContains(t, err, "not an AWS region name")

	u := bedrockTestUpstream()
	c, err := NewFor(u, "")
	require.NoError(t, err)
	assert.Equal(t, "https://bedrock-runtime.us-east-1.amazonaws.com", u.BaseURL, "the region's endpoint by default")
	assert.Equal(t, "bedrock", c.Kind())
	caps := c.Capabilities()
	assert.Equal(t, "amazon-bedrock", caps.DirectProvider)
	assert.False(t, caps.Ranking || caps.AllowList || caps.DenyList || caps.Chain)
	for flag, src := range caps.Betas {
		assert.NotEmpty(t, src, flag)
	}
	assert.Equal(t, "native", Asked(c, APIMessages))
	assert.Equal(t, "via messages", Asked(c, APIChat))
	assert.False(t, SpeaksNatively(c, APIChat))

	// A key: a bearer token, and Sign leaves the request as it is.
	req, _ := http.NewRequest(http.MethodPost, u.BaseURL+"/model/x/invoke", nil)
	c.Authorize(req.Header, "bedrock-api-key-1")
	require.NoError(t, c.(Signer).Sign(req, []byte(`{}`)))
	assert.Equal(t, "Bearer bedrock-api-key-1", req.Header.Get("Authorization"))
	// api_key_env's variable empty: a credential error naming the variable.
	req, _ = http.NewRequest(http.MethodPost, u.BaseURL+"/model/x/invoke", nil)
	err = c.(Signer).Sign(req, []byte(`{}`))
	var ce *CredentialError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Error(), "SLUICE_TEST_BEDROCK_KEY")
}

// A signed request carries the signature the SDK's signer computes for
// the same request, over the body's hash; a chain that yields nothing is a
// CredentialError that carries no secret.
func TestBedrockSigV4(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token-1"}
	when := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	b := &bedrock{upstream: "aws", region: "eu-west-1", signer: v4.NewSigner(), now: func() time.Time { return when },
		creds: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }))}
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":10,"messages":[]}`)
	url := "https://bedrock-runtime.eu-west-1.amazonaws.com" + bedrockPath("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", true)
	assert.Contains(t, url, "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream")
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	require.NoError(t, b.Sign(req, body))
	auth := req.Header.Get("Authorization")
	assert.True(t, strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261202/eu-west-1/bedrock/aws4_request, SignedHeaders="), auth)
	assert.Equal(t, "session-token-1", req.Header.Get("X-Amz-Security-Token"))

	// Accept is sent and left out of the signature (the signer need not
	// canonicalize it): the signed headers are host, the body's length and
	// type, and the signer's own.
	assert.Equal(t, "application/json", req.Header.Get("Accept"))
	assert.Contains(t, auth, "SignedHeaders=content-length;content-type;host;x-amz-date;x-amz-security-token,")

	// The same request signed by the SDK's signer directly.
	again, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	again.Header.Set("Content-Type", "application/json")
	require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), creds, again,
		sha256Hex(body), "bedrock", "eu-west-1", when))
	assert.Equal(t, again.Header.Get("Authorization"), auth)

	// A different body is a different signature.
	other, _ := http.NewRequest(http.MethodPost, url, nil)
	other.Header.Set("Content-Type", "application/json")
	require.NoError(t, b.Sign(other, []byte(`{}`)))
	assert.NotEqual(t, auth, other.Header.Get("Authorization"))

	failing := &bedrock{upstream: "aws", region: "eu-west-1", signer: v4.NewSigner(), now: time.Now,
		creds: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no EC2 IMDS role found")
		}))}
	req, _ = http.NewRequest(http.MethodPost, url, nil)
	err = failing.Sign(req, body)
	var ce *CredentialError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `upstream "aws"`)
	assert.Contains(t, err.Error(), "no EC2 IMDS role found")
	assert.Empty(t, req.Header.Get("Authorization"))
}

// A credential chain the SDK cannot set up (a named profile that does not
// exist) fails at load, naming the cause.
func TestBedrockChainFailsAtLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "no-such-profile")
	_, err := NewFor(&profiles.Upstream{Name: "aws", Connector: "bedrock", Region: "us-east-1"}, "")
	require.ErrorContains(t, err, "the AWS credential chain could not be set up")
	assert.Contains(t, err.Error(), "no-such-profile")
}

// The Messages pass-through sends only the flags Bedrock accepts and the
// check left.
func TestBedrockBetaFlags(t *testing.T) {
	c := bedrockTestConnector(t)
	call := bedrockTestCall()
	flags := []string{"interleaved-thinking-2025-05-14,claude-code-20250219", "interleaved-thinking-2025-05-14"}
	kept, lost, refused := compiler.CheckBetas(compiler.SplitBetas(flags), c.Capabilities().Betas, "aws")
	require.Nil(t, refused)
	assert.Equal(t, []string{"beta:claude-code-20250219"}, lost, "a flag Bedrock does not take is dropped, recorded")
	call.Outcome.Betas = kept
	body, err := ParseBody([]byte(`{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	n, err := TranslateFor(c, &Inbound{API: APIMessages, Beta: flags}, body, call.Plan, call.Outcome)
	require.NoError(t, err)
	assert.JSONEq(t, `{"anthropic_beta":["interleaved-thinking-2025-05-14"],"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, string(n.Body))
	assert.Empty(t, n.Header.Get("anthropic-beta"))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// bedrockTestFrame encodes one event-stream frame with the SDK's encoder.
func bedrockTestFrame(t testing.TB, headers map[string]string, payload string) []byte {
	t.Helper()
	var msg eventstream.Message
	for k, v := range headers {
		msg.Headers.Set(k, eventstream.StringValue(v))
	}
	msg.Payload = []byte(payload)
	var buf bytes.Buffer
	require.NoError(t, eventstream.NewEncoder().Encode(&buf, msg))
	return buf.Bytes()
}

func FuzzBedrockEventReader(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/recorded/bedrock/*.eventstream")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err == nil {
			f.Add(raw)
			f.Add(raw[:len(raw)/2])
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := newBedrockEventReader(bytes.NewReader(raw))
		defer r.Release()
		total := 0
		for i := 0; ; i++ {
			ev, data, err := r.Next()
			if err != nil {
				// The end, or a malformed or cut stream: never a panic, and
				// the error stays.
				_, _, again := r.Next()
				assert.Equal(t, err, again)
				return
			}
			total += len(ev) + len(data)
			// What a frame yields is bounded by what it carried.
			require.LessOrEqual(t, len(data), len(raw)+64+len(`{"type":"error","error":{"type":"invalid_request_error","message":}}`)+len(raw))
			require.Less(t, i, len(raw)/esMinFrame+1, "each event consumes a frame")
		}
	})
}
