package connectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// bedrock translates for Amazon Bedrock's runtime API, serving Anthropic's
// models in the Messages API's own shape over InvokeModel
// (POST /model/{modelId}/invoke) and InvokeModelWithResponseStream
// (POST /model/{modelId}/invoke-with-response-stream): the body is a
// Messages request without its model member (the model is the path's)
// and with anthropic_version "bedrock-2023-05-31"; betas travel in the
// body's anthropic_beta list rather than a header. The model id is the
// catalog's native id for the provider "amazon-bedrock": a foundation
// model id or a cross-region inference profile id (us., eu., apac.,
// global.). Streams come in the binary event-stream framing
// ([bedrockEventReader]), each chunk one Messages API event.
//
// A chat-completions request is the anthropic connector's translation onto
// the Messages API, rewritten for Bedrock; answers and streams are read by
// the same readers, with the served provider amazon-bedrock. Every model
// that is not Anthropic's is spoken to through Converse instead: the
// connector's dialect ([bedrockConverse]).
//
// Requests are signed with SigV4 (service "bedrock", the upstream's
// region) over credentials from the AWS SDK's default chain (environment,
// shared config and credentials files, web identity, container and
// instance metadata), cached and refreshed before they expire; or, with
// api_key_env, carry a Bedrock API key as a bearer token.
type bedrock struct {
	anth *anthropic
	// upstream is the configured upstream's name, for credential errors.
	upstream string
	region   string
	// keyEnv is the api_key_env of an upstream that authenticates with a
	// Bedrock API key ("" for SigV4).
	keyEnv string
	// creds is the SDK's credential chain behind its cache (nil with a key).
	creds  aws.CredentialsProvider
	signer *v4.Signer
	// now is the signing time; tests fix it.
	now func() time.Time
	// converse is the dialect of the upstream's models that are not
	// Anthropic's (see [bedrock.dialect]), built with the upstream.
	converse *bedrockConverse
}

var (
	_ Connector = (*bedrock)(nil)
	_ Signer    = (*bedrock)(nil)
	_ Framer    = (*bedrock)(nil)
)

// bedrockProvider is the catalog's provider slug of Amazon Bedrock.
const bedrockProvider = "amazon-bedrock"

// BedrockVersion is the anthropic_version a Bedrock Messages body carries
// (Amazon Bedrock user guide, Anthropic Claude Messages API).
const BedrockVersion = "bedrock-2023-05-31"

// bedrockRegion is the shape of an AWS region name; the default endpoint's
// host is built from it.
var bedrockRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// newBedrock builds the connector of one configured upstream. Its base URL
// defaults to the region's runtime endpoint,
// https://bedrock-runtime.<region>.amazonaws.com, written into the
// upstream's configuration. The credential chain is set up here (reading
// the environment and the shared files, which fails on a profile that does
// not exist) and asked for credentials only when a request is signed.
func newBedrock(u *profiles.Upstream) (*bedrock, error) {
	if u.Region == "" {
		return nil, errors.New(`region is required: the AWS region whose Bedrock endpoint serves and that requests are signed for (e.g. "us-east-1")`)
	}
	if !bedrockRegion.MatchString(u.Region) {
		return nil, fmt.Errorf("region %q is not an AWS region name (e.g. \"us-east-1\")", u.Region)
	}
	b := &bedrock{anth: newAnthropic(), upstream: u.Name, region: u.Region, keyEnv: u.APIKeyEnv, signer: v4.NewSigner(), now: time.Now}
	b.converse = newBedrockConverse(b)
	if u.BaseURL == "" {
		u.BaseURL = "https://bedrock-runtime." + u.Region + ".amazonaws.com"
	}
	if u.APIKeyEnv != "" {
		return b, nil
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(u.Region))
	if err != nil {
		return nil, fmt.Errorf("the AWS credential chain could not be set up: %w", err)
	}
	if cfg.Credentials == nil {
		return nil, errors.New("the AWS credential chain could not be set up: no credential source")
	}
	b.creds = cfg.Credentials
	if _, cached := b.creds.(*aws.CredentialsCache); !cached {
		b.creds = aws.NewCredentialsCache(b.creds)
	}
	return b, nil
}

// Kind implements [Connector.Kind].
func (*bedrock) Kind() string { return "bedrock" }

// speaksMessagesOnly implements messagesOnly.
func (*bedrock) speaksMessagesOnly() {}

// Capabilities implements [Connector.Capabilities]. A direct upstream of
// one provider: nothing to rank, no list or chain to express; the
// anthropic-beta flags it accepts are [bedrockBetas].
func (*bedrock) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: bedrockProvider, Betas: bedrockBetas}
}

// Authorize implements [Connector.Authorize]: a key (api_key_env's, or a
// caller's own Bedrock API key) is a bearer token; without one the
// request is signed ([bedrock.Sign]).
func (*bedrock) Authorize(h http.Header, key string) { bearer(h, key) }

// bedrockAccept is the Accept header of a Bedrock request, stream or not:
// the media type of the model's own answer, which is what the recorded
// clients send (a stream's frames come as application/vnd.amazon.eventstream
// whatever it says).
var bedrockAccept = []string{"application/json"}

// Sign implements [Signer]. A request that carries a bearer key goes as it
// is; otherwise it is signed with SigV4 over the body's SHA-256, the
// credentials taken from the chain's cache (refreshed by the SDK before
// they expire). A chain that yields no credentials is a
// [*CredentialError] whose message is the SDK's, which names sources and
// never a secret.
func (b *bedrock) Sign(req *http.Request, body []byte) error {
	if req.Header.Get("Authorization") != "" {
		req.Header["Accept"] = bedrockAccept
		return nil
	}
	if b.creds == nil {
		return &CredentialError{Upstream: b.upstream, Err: fmt.Errorf("the environment variable %s named by api_key_env is empty", b.keyEnv)}
	}
	creds, err := b.creds.Retrieve(req.Context())
	if err != nil {
		return &CredentialError{Upstream: b.upstream, Err: fmt.Errorf("the AWS credential chain: %w", err)}
	}
	return b.sign(req, body, creds)
}

// sign signs a request with a set of credentials, hashing the body once.
// The header values the signer sets (the date, the session token, the
// authorization) are given one backing array to fill: the SDK appends each
// to the header's slice emptied, so one allocation stands for three.
func (b *bedrock) sign(req *http.Request, body []byte, creds aws.Credentials) error {
	sum := sha256.Sum256(body)
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	h := req.Header
	vals := make([]string, 3)
	h["X-Amz-Date"] = vals[0:0:1]
	if creds.SessionToken != "" {
		h["X-Amz-Security-Token"] = vals[1:1:2]
	}
	h["Authorization"] = vals[2:2:3]
	delete(h, "Accept")
	err := b.signer.SignHTTP(req.Context(), creds, req, string(hexSum[:]), "bedrock", b.region, b.now())
	h["Accept"] = bedrockAccept
	if err != nil {
		return &CredentialError{Upstream: b.upstream, Err: fmt.Errorf("SigV4 signing: %w", err)}
	}
	return nil
}

// NewEventReader implements [Framer]: Bedrock's streams come in the
// binary event-stream framing.
func (*bedrock) NewEventReader(r io.Reader) EventReader { return newBedrockEventReader(r) }

// Translate implements [Connector.Translate]: the anthropic connector's
// translation of the chat request onto the Messages API, rewritten into
// Bedrock's body and path.
func (b *bedrock) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	n, err := b.anth.Translate(body, plan, out)
	if err != nil {
		return nil, err
	}
	msg, err := ParseBody(n.Body)
	if err != nil {
		return nil, fmt.Errorf("bedrock: the translated body: %w", err)
	}
	n.Path = bedrockPath(out.NativeModel, isJSONTrue(msg["stream"]))
	n.Body = bedrockBody(msg, nil)
	return n, nil
}

// bedrockBody is a Messages body as Bedrock takes it: no model (the path
// names it), no stream (the path says it), its anthropic_version, and the
// beta flags in the body.
func bedrockBody(msg Body, betas []string) []byte {
	var beta []byte
	if len(betas) > 0 {
		beta = appendStringList(nil, betas)
	}
	return encodeBody(msg, member{"model", nil}, member{"stream", nil},
		member{"anthropic_version", bedrockVersionJSON}, member{"anthropic_beta", beta})
}

var bedrockVersionJSON = jsonscan.AppendString(nil, BedrockVersion)

// bedrockPath is the InvokeModel path of a model, streaming or not.
func bedrockPath(model string, stream bool) string {
	if stream {
		return bedrockModelPath(model, "/invoke-with-response-stream")
	}
	return bedrockModelPath(model, "/invoke")
}

// bedrockModelPath is the path of an action on a model ("/invoke",
// "/converse-stream", "/count-tokens", ...). The model id is one path
// segment, percent-encoded (an id's version suffix "-v1:0" is sent as
// "-v1%3A0", as the SDKs send it); the path is built in one allocation.
func bedrockModelPath(model, action string) string {
	const prefix = "/model/"
	n := len(prefix) + len(model) + len(action)
	for i := 0; i < len(model); i++ {
		if !bedrockUnreserved(model[i]) {
			n += 2
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(prefix)
	writeBedrockEscaped(&b, model)
	b.WriteString(action)
	return b.String()
}

// bedrockUnreserved reports whether c is one of RFC 3986's unreserved
// characters, which a path segment carries as they are.
func bedrockUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// writeBedrockEscaped writes s percent-encoded as a path segment.
func writeBedrockEscaped(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if bedrockUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
}

// Response implements [Connector.Response]: the anthropic connector's
// reading of a Messages answer, served by Bedrock.
func (b *bedrock) Response(call *Call, body []byte) ([]byte, Result, error) {
	out, res, err := b.anth.Response(call, body)
	res.ServedProvider = bedrockProvider
	res.ServedModel = bedrockServed(call, res.ServedModel)
	return out, res, err
}

// NewStream implements [Connector.NewStream].
func (b *bedrock) NewStream(call *Call) Stream {
	return &bedrockStream{Stream: b.anth.NewStream(call), call: call}
}

// bedrockGeoPrefixes are the region prefixes of cross-region inference
// profile ids.
var bedrockGeoPrefixes = [...]string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au."}

// bedrockServed names the model Bedrock reported by the id it was sent
// under. Bedrock's answer reports the model by Anthropic's id
// ("claude-haiku-4-5-20251001"), not by the Bedrock model id or inference
// profile the path named ("us.anthropic.claude-haiku-4-5-20251001-v1:0"),
// which is the catalog's native id for amazon-bedrock: a reported id that
// is the sent id without its region prefix, "anthropic." and version
// suffix (a snapshot date aside) is reported as the sent id; any other is
// left as it is, so a substitution stays visible.
func bedrockServed(call *Call, reported string) string {
	if call == nil || call.Outcome == nil || reported == "" {
		return reported
	}
	sent := call.Outcome.NativeModel
	id := strings.ToLower(sent)
	for _, geo := range bedrockGeoPrefixes {
		if strings.HasPrefix(id, geo) {
			id = id[len(geo):]
			break
		}
	}
	id = strings.TrimPrefix(id, "anthropic.")
	if i := strings.LastIndex(id, "-v"); i > 0 {
		id = id[:i]
	}
	rep := strings.ToLower(reported)
	if rep == id || guardrails.TrimVersion(rep) == id || (guardrails.TrimVersion(id) != "" && guardrails.TrimVersion(rep) == guardrails.TrimVersion(id)) {
		return sent
	}
	return reported
}

// bedrockStream reads a Bedrock stream through a Messages stream reader
// (the chat translation's, or the native relay's): the served provider is
// Bedrock, and the usage is the invocation metrics Bedrock adds to the
// final event when the events themselves reported none. The metrics count
// the input without the cached part (inputTokenCount) and the cache's
// reads and writes apart (cacheReadInputTokenCount,
// cacheWriteInputTokenCount), as the events' usage does; they replace the
// events' counts only when those are absent, never add to them, so a cache
// read is counted once.
type bedrockStream struct {
	Stream
	call    *Call
	metrics bool
	// The invocation metrics' counts.
	input, outpt, cacheRead, cacheWrite int64
}

// Event implements [Stream.Event].
func (s *bedrockStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if string(event) == "message_stop" {
		if m := jsonscan.Member(data, "amazon-bedrock-invocationMetrics"); m != nil {
			in, inOK := jsonInt(jsonscan.Member(m, "inputTokenCount"))
			out, outOK := jsonInt(jsonscan.Member(m, "outputTokenCount"))
			s.metrics, s.input, s.outpt = inOK && outOK, in, out
			s.cacheRead, _ = jsonInt(jsonscan.Member(m, "cacheReadInputTokenCount"))
			s.cacheWrite, _ = jsonInt(jsonscan.Member(m, "cacheWriteInputTokenCount"))
		}
	}
	return s.Stream.Event(event, data, emit)
}

// Result implements [Stream.Result].
func (s *bedrockStream) Result() Result {
	r := s.Stream.Result()
	r.ServedProvider = bedrockProvider
	r.ServedModel = bedrockServed(s.call, r.ServedModel)
	if s.metrics && r.Usage.PromptTokens == 0 && r.Usage.CompletionTokens == 0 {
		r.Usage.PromptTokens = s.input + s.cacheRead + s.cacheWrite
		r.Usage.CompletionTokens = s.outpt
		r.Usage.CachedTokens, r.Usage.CacheWriteTokens = s.cacheRead, s.cacheWrite
	}
	return r
}

// jsonInt reads a JSON integer.
func jsonInt(v []byte) (int64, bool) {
	num := jsonscan.NumberText(v)
	if num == nil {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
