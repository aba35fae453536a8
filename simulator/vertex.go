package simulator

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sluice "github.com/sluicegw/sluice"
)

// Vertex is Google Vertex AI's Claude and Gemini endpoints (the Gemini
// ones in vertex_gemini.go) and the OAuth2 token
// endpoint that issues their bearer tokens, on loopback. The token endpoint
// takes a service account's signed JWT assertion (the grant
// golang.org/x/oauth2/google makes from a key file whose token_uri names
// it) and checks its RS256 signature against the key's public half; the
// model endpoints take only a token it issued and still live, and answer
// rawPredict and streamRawPredict with the recorded answers of
// testdata/recorded/vertex (picked by what the request asks: a tool result,
// tools, a plain turn), count-tokens:rawPredict with the simulator's count.
type Vertex struct {
	key  *rsa.PublicKey
	life time.Duration
	recs fs.FS

	srv  *http.Server
	base string

	mu     sync.Mutex
	issued map[string]time.Time
	seq    atomic.Int64
	// fail makes the token endpoint refuse every assertion (400
	// invalid_grant), as it does a revoked key.
	fail atomic.Bool

	tokenHits, modelHits atomic.Int64

	// gen answers the models no recording holds, as the simulator's
	// Anthropic endpoint does (see [Vertex.Generate]).
	gen atomic.Pointer[Server]
}

// vertexRecorded is the model the recordings were made with: its requests
// are answered from them; any other model's by the generator, when set.
const vertexRecorded = "claude-3-7-sonnet@20250219"

// Generate has the simulator s answer the requests for models no recording
// holds, as its Anthropic endpoint answers them (tool-call directives and
// all): a coding agent's turns get answers of their own. The Vertex AI
// checks (token, body, beta flags) come first, as for every request.
func (v *Vertex) Generate(s *Server) { v.gen.Store(s) }

// NewVertex returns the endpoints for a service account whose public key is
// key, issuing tokens that live for life (a life under the client
// library's ten-second margin makes every request fetch a new one).
func NewVertex(key *rsa.PublicKey, life time.Duration) *Vertex {
	return &Vertex{key: key, life: life, recs: sluice.VertexRecordings(), issued: map[string]time.Time{}}
}

// Start listens on 127.0.0.1:0 and serves in the background; it returns the
// base URL: the token endpoint is <base>/token, the model endpoints
// <base>/v1/projects/...
func (v *Vertex) Start() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("simulator: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", v.handleToken)
	mux.HandleFunc("POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{call}", v.handleModel)
	mux.HandleFunc("POST /v1/projects/{project}/locations/{region}/publishers/google/models/{call}", v.handleGemini)
	v.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	v.base = "http://" + ln.Addr().String()
	go func() { _ = v.srv.Serve(ln) }()
	return v.base, nil
}

// Close stops the server.
func (v *Vertex) Close() {
	if v.srv != nil {
		_ = v.srv.Close()
	}
}

// TokenURL is the token endpoint a key file's token_uri names.
func (v *Vertex) TokenURL() string { return v.base + "/token" }

// TokenHits is how many times the token endpoint was asked for a token.
func (v *Vertex) TokenHits() int { return int(v.tokenHits.Load()) }

// ModelHits is how many requests reached the model endpoints with a valid
// token.
func (v *Vertex) ModelHits() int { return int(v.modelHits.Load()) }

// FailTokens makes the token endpoint refuse (true) or grant (false).
func (v *Vertex) FailTokens(fail bool) { v.fail.Store(fail) }

// handleToken is the OAuth2 token endpoint: grant_type jwt-bearer, the
// assertion signed with the service account's key.
func (v *Vertex) handleToken(w http.ResponseWriter, r *http.Request) {
	v.tokenHits.Add(1)
	refuse := func(code, why string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": why})
	}
	if v.fail.Load() {
		refuse("invalid_grant", "account disabled")
		return
	}
	if err := r.ParseForm(); err != nil {
		refuse("invalid_request", err.Error())
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		refuse("unsupported_grant_type", "grant_type must be jwt-bearer")
		return
	}
	if err := v.verify(r.PostForm.Get("assertion")); err != nil {
		refuse("invalid_grant", err.Error())
		return
	}
	tok := fmt.Sprintf("ya29.sim-%d-%s", v.seq.Add(1), token(fmt.Sprint("vertex token ", v.seq.Load()), 24, alnum))
	v.mu.Lock()
	v.issued[tok] = time.Now().Add(v.life)
	v.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(v.life / time.Second)})
}

// verify checks an assertion's RS256 signature and its audience and scope.
func (v *Vertex) verify(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("the assertion is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("the assertion's signature is not base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(v.key, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("invalid JWT signature")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("the assertion's claims are not base64url")
	}
	var claims struct {
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return fmt.Errorf("the assertion's claims are not JSON")
	}
	if claims.Aud != v.TokenURL() {
		return fmt.Errorf("invalid audience %q", claims.Aud)
	}
	if !strings.Contains(claims.Scope, "https://www.googleapis.com/auth/cloud-platform") {
		return fmt.Errorf("the assertion asks for no cloud-platform scope")
	}
	if time.Unix(claims.Exp, 0).Before(time.Now()) {
		return fmt.Errorf("the assertion has expired")
	}
	return nil
}

// googleError is an error answer in Google APIs' shape.
func googleError(w http.ResponseWriter, status int, state, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": state}})
}

// vertexRequest is what the simulator reads of a Vertex AI Claude body.
type vertexRequest struct {
	AnthropicVersion string          `json:"anthropic_version"`
	Model            *string         `json:"model"`
	MaxTokens        *int            `json:"max_tokens"`
	System           json.RawMessage `json:"system"`
	Messages         []chatMessage   `json:"messages"`
	Tools            json.RawMessage `json:"tools"`
}

// vertexRefused are anthropic-beta flags Vertex AI was reported refusing
// with 400 (anthropics/claude-code#21625, #12429; vercel/ai#10981;
// pydantic/pydantic-ai#2512); on count-tokens also those BerriAI/litellm#39597
// recorded it refusing there.
var (
	vertexRefused      = []string{"prompt-caching-scope-2026-01-05", "structured-outputs-2025-11-13", "code-execution-2025-05-22", "adaptive-thinking-2026-01-28"}
	vertexCountRefused = []string{"tool-search-tool-2025-10-19", "web-search-2025-03-05"}
)

// authorized checks the request's bearer token, one the token endpoint
// issued and still live, and answers 401 UNAUTHENTICATED otherwise.
func (v *Vertex) authorized(w http.ResponseWriter, r *http.Request) bool {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	v.mu.Lock()
	exp, issued := v.issued[auth]
	v.mu.Unlock()
	if !ok || !issued || time.Now().After(exp) {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return false
	}
	v.modelHits.Add(1)
	return true
}

func (v *Vertex) handleModel(w http.ResponseWriter, r *http.Request) {
	if !v.authorized(w, r) {
		return
	}
	model, verb, _ := strings.Cut(r.PathValue("call"), ":")
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return
	}
	var q vertexRequest
	if err := json.Unmarshal(body, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "There was an issue with your request body: "+err.Error()))
		return
	}
	if q.AnthropicVersion != "vertex-2023-10-16" {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "anthropic_version: Input should be 'vertex-2023-10-16'"))
		return
	}
	refused := vertexRefused
	if model == "count-tokens" {
		refused = append(append([]string(nil), vertexRefused...), vertexCountRefused...)
	}
	for f := range strings.SplitSeq(r.Header.Get("anthropic-beta"), ",") {
		for _, bad := range refused {
			if strings.TrimSpace(f) == bad {
				writeJSON(w, http.StatusBadRequest, anthropicShape(400, "Unexpected value(s) `"+bad+"` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header."))
				return
			}
		}
	}
	switch {
	case model == "count-tokens" && verb == "rawPredict":
		if q.Model == nil || *q.Model == "" {
			writeJSON(w, http.StatusBadRequest, anthropicShape(400, "model: Field required"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": promptTokens(q.System, q.Messages)})
		return
	case verb != "rawPredict" && verb != "streamRawPredict":
		googleError(w, http.StatusNotFound, "NOT_FOUND", "method "+verb+" not found")
		return
	}
	if q.Model != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "model: Extra inputs are not permitted"))
		return
	}
	if q.MaxTokens == nil || len(q.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "max_tokens and messages: Field required"))
		return
	}
	if gen := v.gen.Load(); gen != nil && model != vertexRecorded {
		v.generate(gen, w, r, model, verb == "streamRawPredict", body)
		return
	}
	name := v.recording(&q, body)
	if verb == "streamRawPredict" {
		if strings.HasPrefix(name, "cache-") { // recorded without a stream
			name = "plain-claude-3-7-sonnet"
		}
		serveRecording(w, v.recs, "stream-"+name+".sse", "text/event-stream; charset=utf-8")
		return
	}
	serveRecording(w, v.recs, "nonstream-"+name+".json", "application/json")
}

// serveRecording answers 200 with a recorded answer, the file of recs, as
// contentType.
func serveRecording(w http.ResponseWriter, recs fs.FS, file, contentType string) {
	b, err := fs.ReadFile(recs, file)
	if err != nil {
		simError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// generate answers with the simulator's Anthropic endpoint: the body as
// Anthropic's API takes it (the path's model, the verb's stream, no
// anthropic_version), its headers in place of the bearer token.
func (v *Vertex) generate(gen *Server, w http.ResponseWriter, r *http.Request, model string, stream bool, body []byte) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, err.Error()))
		return
	}
	name, _, _ := strings.Cut(model, "@")
	m["model"], _ = json.Marshal(name)
	m["stream"], _ = json.Marshal(stream)
	delete(m, "anthropic_version")
	b, _ := json.Marshal(m)
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(strings.NewReader(string(b)))
	r2.ContentLength = int64(len(b))
	r2.Header.Del("Authorization")
	r2.Header.Set("x-api-key", "vertex")
	r2.Header.Set("anthropic-version", "2023-06-01")
	gen.handleAnthropic(w, r2)
}

// recording names the recorded answer of a request: the turn after a tool
// result, a turn that offers tools, a turn that marks a cache breakpoint
// (non-streaming), or a plain turn.
func (v *Vertex) recording(q *vertexRequest, body []byte) string {
	if n := len(q.Messages); n > 0 && q.Messages[n-1].Role == "user" && strings.Contains(string(q.Messages[n-1].Content), `"tool_result"`) {
		return "toolresult-claude-3-7-sonnet"
	}
	if len(q.Tools) > 0 && string(q.Tools) != "null" {
		return "tooluse-claude-3-7-sonnet"
	}
	if strings.Contains(string(body), `"cache_control"`) {
		return "cache-read-and-creation-claude-sonnet-4-5"
	}
	return "plain-claude-3-7-sonnet"
}
