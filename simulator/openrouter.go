package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The OpenRouter-like marketplace, answering as the live API does
// (testdata/recorded/openrouter).

const orAuto = "openrouter/auto"

// orKeepAlive is one unit of the whitespace OpenRouter writes before a
// non-stream answer while the provider works; every recorded body that kept
// its bytes starts with at least one.
const orKeepAlive = "\n         \n"

// orProcessing is the comment OpenRouter interleaves in its streams.
const orProcessing = "OPENROUTER PROCESSING"

// orMetadataHeader asks for the router's report (openrouter_metadata), as
// OpenRouter's router-metadata guide documents.
const orMetadataHeader = "X-OpenRouter-Metadata"

// orAnswer is a non-stream answer, in the recorded member order.
type orAnswer struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	Provider          string      `json:"provider"`
	SystemFingerprint *string     `json:"system_fingerprint"`
	ServiceTier       string      `json:"service_tier,omitempty"`
	Choices           []orChoice  `json:"choices"`
	Usage             orUsage     `json:"usage"`
	Metadata          *orMetadata `json:"openrouter_metadata,omitempty"`
}

type orChoice struct {
	Index              int       `json:"index"`
	Logprobs           *struct{} `json:"logprobs"`
	FinishReason       string    `json:"finish_reason"`
	NativeFinishReason *string   `json:"native_finish_reason"`
	Message            orMessage `json:"message"`
	// Error is where a failure after generation started is reported (the
	// error-handling guide's non-stream example).
	Error *orError `json:"error,omitempty"`
}

type orMessage struct {
	Role      string       `json:"role"`
	Content   *string      `json:"content"`
	Refusal   *string      `json:"refusal"`
	Reasoning *string      `json:"reasoning"`
	ToolCalls []orToolCall `json:"tool_calls,omitempty"`
}

// orToolCall is a message's tool call, in the recorded member order.
type orToolCall struct {
	Type     string `json:"type"`
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function oaFunc `json:"function"`
}

// orChunk is a stream chunk, in the recorded member order.
type orChunk struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	Created     int64           `json:"created"`
	Model       string          `json:"model"`
	Provider    string          `json:"provider"`
	ServiceTier string          `json:"service_tier,omitempty"`
	Error       *orError        `json:"error,omitempty"`
	Choices     []orChunkChoice `json:"choices"`
	Usage       *orUsage        `json:"usage,omitempty"`
	Metadata    *orMetadata     `json:"openrouter_metadata,omitempty"`
}

type orChunkChoice struct {
	Index              int     `json:"index"`
	Delta              orDelta `json:"delta"`
	FinishReason       *string `json:"finish_reason"`
	NativeFinishReason *string `json:"native_finish_reason"`
}

type orDelta struct {
	Content   *string       `json:"content"`
	Role      string        `json:"role"`
	ToolCalls []oaCallDelta `json:"tool_calls,omitempty"`
}

type orError struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// orUsage is the billed usage, cost in USD, as the 2026 recordings carry it.
type orUsage struct {
	PromptTokens        int     `json:"prompt_tokens"`
	CompletionTokens    int     `json:"completion_tokens"`
	TotalTokens         int     `json:"total_tokens"`
	Cost                float64 `json:"cost"`
	IsBYOK              bool    `json:"is_byok"`
	PromptTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
		AudioTokens      int `json:"audio_tokens"`
		VideoTokens      int `json:"video_tokens"`
	} `json:"prompt_tokens_details"`
	CostDetails struct {
		UpstreamInferenceCost            float64 `json:"upstream_inference_cost"`
		UpstreamInferencePromptCost      float64 `json:"upstream_inference_prompt_cost"`
		UpstreamInferenceCompletionsCost float64 `json:"upstream_inference_completions_cost"`
	} `json:"cost_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
		ImageTokens     int `json:"image_tokens"`
		AudioTokens     int `json:"audio_tokens"`
	} `json:"completion_tokens_details"`
}

// orMetadata is the router's report, asked for with X-OpenRouter-Metadata,
// in the shape OpenRouter's router-metadata guide and API reference give
// (no recording has one).
type orMetadata struct {
	Attempt   int         `json:"attempt"`
	Attempts  []orAttempt `json:"attempts"`
	Endpoints struct {
		Available []orEndpoint `json:"available"`
		Total     int          `json:"total"`
	} `json:"endpoints"`
	IsBYOK    bool    `json:"is_byok"`
	Region    *string `json:"region"`
	Requested string  `json:"requested"`
	Strategy  string  `json:"strategy"`
	Summary   string  `json:"summary"`
}

type orAttempt struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Status   int    `json:"status"`
}

type orEndpoint struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Selected bool   `json:"selected"`
}

// orShape is an error of OpenRouter's own: no provider had a say.
func orShape(status int, msg string) any {
	return map[string]any{"error": map[string]any{"code": status, "message": msg}}
}

// orProviderError is a provider's failure as OpenRouter relays it (the
// recorded provider errors): "Provider returned error", the provider's own
// answer as a string in metadata.raw, its display name in
// metadata.provider_name, and the account's user_id.
func (s *Server) orProviderError(c candidate, status int, msg string) any {
	return map[string]any{
		"error": map[string]any{"message": "Provider returned error", "code": status,
			"metadata": map[string]any{"raw": msg, "provider_name": s.cfg.providerName(KindOpenRouter, c.ep)}},
		"user_id": "org_" + token("simulator account", 27, alnum),
	}
}

func orOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": 400,
		"message": fmt.Sprintf("This endpoint's maximum context length is %d tokens. However, you requested about %d tokens (%d of text input, 0 in the output). Please reduce the length of either one, or use the context-compression plugin to compress your prompt automatically.",
			m.ContextWindow, prompt, prompt),
		"metadata": map[string]any{"provider_name": nil},
	}})
	return failure{status: http.StatusBadRequest, body: b}
}

// orNativeFinish is the provider's own finish reason for a plain answer or
// a tool call, as the recordings show it per provider ("completed" from
// OpenAI's Responses API, "end_turn" and "tool_use" from Anthropic's
// models, "STOP" from Google AI Studio).
func orNativeFinish(provider string, call bool) string {
	switch provider {
	case "openai":
		return "completed"
	case "anthropic", "amazon-bedrock":
		if call {
			return "tool_use"
		}
		return "end_turn"
	case "google-ai-studio":
		return "STOP"
	}
	if call {
		return "tool_calls"
	}
	return "stop"
}

// chatCallID is a tool call's id in the form the serving provider gives
// it, as the marketplaces' recordings show: OpenAI's "call_", Anthropic's
// "toolu_01", Bedrock's "toolu_bdrk_01", Google's "tool_<name>_".
func chatCallID(provider string, c *toolCall) string {
	switch provider {
	case "anthropic":
		return c.callID("toolu_01", 22)
	case "amazon-bedrock":
		return c.callID("toolu_bdrk_01", 22)
	case "google-ai-studio", "google-vertex":
		return c.callID("tool_"+c.name+"_", 20)
	}
	return c.callID("call_", 24)
}

// orModelID is the id OpenRouter reports for the model that served: its
// canonical slug, which the catalog holds as the model's first alias. A
// catalog alias without a date is reported as written; the date the live
// API would add is not the simulator's to make up, and the catalog reads
// the id back either way.
func orModelID(m *Model) string {
	if len(m.Aliases) > 0 {
		return m.Aliases[0]
	}
	return m.upstreamID(KindOpenRouter)
}

// orRoute is what an OpenRouter request asks of the router, whatever its
// API: the model, the fallback models, the provider preferences and the
// auto router's allowed models.
type orRoute struct {
	model    string
	models   []string
	provider *orProvider
	allowed  []string
}

// orPlan is the router's plan for a request: the (model, endpoint)
// candidates in the order it tries them, the chain of models asked for, the
// strategy it reports and the first model resolved.
type orPlan struct {
	cands    []candidate
	chain    []string
	strategy string
	primary  *Model
}

// routeError is a request the router refuses before any attempt: its
// status and message; noProviders marks the 404 of a request whose
// preferences leave no endpoint, unknownModel a model not served.
type routeError struct {
	status      int
	msg         string
	noProviders bool
	// unknownModel marks a model the marketplace does not serve.
	unknownModel bool
	// excludedBy names the data-policy filter that left no endpoint
	// (datapolicy.go); the 404 then carries OpenRouter's availability
	// object.
	excludedBy string
	// policy marks a Vercel request whose data policy left no provider.
	policy bool
}

// plan resolves an OpenRouter request's models and provider preferences
// into candidates, as every OpenRouter API does.
func (s *Server) orPlan(rt orRoute) (orPlan, *routeError) {
	var p orPlan
	if len(rt.models) > 3 {
		return p, &routeError{status: http.StatusBadRequest, msg: "'models' array must have 3 items or fewer"}
	}
	sortKey, err := rt.provider.sortKey()
	if err == nil {
		err = rt.provider.validate()
	}
	if err != nil {
		return p, &routeError{status: http.StatusBadRequest, msg: err.Error()}
	}
	excluded := ""
	if rt.model != "" {
		p.chain = append(p.chain, rt.model)
	}
	for _, m := range rt.models {
		if !containsFold(p.chain, m) {
			p.chain = append(p.chain, m)
		}
	}
	if len(p.chain) == 0 {
		return p, &routeError{status: http.StatusBadRequest, msg: "No models provided"}
	}
	// The strategy values are the API reference's RoutingStrategy.
	p.strategy = "direct"
	if len(rt.models) > 0 {
		p.strategy = "fallback"
	}
	for _, ref := range p.chain {
		key, slug := sortKey, ref
		switch {
		case strings.HasSuffix(slug, ":nitro"):
			slug, key = strings.TrimSuffix(slug, ":nitro"), "throughput"
		case strings.HasSuffix(slug, ":floor"):
			slug, key = strings.TrimSuffix(slug, ":floor"), "price"
		}
		var m *Model
		if strings.EqualFold(slug, orAuto) {
			p.strategy = "auto"
			m, _ = s.cfg.autoPick(rt.allowed, func(m *Model) bool { return len(openRouterEndpoints(m, rt.provider, key)) > 0 })
			if m == nil {
				continue
			}
		} else {
			var ok bool
			if m, ok = s.cfg.marketModel(KindOpenRouter, slug); !ok {
				return p, &routeError{status: http.StatusBadRequest, msg: ref + " is not a valid model ID", unknownModel: true}
			}
		}
		if p.primary == nil {
			p.primary = m
		}
		eps, ex := openRouterFiltered(m, rt.provider, key)
		if excluded == "" && ex != excludedProviders {
			excluded = ex
		}
		for _, e := range eps {
			p.cands = append(p.cands, candidate{m, e})
		}
	}
	if len(p.cands) == 0 && excluded != "" {
		return p, &routeError{status: http.StatusNotFound, excludedBy: excluded}
	}
	if len(p.cands) == 0 {
		return p, &routeError{status: http.StatusNotFound, msg: "No allowed providers are available for the selected model.", noProviders: true}
	}
	return p, nil
}

// allowedModels are the auto router's allowed models among plugins.
func allowedModels(plugins []orPlugin) []string {
	var allowed []string
	for _, p := range plugins {
		if p.ID == "auto-router" {
			allowed = append(allowed, p.AllowedModels...)
		}
	}
	return allowed
}

func (s *Server) handleOpenRouter(w http.ResponseWriter, r *http.Request) {
	var q chatRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return orShape(400, err.Error()) })
	if !ok {
		return
	}
	plan, rerr := s.orPlan(orRoute{model: q.Model, models: q.Models, provider: q.Provider, allowed: allowedModels(q.Plugins)})
	if rerr != nil {
		if rerr.excludedBy != "" {
			writeJSON(w, rerr.status, orPolicyError(plan.chain, plan.primary, rerr.excludedBy))
			return
		}
		if rerr.noProviders {
			writeJSON(w, rerr.status, s.orNoProviders(plan.primary, q.Provider))
			return
		}
		writeJSON(w, rerr.status, orShape(rerr.status, rerr.msg))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindOpenRouter, hdr, q.Stream, prompt, plan.cands, s.orProviderError, orOverflow)
	if !ok {
		return
	}
	s.serveAnswer(w, r, q.Stream, s.openRouterAnswer(res.served, prompt, s.orMeta(r, plan, res), sc), res.fault)
}

// orMeta is the router's report when the request asks for it with
// X-OpenRouter-Metadata, else nil.
func (s *Server) orMeta(r *http.Request, plan orPlan, res walkResult) *orMetadata {
	if !strings.EqualFold(r.Header.Get(orMetadataHeader), "enabled") {
		return nil
	}
	return s.orReport(plan.chain[0], plan.strategy, plan.cands, res)
}

// orReport is the router's report of a served request.
func (s *Server) orReport(requested, strategy string, cands []candidate, res walkResult) *orMetadata {
	m := &orMetadata{Attempt: len(res.attempts), Attempts: []orAttempt{}, IsBYOK: false,
		Requested: requested, Strategy: strategy}
	for _, at := range res.attempts {
		m.Attempts = append(m.Attempts, orAttempt{Model: orModelID(at.model), Provider: s.cfg.providerName(KindOpenRouter, at.ep), Status: at.status})
	}
	seen := map[string]bool{}
	served := s.cfg.providerName(KindOpenRouter, res.served.ep)
	for _, c := range cands {
		name := s.cfg.providerName(KindOpenRouter, c.ep)
		key := c.model.Slug + "\x00" + name
		if seen[key] {
			continue
		}
		seen[key] = true
		m.Endpoints.Available = append(m.Endpoints.Available, orEndpoint{Model: orModelID(c.model), Provider: name,
			Selected: c.model == res.served.model && name == served})
	}
	m.Endpoints.Total = len(m.Endpoints.Available)
	m.Summary = fmt.Sprintf("available=%d, selected=%s", m.Endpoints.Total, served)
	return m
}

// openRouterAnswer renders a served attempt: the non-stream body (keep-alive
// whitespace, then compact JSON) and the stream (comments interleaved,
// provider and model on every chunk, the usage with its cost on a last
// chunk that repeats the finish, then [DONE]). The answer is the default
// text, or what the request's directives script.
func (s *Server) openRouterAnswer(c *candidate, prompt int, meta *orMetadata, sc *script) *answer {
	slug := c.ep.Slug()
	text := sc.textOr(answerText(c.model.Slug, slug))
	call := sc.toolCall()
	out := estimateTokens(len(text))
	created := time.Now().Unix()
	id := openRouterID(created, s.seq.Add(1))
	model, provider := orModelID(c.model), s.cfg.providerName(KindOpenRouter, c.ep)
	tier := ""
	if c.ep.Provider == "openai" {
		tier = "default"
	}
	native := orNativeFinish(c.ep.Provider, call != nil)
	finish := "stop"
	msg := orMessage{Role: "assistant", Content: &text}
	if call != nil {
		out, finish = estimateTokens(len(call.name)+len(call.args)), "tool_calls"
		msg.Content = nil
		msg.ToolCalls = []orToolCall{{Type: "function", ID: chatCallID(c.ep.Provider, call),
			Function: oaFunc{Name: call.name, Arguments: call.args}}}
	}
	u := orUsage{PromptTokens: prompt, CompletionTokens: out, TotalTokens: prompt + out}
	in, outCost := usd(float64(prompt)*c.ep.PriceIn/1e6), usd(float64(out)*c.ep.PriceOut/1e6)
	u.Cost = usd(in + outCost)
	u.CostDetails.UpstreamInferenceCost = u.Cost
	u.CostDetails.UpstreamInferencePromptCost = in
	u.CostDetails.UpstreamInferenceCompletionsCost = outCost

	a := &answer{streamType: "text/event-stream", done: true}
	body := mustJSON(orAnswer{ID: id, Object: "chat.completion", Created: created, Model: model, Provider: provider,
		ServiceTier: tier, Usage: u, Metadata: meta,
		Choices: []orChoice{{FinishReason: finish, NativeFinishReason: &native, Message: msg}}})
	keepAlive := []byte(strings.Repeat(orKeepAlive, orKeepAliveUnits(c.ep)))
	a.body = slices.Concat(keepAlive, body)

	chunk := func(d orDelta, finish, nativeFinish *string) orChunk {
		d.Role = "assistant"
		ch := orChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Provider: provider,
			Choices: []orChunkChoice{{Delta: d, FinishReason: finish, NativeFinishReason: nativeFinish}}}
		if finish != nil {
			ch.ServiceTier = tier
		}
		return ch
	}
	str := func(s string) *string { return &s }
	a.events = append(a.events, streamEvent{comment: orProcessing})
	if call != nil {
		// The call opens with its id and name, then an empty piece, then
		// its arguments piece by piece, as recorded.
		first := oaCallDelta{ID: msg.ToolCalls[0].ID, Type: "function", Function: oaFunc{Name: call.name}}
		a.events = append(a.events, dataEvent(mustJSON(chunk(orDelta{ToolCalls: []oaCallDelta{first}}, nil, nil))))
		a.events = append(a.events, streamEvent{comment: orProcessing})
		for _, p := range append([]string{""}, argPieces(call.args)...) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(orDelta{ToolCalls: []oaCallDelta{{Function: oaFunc{Arguments: p}}}}, nil, nil))))
		}
	} else {
		for i, p := range pieces(text) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(orDelta{Content: str(p)}, nil, nil))))
			if i == 0 {
				// The provider is still at work after its first token.
				a.events = append(a.events, streamEvent{comment: orProcessing})
			}
		}
	}
	a.events = append(a.events, dataEvent(mustJSON(chunk(orDelta{Content: str("")}, &finish, &native))))
	last := chunk(orDelta{Content: str("")}, &finish, &native)
	last.Usage, last.Metadata = &u, meta
	a.events = append(a.events, dataEvent(mustJSON(last)))

	// A failure after generation started keeps the 200: the error-handling
	// guide's shapes, an error inside the choice (non-stream) or an error
	// chunk finishing with "error" (stream), which [DONE] follows as in the
	// recorded mid-stream error.
	const failMsg = "simulated fault: provider error after generation started"
	failure := &orError{Code: 502, Message: failMsg, Metadata: map[string]any{"error_type": "provider_unavailable"}}
	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		if !stream {
			errFinish := orAnswer{ID: id, Object: "chat.completion", Created: created, Model: model, Provider: provider,
				ServiceTier: tier, Usage: u,
				Choices: []orChoice{{FinishReason: "error", Message: orMessage{Role: "assistant", Content: str("")}, Error: failure}}}
			return http.StatusOK, slices.Concat(keepAlive, mustJSON(errFinish)), nil
		}
		errFinish := "error"
		ch := chunk(orDelta{Content: str("")}, &errFinish, nil)
		ch.ServiceTier, ch.Error = "", failure
		return 0, nil, []streamEvent{dataEvent(mustJSON(ch)), dataEvent(doneData)}
	}
	return a
}

// orKeepAliveUnits is how many keep-alive units precede a non-stream answer:
// one, and one more for each full 500 ms of the endpoint's typical latency
// (the live API writes them while it waits; the recordings hold 1 to 13).
func orKeepAliveUnits(e Endpoint) int {
	return min(1+int(e.LatencyMs/500), 13)
}

func (s *Server) orNoProviders(m *Model, p *orProvider) any {
	avail := []string{}
	if m != nil {
		for _, e := range m.Endpoints {
			if !containsFold(avail, e.Provider) {
				avail = append(avail, e.Provider)
			}
		}
	}
	req := []string{}
	if p != nil {
		req = append(append(req, p.Order...), p.Only...)
	}
	return map[string]any{"error": map[string]any{
		"message":  "No allowed providers are available for the selected model.",
		"code":     404,
		"metadata": map[string]any{"available_providers": avail, "requested_providers": req},
	}}
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
