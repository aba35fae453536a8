package simulator

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Amazon Bedrock's runtime API for Anthropic's models, answering as the
// recordings show (testdata/recorded/bedrock): InvokeModel
// (POST bedrock/model/{modelId}/invoke) answers the Messages API's message;
// InvokeModelWithResponseStream (…/invoke-with-response-stream) answers
// application/vnd.amazon.eventstream frames, each a "chunk" event whose
// JSON payload carries one Messages API event, base64-encoded, in "bytes"
// beside a padding member "p", the final message_stop carrying
// amazon-bedrock-invocationMetrics. The body is a Messages request
// without model (the path names it, the catalog's native id for
// amazon-bedrock) and with anthropic_version bedrock-2023-05-31. A system
// prompt that marks a cache breakpoint is written to the cache on its first
// request and read on later ones ([Server.bedrockCache]), counted in the
// usage's cache members and the metrics' cacheReadInputTokenCount and
// cacheWriteInputTokenCount.
//
// Each request is authenticated as Bedrock does: a SigV4 signature
// (service bedrock) recomputed with the AWS SDK's signer from the secret of
// the access key it names (Config.AWSCredentials), or a bearer Bedrock API
// key (Config.BedrockAPIKeys). A wrong signature is refused 403 with
// Bedrock's InvalidSignatureException body, an unknown key with
// UnrecognizedClientException.

// KindBedrock is Amazon Bedrock's runtime API ([Server.URL]).
const KindBedrock = "bedrock"

// bedrockVersion is the anthropic_version Bedrock requires.
const bedrockVersion = "bedrock-2023-05-31"

// bedrockRoutes adds Bedrock's endpoints.
func (s *Server) bedrockRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /bedrock/model/{modelId}/invoke", s.track(func(w http.ResponseWriter, r *http.Request) { s.handleBedrock(w, r, false) }))
	mux.HandleFunc("POST /bedrock/model/{modelId}/invoke-with-response-stream", s.track(func(w http.ResponseWriter, r *http.Request) { s.handleBedrock(w, r, true) }))
	mux.HandleFunc("POST /bedrock/model/{modelId}/count-tokens", s.track(s.handleBedrockCount))
	s.converseRoutes(mux)
}

// handleBedrockCount is CountTokens, in the shapes of the AWS SDK for Go's
// bedrockruntime operation: {"input": {"invokeModel": {"body": base64}}}
// answered {"inputTokens": n}. It names a foundation model: an inference
// profile's id is refused as Bedrock refuses it.
func (s *Server) handleBedrockCount(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		simError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if status, typ, msg := s.bedrockAuth(r, raw); status != 0 {
		bedrockError(w, status, typ, msg)
		return
	}
	var in struct {
		Input struct {
			InvokeModel *struct {
				Body []byte `json:"body"`
			} `json:"invokeModel"`
		} `json:"input"`
	}
	var q bedrockRequest
	if json.Unmarshal(raw, &in) != nil || in.Input.InvokeModel == nil || json.Unmarshal(in.Input.InvokeModel.Body, &q) != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
		return
	}
	if q.Version == nil || *q.Version != bedrockVersion || q.Model != nil || q.MaxTokens == nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
		return
	}
	id := r.PathValue("modelId")
	geos := []string{"us.", "eu.", "apac.", "global."}
	var m *Model
	if !slices.ContainsFunc(geos, func(g string) bool { return strings.HasPrefix(id, g) }) {
		for _, geo := range append([]string{""}, geos...) {
			if mm, _, ok := s.directModel(geo+id, "amazon-bedrock"); ok {
				m = mm
				break
			}
		}
	}
	if m == nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "The provided model doesn't support counting tokens.")
		return
	}
	s.record(r, Call{Kind: KindBedrock, Model: m.Slug, Provider: "amazon-bedrock", Status: http.StatusOK})
	writeJSON(w, http.StatusOK, map[string]int{"inputTokens": promptTokens(q.System, q.Messages)})
}

// bedrockShape is Bedrock's error body: the message alone, the error's
// type in the x-amzn-ErrorType header.
func bedrockShape(_ int, msg string) any { return map[string]string{"message": msg} }

// bedrockError answers an error of a type.
func bedrockError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("X-Amzn-Errortype", typ)
	writeJSON(w, status, bedrockShape(status, msg))
}

// The messages of Bedrock's authentication failures, as Bedrock answers
// them (testdata/recorded/bedrock/error-403-*.json).
const (
	bedrockBadSignature = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	bedrockBadToken     = "The security token included in the request is invalid."
)

// bedrockRequest is the fields of a Bedrock Messages body the simulator
// reads, beside the Messages request's own.
type bedrockRequest struct {
	anthropicRequest
	Version *string         `json:"anthropic_version"`
	Model   json.RawMessage `json:"model"`
	Stream  json.RawMessage `json:"stream"`
}

// bedrockIntake reads a Bedrock request's fault header and body and
// checks its credentials (a SigV4 signature or a Bedrock API key), as every
// Bedrock endpoint does first; ok is false when it answered the request.
func (s *Server) bedrockIntake(w http.ResponseWriter, r *http.Request) (hdr []Fault, body []byte, ok bool) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return nil, nil, false
	}
	body, err = io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		simError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return nil, nil, false
	}
	if status, typ, msg := s.bedrockAuth(r, body); status != 0 {
		bedrockError(w, status, typ, msg)
		return nil, nil, false
	}
	return hdr, body, true
}

func (s *Server) handleBedrock(w http.ResponseWriter, r *http.Request, stream bool) {
	hdr, body, ok := s.bedrockIntake(w, r)
	if !ok {
		return
	}
	var q bedrockRequest
	if err := json.Unmarshal(body, &q); err != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
		return
	}
	switch {
	case q.Version == nil || *q.Version != bedrockVersion:
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: required key [anthropic_version] not found or invalid, please reformat your input and try again.")
		return
	case q.Model != nil:
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.")
		return
	case q.Stream != nil:
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try again.")
		return
	case q.MaxTokens == nil || len(q.Messages) == 0:
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: required key [max_tokens] or [messages] not found, please reformat your input and try again.")
		return
	}
	id := r.PathValue("modelId")
	m, ep, ok := s.directModel(id, "amazon-bedrock")
	if !ok {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid.")
		return
	}
	prompt := promptTokens(q.System, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindBedrock, hdr, stream, prompt, []candidate{{m, ep}}, anyAttempt(bedrockShape), anthropicOverflow)
	if !ok {
		return
	}
	model := dated(m.nativeID("anthropic"), anthropicSnapshots, anthropicSuffix)
	a := s.anthropicAnswer(m, model, prompt, q.thinks(), sc, &anthExtras{text: answerText(m.Slug, "amazon-bedrock")})
	c := s.bedrockCache(id, &q)
	a.body = bedrockUsage(a.body, c, "usage")
	for i := range a.events {
		switch a.events[i].name {
		case "message_start":
			a.events[i].data = bedrockUsage(a.events[i].data, c, "message", "usage")
		case "message_delta":
			a.events[i].data = bedrockDeltaUsage(a.events[i].data)
		}
	}
	if !stream {
		s.serveAnswer(w, r, false, a, res.fault)
		return
	}
	if s.serveBehaviour(w, r, res.fault, true, a.body) {
		return
	}
	s.bedrockStream(w, r, a, prompt, c)
}

// bedrockCached is a request's prompt-cache use: the tokens read from the
// cache and written to it.
type bedrockCached struct{ read, write int }

// bedrockCache is the cache use of a request whose system prompt marks a
// cache breakpoint (a cache_control member in it): the system prompt's
// tokens are written to the cache the first time the model is sent that
// system prompt, and read from it after. Other requests use no cache.
func (s *Server) bedrockCache(model string, q *bedrockRequest) bedrockCached {
	if !bytes.Contains(q.System, []byte(`"cache_control"`)) {
		return bedrockCached{}
	}
	n := promptTokens(q.System, nil)
	key := sha256.Sum256(append([]byte(model+"\x00"), q.System...))
	if _, seen := s.bedrockCached.LoadOrStore(key, true); seen {
		return bedrockCached{read: n}
	}
	return bedrockCached{write: n}
}

// bedrockStream writes a Messages answer's events as event-stream chunks,
// pings left out (the recorded streams have none), message_stop carrying
// the invocation metrics.
func (s *Server) bedrockStream(w http.ResponseWriter, r *http.Request, a *answer, prompt int, c bedrockCached) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	var out int
	for i, ev := range a.events {
		if ev.name == "ping" {
			continue
		}
		data := ev.data
		if ev.name == "message_delta" {
			var d struct {
				Usage struct {
					Output int `json:"output_tokens"`
				} `json:"usage"`
			}
			_ = json.Unmarshal(data, &d)
			out = d.Usage.Output
		}
		if ev.name == "message_stop" {
			metrics := map[string]int{"inputTokenCount": prompt - c.read - c.write, "outputTokenCount": out, "invocationLatency": 1200 + i, "firstByteLatency": 900}
			if c.read+c.write > 0 {
				metrics["cacheReadInputTokenCount"], metrics["cacheWriteInputTokenCount"] = c.read, c.write
			}
			data = mustJSON(map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics})
		}
		payload := mustJSON(map[string]string{"bytes": base64.StdEncoding.EncodeToString(data), "p": bedrockPadding[:(i*13+14)%len(bedrockPadding)]})
		var msg eventstream.Message
		msg.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Payload = payload
		if i > 0 && !s.sleep(r.Context(), s.cfg.ChunkDelay) {
			return
		}
		if err := enc.Encode(w, msg); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// bedrockUsage removes from the usage object at path the members
// Anthropic's own API reports and Bedrock's answers do not (service_tier,
// inference_geo: absent from every recorded Bedrock answer), and counts the
// cache's reads and writes in it (the uncached rest in input_tokens).
func bedrockUsage(b []byte, c bedrockCached, path ...string) []byte {
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return b
	}
	obj := doc
	for _, k := range path {
		next, ok := obj[k].(map[string]any)
		if !ok {
			return b
		}
		obj = next
	}
	delete(obj, "service_tier")
	delete(obj, "inference_geo")
	if c.read+c.write > 0 {
		if in, ok := obj["input_tokens"].(float64); ok {
			obj["input_tokens"] = int(in) - c.read - c.write
		}
		obj["cache_read_input_tokens"], obj["cache_creation_input_tokens"] = c.read, c.write
		if cc, ok := obj["cache_creation"].(map[string]any); ok {
			cc["ephemeral_5m_input_tokens"] = c.write
		}
	}
	return mustJSON(doc)
}

// bedrockDeltaUsage keeps of message_delta's usage the output count alone,
// as every recorded Bedrock stream's message_delta has it
// ({"output_tokens": n}; Anthropic's own repeats the input and cache
// counts).
func bedrockDeltaUsage(b []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return b
	}
	u, ok := doc["usage"].(map[string]any)
	if !ok {
		return b
	}
	doc["usage"] = map[string]any{"output_tokens": u["output_tokens"]}
	return mustJSON(doc)
}

// bedrockPadding is the alphabet the recorded chunks' "p" member is a
// prefix of.
const bedrockPadding = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// bedrockAuth checks a request's credentials; a zero status lets it through.
func (s *Server) bedrockAuth(r *http.Request, body []byte) (status int, typ, msg string) {
	auth := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(auth, "Bearer "); ok {
		for _, k := range s.cfg.BedrockAPIKeys {
			if subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 {
				return 0, "", ""
			}
		}
		return http.StatusForbidden, "UnrecognizedClientException", bedrockBadToken
	}
	if auth == "" {
		return http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	cred, signed, ok := parseSigV4(auth)
	if !ok {
		return http.StatusForbidden, "IncompleteSignatureException", "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters."
	}
	// Credential=<key id>/<date>/<region>/<service>/aws4_request
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[3] != "bedrock" || parts[4] != "aws4_request" {
		return http.StatusForbidden, "InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'."
	}
	secret, known := s.cfg.AWSCredentials[parts[0]]
	if !known {
		return http.StatusForbidden, "UnrecognizedClientException", bedrockBadToken
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return http.StatusForbidden, "IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
	}
	// The request again, with only the headers the signature names, signed
	// by the SDK's signer with the secret the simulator knows.
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.EscapedPath(), nil)
	if err != nil {
		return http.StatusForbidden, "InvalidSignatureException", bedrockBadSignature
	}
	again.Host = r.Host
	for _, name := range strings.Split(signed, ";") {
		switch name {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			if v := r.Header.Values(name); len(v) > 0 {
				again.Header[http.CanonicalHeaderKey(name)] = v
			}
		}
	}
	again.Header.Del("Authorization")
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: parts[0], SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, hex.EncodeToString(sum[:]), "bedrock", parts[2], when); err != nil {
		return http.StatusForbidden, "InvalidSignatureException", bedrockBadSignature
	}
	if subtle.ConstantTimeCompare([]byte(again.Header.Get("Authorization")), []byte(auth)) != 1 {
		return http.StatusForbidden, "InvalidSignatureException", bedrockBadSignature
	}
	return 0, "", ""
}

// parseSigV4 reads an AWS4-HMAC-SHA256 Authorization header's credential
// scope and signed headers.
func parseSigV4(auth string) (cred, signed string, ok bool) {
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", false
	}
	var sig string
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			sig = v
		}
	}
	return cred, signed, cred != "" && signed != "" && sig != ""
}

// bedrockFrames decodes an event-stream body into its chunks' events (the
// decoded "bytes"), for the shape tests.
func bedrockFrames(b []byte) ([][]byte, error) {
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	var out [][]byte
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			return out, err
		}
		var c struct {
			Bytes []byte `json:"bytes"`
		}
		if err := json.Unmarshal(msg.Payload, &c); err != nil {
			return out, fmt.Errorf("chunk payload: %w", err)
		}
		out = append(out, c.Bytes)
	}
	return out, nil
}
