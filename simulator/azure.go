package simulator

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Azure OpenAI's OpenAI v1 surface, under <base>/azure (the resource's
// endpoint): POST openai/v1/chat/completions, openai/v1/responses and
// openai/v1/embeddings, GET and DELETE openai/v1/responses/{id} (stored
// responses, as OpenAI's), GET openai/v1/realtime (a WebSocket session,
// realtime.go), answered like OpenAI's (the OpenAI wire) with what
// the recorded Azure answers add (testdata/recorded/azure): a chat
// answer's prompt_filter_results and each choice's content_filter_results,
// a chat stream opening with the prompt's filter results in a chunk of no
// choices, a Responses answer naming the deployment as its model; a
// repeated chat prompt reports cached tokens ([Server.azureCached]). The
// model member names a deployment, which the simulator takes to be the
// catalog's native id for azure (deployments named after their models).
//
// A request must carry the api-key [Config.AzureAPIKey] or a bearer token
// the simulated Microsoft Entra ID tenant [Config.Entra] issued and that
// has not expired ([StartEntra]); otherwise it is answered 401 in Azure's
// shape. The content filter's refusal is the fault
// error=azure/content_filter (a 400 whose innererror names the filtered
// categories); the fault filtered answers a 200 whose finish_reason is
// content_filter.

// KindAzure is Azure OpenAI's kind, as used by [Server.URL] and [Call.Kind].
const KindAzure = "azure"

var azureDirect = direct{kind: KindAzure, provider: "azure"}

// azureRoutes adds the Azure endpoints to the simulator's mux.
func (s *Server) azureRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /azure/openai/v1/chat/completions", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.serveDirectChat(w, r, azureDirect)
	})))
	mux.HandleFunc("POST /azure/openai/v1/responses", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.serveDirectResponses(w, r, azureDirect)
	})))
	mux.HandleFunc("POST /azure/openai/v1/embeddings", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.serveDirectEmbeddings(w, r, azureDirect)
	})))
	mux.HandleFunc("GET /azure/openai/v1/responses/{id}", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.responseGet(w, r, KindAzure)
	})))
	mux.HandleFunc("DELETE /azure/openai/v1/responses/{id}", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.responseDelete(w, r, KindAzure)
	})))
	// The Realtime API's WebSocket, /openai/v1/realtime?model=<deployment>
	// (learn.microsoft.com/azure/foundry/openai/how-to/realtime-audio-websockets),
	// replaying the sessions recorded against Azure (azure-*.jsonl); the
	// handshake is authenticated like every other request.
	mux.HandleFunc("GET /azure/openai/v1/realtime", s.track(s.azureAuth(func(w http.ResponseWriter, r *http.Request) {
		s.serveRealtime(w, r, azureDirect, DefaultAzureRealtimeRecording)
	})))
}

// azureDenied is Azure OpenAI's answer to a request without valid
// credentials, as Microsoft's troubleshooting documentation quotes it
// (learn.microsoft.com/azure/ai-foundry/openai/how-to/troubleshooting).
var azureDenied = []byte(`{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`)

// azureAuth answers 401 unless the request carries the configured api-key
// or a live token the Entra endpoint issued.
func (s *Server) azureAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ok := false
		if k := r.Header.Get("api-key"); k != "" {
			ok = s.cfg.AzureAPIKey != "" && k == s.cfg.AzureAPIKey
		} else if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
			ok = s.cfg.Entra.valid(tok)
		}
		if !ok {
			s.record(r, Call{Kind: KindAzure, API: apiOf(r.URL.Path), Status: http.StatusUnauthorized})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(azureDenied)
			return
		}
		h(w, r)
	}
}

// The content filter annotations of the recorded answers, all "safe"
// (testdata/recorded/azure/chat-simple.json, chat-simple-stream.sse).
var (
	azurePromptFilter = json.RawMessage(`[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}]`)
	azureAnswerFilter = json.RawMessage(`{"hate":{"filtered":false,"severity":"safe"},"protected_material_code":{"filtered":false,"detected":false},"protected_material_text":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`)
	azureDeltaFilter  = json.RawMessage(`{"protected_material_text":{"detected":false,"filtered":false}}`)
	// azureLatency is the latency report Azure adds to the usage (values
	// chosen; the members as recorded).
	azureLatency = json.RawMessage(`{"engine_tbt_ms":12,"engine_ttft_ms":40,"engine_ttlt_ms":400,"pre_inference_ms":150,"service_tbt_ms":12,"service_ttft_ms":230,"service_ttlt_ms":600,"total_duration_ms":500,"user_visible_ttft_ms":90}`)
	// azureRespFilters is a completed Responses answer's content_filters
	// (testdata/recorded/azure/responses-simple.json, offsets chosen).
	azureRespFilters = json.RawMessage(`[{"blocked":false,"source_type":"prompt","content_filter_raw":[],"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"jailbreak":{"detected":false,"filtered":false}},"content_filter_offsets":{"start_offset":0,"end_offset":100,"check_offset":0}},{"blocked":false,"source_type":"completion","content_filter_raw":[],"content_filter_results":{"protected_material_text":{"detected":false,"filtered":false},"protected_material_code":{"detected":false,"filtered":false},"hate":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"}},"content_filter_offsets":{"start_offset":0,"end_offset":100,"check_offset":0}}]`)
	azureNoFilter    = json.RawMessage(`{}`)
	azureNull        = json.RawMessage(`null`)
)

// azureAnnotate turns an OpenAI chat answer into Azure's: the filter
// results and the usage's latency report added, a null
// system_fingerprint, members in name order as Azure writes them; a
// stream opens with the prompt's filter results.
func azureAnnotate(a *answer) {
	a.body = append(azureChunk(a.body, false), '\n')
	events := make([]streamEvent, 0, len(a.events)+1)
	events = append(events, dataEvent(mustJSON(map[string]any{"choices": []any{}, "created": 0, "id": "", "model": "",
		"object": "", "prompt_filter_results": azurePromptFilter})))
	for _, e := range a.events {
		if len(e.data) > 0 {
			e.data = azureChunk(e.data, true)
		}
		events = append(events, e)
	}
	a.events = events
}

// azureChunk annotates one answer or stream chunk.
func azureChunk(b []byte, chunk bool) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return b
	}
	top["system_fingerprint"] = azureNull
	if !chunk {
		top["prompt_filter_results"] = azurePromptFilter
		var usage map[string]json.RawMessage
		if json.Unmarshal(top["usage"], &usage) == nil && usage != nil {
			usage["latency_checkpoint"] = azureLatency
			top["usage"] = mustJSON(usage)
		}
	} else if u := top["usage"]; len(u) > 0 && string(u) != "null" {
		top["latency_checkpoint"] = azureLatency
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) == nil {
		for _, c := range choices {
			switch {
			case !chunk:
				c["content_filter_results"] = azureAnswerFilter
			case strings.Contains(string(c["delta"]), `"content":"`) && !strings.Contains(string(c["delta"]), `"content":""`):
				c["content_filter_results"] = azureDeltaFilter
			default:
				c["content_filter_results"] = azureNoFilter
			}
		}
		top["choices"] = mustJSON(choices)
	}
	return mustJSON(top)
}

// Entra is a simulated Microsoft Entra ID tenant: the OpenID
// configuration and the token endpoint of one tenant, over TLS on loopback
// (Microsoft's authentication library accepts only an https authority).
// A simulator whose [Config.Entra] names it accepts its live tokens.
type Entra struct {
	mu      sync.Mutex
	srv     *httptest.Server
	cfg     EntraConfig
	issued  map[string]time.Time // token → expiry
	tokens  int                  // tokens issued
	failing bool
}

// EntraConfig is the simulated tenant.
type EntraConfig struct {
	// TenantID, ClientID and ClientSecret are the one service principal
	// the token endpoint knows.
	TenantID, ClientID, ClientSecret string
	// ExpiresIn are the lifetimes of the tokens issued, in order; the
	// last one repeats. Default: one hour.
	ExpiresIn []time.Duration
}

// StartEntra serves a tenant on a loopback TLS listener. It answers what
// Microsoft's authentication library asks of an authority with instance
// discovery disabled: GET /{tenant}/v2.0/.well-known/openid-configuration
// (the authorization and token endpoints and the issuer, the members the
// library requires) and POST /{tenant}/oauth2/v2.0/token with the
// client-credentials grant (token_type, expires_in, ext_expires_in and
// access_token, as the identity platform's client-credentials flow
// documents).
func StartEntra(cfg EntraConfig) *Entra {
	e := &Entra{cfg: cfg, issued: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{tenant}/v2.0/.well-known/openid-configuration", e.openIDConfig)
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", e.token)
	e.srv = httptest.NewTLSServer(mux)
	return e
}

// Authority returns the authority host (for AZURE_AUTHORITY_HOST).
func (e *Entra) Authority() string { return e.srv.URL }

// CAPEM returns the PEM of the certificate to trust for the authority.
func (e *Entra) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.srv.Certificate().Raw})
}

// Tokens returns how many tokens the endpoint has issued.
func (e *Entra) Tokens() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tokens
}

// SetFailing makes the token endpoint answer 500 (true) or serve again
// (false).
func (e *Entra) SetFailing(failing bool) {
	e.mu.Lock()
	e.failing = failing
	e.mu.Unlock()
}

// Close stops the tenant.
func (e *Entra) Close() { e.srv.Close() }

func (e *Entra) openIDConfig(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	if tenant != e.cfg.TenantID {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_tenant", "error_description": "AADSTS90002: Tenant '" + tenant + "' not found."})
		return
	}
	base := "https://" + r.Host + "/" + tenant
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"issuer":                                base + "/v2.0",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
	})
}

func (e *Entra) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "AADSTS900144: The request body must contain the following parameter: 'grant_type'."})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.failing:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "temporarily_unavailable", "error_description": "AADSTS50001: The service is temporarily unavailable."})
		return
	case r.PathValue("tenant") != e.cfg.TenantID || r.PostForm.Get("grant_type") != "client_credentials":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "AADSTS90002: unknown tenant or grant."})
		return
	case r.PostForm.Get("client_id") != e.cfg.ClientID || r.PostForm.Get("client_secret") != e.cfg.ClientSecret:
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
		return
	case !slices.Contains(strings.Fields(r.PostForm.Get("scope")), "https://cognitiveservices.azure.com/.default"):
		// The library adds the OpenID scopes (openid offline_access
		// profile) to the one asked for.
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_scope", "error_description": "AADSTS70011: The provided value for the input parameter 'scope' is not valid."})
		return
	}
	life := time.Hour
	if n := len(e.cfg.ExpiresIn); n > 0 {
		life = e.cfg.ExpiresIn[min(e.tokens, n-1)]
	}
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	tok := "eyJ0eXAiOiJKV1QifQ." + hex.EncodeToString(raw[:])
	e.issued[tok] = time.Now().Add(life)
	e.tokens++
	secs := int(life / time.Second)
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok})
}

// valid reports whether a bearer token was issued here and is live.
func (e *Entra) valid(tok string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.issued[tok]
	return ok && time.Now().Before(exp)
}

// azureCached is the part of a chat prompt Azure's prompt cache serves:
// a prompt seen before with the same first message is cached in
// 128-token increments past its first 1,024 tokens, as Microsoft's prompt
// caching guide describes (learn.microsoft.com/azure/foundry/openai/
// how-to/prompt-caching); a first sight, or a prompt under 1,024 tokens,
// none.
func (s *Server) azureCached(q *chatRequest, prompt int) int {
	if len(q.Messages) == 0 {
		return 0
	}
	key := string(q.Messages[0].Content)
	s.mu.Lock()
	prev, seen := s.azurePrompts[key]
	s.azurePrompts[key] = prompt
	s.mu.Unlock()
	n := min(prev, prompt)
	if !seen || n < 1024 {
		return 0
	}
	return 1024 + (n-1024)/128*128
}
