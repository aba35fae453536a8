package simulator

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// The Vercel-AI-Gateway-like marketplace, answering as the live API does
// (testdata/recorded/vercel): the model echoed as asked, the routing report
// inside the choice, the billed cost in usage and, as a string, beside the
// report.

// vcAnswer is a non-stream answer, in the recorded member order.
type vcAnswer struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []vcChoice `json:"choices"`
	Usage             vcUsage    `json:"usage"`
	SystemFingerprint string     `json:"system_fingerprint"`
	ServiceTier       string     `json:"service_tier,omitempty"`
	GenerationID      string     `json:"generationId"`
}

type vcChoice struct {
	Index        int       `json:"index"`
	Message      vcMessage `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type vcMessage struct {
	Role             string       `json:"role"`
	Content          *string      `json:"content"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
	ProviderMetadata vcMetadata   `json:"provider_metadata"`
}

// vcMetadata is provider_metadata: the serving provider's own report
// (recorded for Anthropic, OpenAI and Google) beside the gateway's.
type vcMetadata struct {
	Anthropic *vcAnthropicMeta `json:"anthropic,omitempty"`
	OpenAI    *vcOpenAIMeta    `json:"openai,omitempty"`
	Google    *vcGoogleMeta    `json:"google,omitempty"`
	Gateway   vcGateway        `json:"gateway"`
}

type vcAnthropicMeta struct {
	Usage                    anthUsage `json:"usage"`
	CacheCreationInputTokens int       `json:"cacheCreationInputTokens"`
	StopSequence             *string   `json:"stopSequence"`
	Iterations               *struct{} `json:"iterations"`
	Container                *struct{} `json:"container"`
	ContextManagement        *struct{} `json:"contextManagement"`
}

type vcOpenAIMeta struct {
	ResponseID  string `json:"responseId"`
	ServiceTier string `json:"serviceTier"`
}

type vcGoogleMeta struct {
	PromptFeedback     *struct{} `json:"promptFeedback"`
	GroundingMetadata  *struct{} `json:"groundingMetadata"`
	URLContextMetadata *struct{} `json:"urlContextMetadata"`
	SafetyRatings      *struct{} `json:"safetyRatings"`
	UsageMetadata      struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

type vcGateway struct {
	Routing                vcRouting `json:"routing"`
	Cost                   string    `json:"cost"`
	MarketCost             string    `json:"marketCost"`
	GenerationID           string    `json:"generationId"`
	BillableWebSearchCalls int       `json:"billableWebSearchCalls"`
}

type vcRouting struct {
	OriginalModelID            string           `json:"originalModelId"`
	ResolvedProvider           string           `json:"resolvedProvider"`
	ResolvedProviderAPIModelID string           `json:"resolvedProviderApiModelId"`
	InternalResolvedModelID    string           `json:"internalResolvedModelId"`
	FallbacksAvailable         []string         `json:"fallbacksAvailable"`
	InternalReasoning          string           `json:"internalReasoning"`
	PlanningReasoning          string           `json:"planningReasoning"`
	CanonicalSlug              string           `json:"canonicalSlug"`
	FinalProvider              string           `json:"finalProvider"`
	Attempts                   []vcAttempt      `json:"attempts"`
	ModelAttemptCount          int              `json:"modelAttemptCount"`
	ModelAttempts              []vcModelAttempt `json:"modelAttempts"`
	TotalProviderAttemptCount  int              `json:"totalProviderAttemptCount"`
}

type vcAttempt struct {
	Provider           string  `json:"provider"`
	InternalModelID    string  `json:"internalModelId"`
	ProviderAPIModelID string  `json:"providerApiModelId"`
	CredentialType     string  `json:"credentialType"`
	Success            bool    `json:"success"`
	Error              string  `json:"error,omitempty"`
	StartTime          float64 `json:"startTime"`
	EndTime            float64 `json:"endTime"`
	StatusCode         int     `json:"statusCode"`
	ProviderResponseID string  `json:"providerResponseId,omitempty"`
}

type vcModelAttempt struct {
	ModelID              string      `json:"modelId"`
	CanonicalSlug        string      `json:"canonicalSlug"`
	Success              bool        `json:"success"`
	ProviderAttemptCount int         `json:"providerAttemptCount"`
	ProviderAttempts     []vcAttempt `json:"providerAttempts"`
}

// vcUsage is the billed usage: cost and market_cost in USD as numbers, the
// OpenRouter-named cost_details the live API fills with zeros.
type vcUsage struct {
	PromptTokens        int     `json:"prompt_tokens"`
	CompletionTokens    int     `json:"completion_tokens"`
	TotalTokens         int     `json:"total_tokens"`
	Cost                float64 `json:"cost"`
	IsBYOK              bool    `json:"is_byok"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
		VideoTokens  int `json:"video_tokens"`
	} `json:"prompt_tokens_details"`
	CostDetails struct {
		UpstreamInferenceCost            *float64 `json:"upstream_inference_cost"`
		UpstreamInferencePromptCost      float64  `json:"upstream_inference_prompt_cost"`
		UpstreamInferenceCompletionsCost float64  `json:"upstream_inference_completions_cost"`
	} `json:"cost_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
		ImageTokens     int `json:"image_tokens"`
	} `json:"completion_tokens_details"`
	CacheCreationInputTokens int     `json:"cache_creation_input_tokens"`
	MarketCost               float64 `json:"market_cost"`
}

// vcChunk is a stream chunk, in the recorded member order.
type vcChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []vcChunkChoice `json:"choices"`
	Usage             *vcUsage        `json:"usage,omitempty"`
	SystemFingerprint string          `json:"system_fingerprint"`
	ServiceTier       string          `json:"service_tier,omitempty"`
	GenerationID      string          `json:"generationId,omitempty"`
}

type vcChunkChoice struct {
	Index        int       `json:"index"`
	Delta        vcDelta   `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type vcDelta struct {
	Role             string        `json:"role,omitempty"`
	Content          string        `json:"content,omitempty"`
	ToolCalls        []oaCallDelta `json:"tool_calls,omitempty"`
	ProviderMetadata *vcMetadata   `json:"provider_metadata,omitempty"`
}

func vercelShape(status int, msg string) any {
	typ := "invalid_request_error"
	switch {
	case status == 429:
		typ = "rate_limit_exceeded"
	case status == 401 || status == 403:
		typ = "authentication_error"
	case status == 404:
		typ = "model_not_found"
	case status >= 500:
		typ = "internal_server_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ}}
}

func vercelOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(vercelShape(400, fmt.Sprintf("prompt is too long: %d tokens > %d maximum for %s", prompt, m.ContextWindow, m.Slug)))
	return failure{status: http.StatusBadRequest, body: b}
}

// vercelPlan resolves a request's model and providerOptions.gateway into
// candidates, as every Vercel-like API does: the model, then the gateway's
// fallback models, each over its providers in the gateway's order.
func (s *Server) vercelPlan(model string, g *vercelGateway) ([]candidate, *routeError) {
	if g != nil && g.Sort != "" {
		if _, ok := vercelSort[g.Sort]; !ok {
			return nil, &routeError{status: http.StatusBadRequest, msg: fmt.Sprintf("providerOptions.gateway.sort: invalid value %q (expected cost, ttft or tps)", g.Sort)}
		}
	}
	chain := []string{model}
	if g != nil {
		for _, m := range g.Models {
			if !containsFold(chain, m) {
				chain = append(chain, m)
			}
		}
	}
	var cands []candidate
	policy := false
	for _, ref := range chain {
		m, ok := s.cfg.marketModel(KindVercel, ref)
		if !ok {
			return nil, &routeError{status: http.StatusNotFound, msg: fmt.Sprintf("Model '%s' not found", ref)}
		}
		eps, byPolicy := vercelFiltered(m, g, s.vercelMatch)
		policy = policy || byPolicy
		for _, e := range eps {
			cands = append(cands, candidate{m, e})
		}
	}
	if len(cands) == 0 && policy {
		return nil, &routeError{status: http.StatusNotFound, msg: g.policyMessage(model), policy: true}
	}
	if len(cands) == 0 {
		return nil, &routeError{status: http.StatusNotFound, msg: fmt.Sprintf("No providers available for model '%s' with the requested provider options", model), noProviders: true}
	}
	return cands, nil
}

func (s *Server) handleVercel(w http.ResponseWriter, r *http.Request) {
	var q chatRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return vercelShape(400, err.Error()) })
	if !ok {
		return
	}
	cands, rerr := s.vercelPlan(q.Model, q.ProviderOptions.gateway())
	if rerr != nil && rerr.policy {
		writeJSON(w, rerr.status, vercelPolicyError(rerr.msg))
		return
	}
	if rerr != nil {
		writeJSON(w, rerr.status, vercelShape(rerr.status, rerr.msg))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindVercel, hdr, q.Stream, prompt, cands, anyAttempt(vercelShape), vercelOverflow)
	if !ok {
		return
	}
	s.serveAnswer(w, r, q.Stream, s.vercelAnswer(&q, cands, res, prompt, sc), res.fault)
}

// vercelMatch reports whether a provider reference of a request (the
// gateway's own name, "bedrock", or a catalog slug; a "/tag" picks one
// endpoint) names the endpoint.
func (s *Server) vercelMatch(ref string, e Endpoint) bool {
	if providerMatches(ref, e.Slug()) {
		return true
	}
	name := s.cfg.providerName(KindVercel, e)
	if e.Tag != "" {
		return providerMatches(ref, name+"/"+e.Tag)
	}
	return providerMatches(ref, name)
}

// vercelAPIModel is the id the serving provider's API knows the model by, as
// the routing report gives it: a first-party provider's dated snapshot, any
// other provider's own id.
func vercelAPIModel(c candidate) string {
	id := c.model.nativeID(c.ep.Provider)
	switch c.ep.Provider {
	case "openai":
		return dated(id, openAISnapshots, openAISuffix)
	case "anthropic":
		return dated(id, anthropicSnapshots, anthropicSuffix)
	}
	return id
}

// vercelAnswer renders a served attempt with its routing report: the
// default text, or what the request's directives script.
func (s *Server) vercelAnswer(q *chatRequest, cands []candidate, res walkResult, prompt int, sc *script) *answer {
	c := res.served
	text := sc.textOr(answerText(c.model.Slug, c.ep.Slug()))
	call := sc.toolCall()
	out := estimateTokens(len(text))
	finish := "stop"
	msg := vcMessage{Role: "assistant", Content: &text}
	if call != nil {
		out, finish = estimateTokens(len(call.name)+len(call.args)), "tool_calls"
		msg.Content = nil
		msg.ToolCalls = []oaToolCall{{ID: chatCallID(c.ep.Provider, call), Type: "function",
			Function: oaFunc{Name: call.name, Arguments: call.args}}}
	}
	created := time.Now().Unix()
	id := vercelID(s.seq.Add(1))
	fp := fingerprint(id, lowerAlnum)
	tier := ""
	if c.ep.Provider == "openai" {
		tier = "default"
	}
	cost := usd(float64(prompt)*c.ep.PriceIn/1e6 + float64(out)*c.ep.PriceOut/1e6)
	u := vcUsage{PromptTokens: prompt, CompletionTokens: out, TotalTokens: prompt + out, Cost: cost, MarketCost: cost}
	meta := vcMetadata{Gateway: vcGateway{Routing: s.vercelRouting(q, cands, res), Cost: usdString(cost),
		MarketCost: usdString(cost), GenerationID: id}}
	switch name := s.cfg.providerName(KindVercel, c.ep); {
	case c.ep.Provider == "anthropic":
		meta.Anthropic = &vcAnthropicMeta{Usage: anthropicUsage(prompt, out)}
	case c.ep.Provider == "openai":
		meta.OpenAI = &vcOpenAIMeta{ResponseID: "resp_" + token(id, 50, hexDigits), ServiceTier: "default"}
	case strings.HasPrefix(c.model.Slug, "google/") && (name == "vertex" || name == "google"):
		g := &vcGoogleMeta{}
		g.UsageMetadata.PromptTokenCount, g.UsageMetadata.CandidatesTokenCount, g.UsageMetadata.TotalTokenCount = prompt, out, prompt+out
		meta.Google = g
	}

	a := &answer{streamType: "text/event-stream", done: true}
	a.body = mustJSON(vcAnswer{ID: id, Object: "chat.completion", Created: created, Model: q.Model, Usage: u,
		SystemFingerprint: fp, ServiceTier: tier, GenerationID: id,
		Choices: []vcChoice{{Message: withMeta(msg, meta), FinishReason: finish}}})

	chunk := func(d vcDelta, finish *string) vcChunk {
		return vcChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: q.Model,
			Choices: []vcChunkChoice{{Delta: d, FinishReason: finish}}, SystemFingerprint: fp}
	}
	a.events = append(a.events, dataEvent(mustJSON(chunk(vcDelta{Role: "assistant"}, nil))))
	if call != nil {
		first := oaCallDelta{ID: msg.ToolCalls[0].ID, Type: "function", Function: oaFunc{Name: call.name}}
		a.events = append(a.events, dataEvent(mustJSON(chunk(vcDelta{ToolCalls: []oaCallDelta{first}}, nil))))
		for _, p := range argPieces(call.args) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(vcDelta{ToolCalls: []oaCallDelta{{Function: oaFunc{Arguments: p}}}}, nil))))
		}
	} else {
		for _, p := range pieces(text) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(vcDelta{Content: p}, nil))))
		}
	}
	// The last chunk carries the finish, the routing report and — when the
	// request asked for it, as every recorded stream request did — the
	// usage: no separate usage-only chunk.
	last := chunk(vcDelta{ProviderMetadata: &meta}, &finish)
	last.ServiceTier, last.GenerationID = tier, id
	if q.includeUsage() {
		last.Usage = &u
	}
	a.events = append(a.events, dataEvent(mustJSON(last)))

	// No recording shows the gateway failing after generation started; the
	// simulator answers with its error shape (a 500, or one error event that
	// ends the stream).
	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		b := mustJSON(vercelShape(http.StatusInternalServerError, "simulated fault: error after generation started"))
		if !stream {
			return http.StatusInternalServerError, b, nil
		}
		return 0, nil, []streamEvent{dataEvent(b)}
	}
	return a
}

// withMeta is a message carrying the gateway's report.
func withMeta(m vcMessage, meta vcMetadata) vcMessage {
	m.ProviderMetadata = meta
	return m
}

// vercelRouting is the gateway's routing report of a served request: the
// plan (the first model's providers), every provider attempt, and the
// attempts grouped by model.
func (s *Server) vercelRouting(q *chatRequest, cands []candidate, res walkResult) vcRouting {
	first := cands[0]
	name := func(e Endpoint) string { return s.cfg.providerName(KindVercel, e) }
	var planned []string
	for _, c := range cands {
		if c.model == first.model && !containsFold(planned, name(c.ep)) {
			planned = append(planned, name(c.ep))
		}
	}
	resolved := name(first.ep)
	_, modelName, _ := strings.Cut(first.model.Slug, "/")
	fallbacks := planned[1:]
	reasoning := fmt.Sprintf("Selected %s as preferred provider for %s. %d fallback(s) available", resolved, modelName, len(fallbacks))
	if len(fallbacks) > 0 {
		reasoning += ": " + strings.Join(fallbacks, ", ")
	}
	order := make([]string, len(planned))
	for i, p := range planned {
		order[i] = p + "(system)"
	}
	rt := vcRouting{
		OriginalModelID: q.Model, ResolvedProvider: resolved, ResolvedProviderAPIModelID: vercelAPIModel(first),
		InternalResolvedModelID: resolved + ":" + vercelAPIModel(first), FallbacksAvailable: append([]string{}, fallbacks...),
		InternalReasoning: reasoning,
		PlanningReasoning: "System credentials planned for: " + strings.Join(planned, ", ") +
			". Total execution order: " + strings.Join(order, " → "),
		CanonicalSlug: first.model.upstreamID(KindVercel), FinalProvider: name(res.served.ep),
		Attempts: []vcAttempt{}, ModelAttempts: []vcModelAttempt{},
	}
	for _, at := range res.attempts {
		c := candidate{at.model, at.ep}
		pa := vcAttempt{Provider: name(at.ep), ProviderAPIModelID: vercelAPIModel(c), CredentialType: "system",
			Success: at.status == http.StatusOK, StartTime: s.sinceStart(at.start), EndTime: s.sinceStart(at.end),
			StatusCode: at.status}
		pa.InternalModelID = pa.Provider + ":" + pa.ProviderAPIModelID
		if pa.Success {
			pa.ProviderResponseID = token(fmt.Sprint(pa.InternalModelID, at.start.UnixNano()), 23, alnum)
		} else {
			pa.Error = at.errMsg
		}
		rt.Attempts = append(rt.Attempts, pa)
		n := len(rt.ModelAttempts)
		if n == 0 || rt.ModelAttempts[n-1].CanonicalSlug != at.model.upstreamID(KindVercel) {
			rt.ModelAttempts = append(rt.ModelAttempts, vcModelAttempt{ModelID: pa.InternalModelID,
				CanonicalSlug: at.model.upstreamID(KindVercel), ProviderAttempts: []vcAttempt{}})
			n++
		}
		ma := &rt.ModelAttempts[n-1]
		ma.ProviderAttempts = append(ma.ProviderAttempts, pa)
		ma.ProviderAttemptCount++
		ma.Success = ma.Success || pa.Success
	}
	rt.ModelAttemptCount = len(rt.ModelAttempts)
	rt.TotalProviderAttemptCount = len(rt.Attempts)
	return rt
}

// sinceStart is a time as the gateway's report gives it: milliseconds, with
// a fraction, since the server started.
func (s *Server) sinceStart(t time.Time) float64 {
	return math.Round(float64(t.Sub(s.started).Nanoseconds())/1e3) / 1e3
}
