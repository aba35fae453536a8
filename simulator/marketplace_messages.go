package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The marketplaces' Anthropic Messages endpoints: OpenRouter's
// POST /api/v1/messages and the Vercel AI Gateway's POST /v1/messages.
// Each takes Anthropic's Messages body with its own routing members, walks
// providers and fallback models as its chat endpoint does, and answers in
// Anthropic's shape with what its reference adds (testdata/recorded/
// ENDPOINTS.md): OpenRouter the serving provider (on the message and on
// message_start), the billed cost in the usage, its router report when
// asked for, and [DONE] after message_stop; the Vercel-like gateway the
// model as asked. Both re-encode the events (no Anthropic padding).

// orMessagesRequest is OpenRouter's Messages body: Anthropic's, and the
// router's members.
type orMessagesRequest struct {
	anthropicRequest
	Models    []string                     `json:"models"`
	Fallbacks []map[string]json.RawMessage `json:"fallbacks"`
	Provider  *orProvider                  `json:"provider"`
	Plugins   []orPlugin                   `json:"plugins"`
	SessionID string                       `json:"session_id"`
}

// vercelMessagesRequest is the Vercel AI Gateway's Messages body:
// Anthropic's, and providerOptions.gateway.
type vercelMessagesRequest struct {
	anthropicRequest
	ProviderOptions *vercelOptions `json:"providerOptions"`
}

// orMessageTypes map a status to the Anthropic error type and OpenRouter's
// canonical error_type its Messages errors carry (OpenRouter's
// errors-and-debugging guide, "Anthropic Messages"; the statuses are the
// API reference's examples).
var orMessageTypes = map[int][2]string{
	400: {"invalid_request_error", "invalid_request"},
	401: {"authentication_error", "authentication"},
	402: {"billing_error", "payment_required"},
	403: {"permission_error", "permission_denied"},
	404: {"not_found_error", "not_found"},
	408: {"timeout_error", "timeout"},
	429: {"rate_limit_error", "rate_limit_exceeded"},
	502: {"api_error", "provider_unavailable"},
	503: {"overloaded_error", "provider_overloaded"},
	529: {"overloaded_error", "provider_overloaded"},
}

// orMessagesError is an error of OpenRouter's Messages endpoint: Anthropic's
// envelope, the canonical error_type inside error, and request_id — null
// before routing, the generation's id after.
func orMessagesError(status int, msg, requestID string) any {
	t, ok := orMessageTypes[status]
	if !ok {
		t = [2]string{"invalid_request_error", "invalid_request"}
		if status >= 500 {
			t = [2]string{"api_error", "server"}
		}
	}
	var id any
	if requestID != "" {
		id = requestID
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": t[0], "message": msg, "error_type": t[1]}, "request_id": id}
}

// orMessagesFallbacks checks the Messages endpoint's own rules on fallbacks (at
// most 3, only model in each, never with models: the model-fallbacks
// guide) and turns them into the router's fallback models.
func orMessagesFallbacks(q *orMessagesRequest) ([]string, string) {
	if len(q.Fallbacks) == 0 {
		return q.Models, ""
	}
	if len(q.Models) > 0 {
		return nil, "fallbacks cannot be combined with models"
	}
	if len(q.Fallbacks) > 3 {
		return nil, "fallbacks must have 3 entries or fewer"
	}
	var models []string
	for i, f := range q.Fallbacks {
		var m string
		if raw, ok := f["model"]; !ok || json.Unmarshal(raw, &m) != nil || m == "" {
			return nil, fmt.Sprintf("fallbacks[%d].model is required", i)
		}
		for k := range f {
			if k != "model" {
				return nil, fmt.Sprintf("fallbacks[%d].%s is not supported: a fallback takes only model", i, k)
			}
		}
		models = append(models, m)
	}
	return models, ""
}

func (s *Server) handleORMessages(w http.ResponseWriter, r *http.Request) {
	var q orMessagesRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return orMessagesError(400, err.Error(), "") })
	if !ok {
		return
	}
	if len(q.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, orMessagesError(400, "Invalid request: messages is required", ""))
		return
	}
	models, problem := orMessagesFallbacks(&q)
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, orMessagesError(400, problem, ""))
		return
	}
	plan, rerr := s.orPlan(orRoute{model: q.Model, models: models, provider: q.Provider, allowed: allowedModels(q.Plugins)})
	if rerr != nil {
		if rerr.excludedBy != "" {
			writeJSON(w, rerr.status, orMessagesPolicyError(plan.chain, plan.primary, rerr.excludedBy))
			return
		}
		if rerr.unknownModel {
			// The Messages endpoint's own answer, as its API reference's
			// 404 example gives it.
			writeJSON(w, http.StatusNotFound, orMessagesError(404, "Model not found", ""))
			return
		}
		writeJSON(w, rerr.status, orMessagesError(rerr.status, rerr.msg, ""))
		return
	}
	created := time.Now().Unix()
	genID := openRouterID(created, s.seq.Add(1))
	shape := func(_ candidate, status int, msg string) any { return orMessagesError(status, msg, genID) }
	overflow := func(m *Model, prompt int) failure {
		b := mustJSON(orMessagesError(400, fmt.Sprintf("This endpoint's maximum context length is %d tokens. However, you requested about %d tokens.", m.ContextWindow, prompt), genID))
		return failure{status: http.StatusBadRequest, body: b}
	}
	prompt := promptTokens(q.System, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindOpenRouter, hdr, q.Stream, prompt, plan.cands, shape, overflow)
	if !ok {
		return
	}
	c := res.served
	ex := &anthExtras{text: answerText(c.model.Slug, c.ep.Slug()), provider: s.cfg.providerName(KindOpenRouter, c.ep),
		price: &c.ep, done: true, meta: s.orMeta(r, plan, res)}
	a := s.anthropicAnswer(c.model, orModelID(c.model), prompt, q.thinks(), sc, ex)
	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		const msg = "simulated fault: provider error after generation started"
		if !stream {
			return http.StatusBadGateway, mustJSON(orMessagesError(502, msg, genID)), nil
		}
		// A mid-stream error is an SSE error event of the same shape, as
		// the errors-and-debugging guide shows it.
		e := orMessagesError(502, msg, genID).(map[string]any)
		delete(e, "request_id")
		return 0, nil, []streamEvent{{name: "error", data: mustJSON(e)}, dataEvent(doneData)}
	}
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}

// orMessageCost prices an answer on its endpoint, in the cost members of
// OpenRouter's Messages usage.
func orMessageCost(e Endpoint, in, out int) *msgCost {
	inCost, outCost := usd(float64(in)*e.PriceIn/1e6), usd(float64(out)*e.PriceOut/1e6)
	c := &msgCost{Cost: usd(inCost + outCost)}
	c.CostDetails.UpstreamInferenceCost = c.Cost
	c.CostDetails.UpstreamInferencePromptCost = inCost
	c.CostDetails.UpstreamInferenceCompletionsCost = outCost
	return c
}

// vercelMessagesShape is an error of the Vercel-like gateway's Messages
// endpoint: Anthropic's envelope, the types by status as Anthropic's
// (the gateway implements Anthropic's specification; its own error body
// is undocumented).
func vercelMessagesShape(status int, msg string) any {
	typ, ok := anthropicTypes[status]
	if !ok {
		typ = "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func (s *Server) handleVercelMessages(w http.ResponseWriter, r *http.Request) {
	var q vercelMessagesRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return vercelMessagesShape(400, err.Error()) })
	if !ok {
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, vercelMessagesShape(400, "model: Field required"))
		return
	}
	if len(q.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, vercelMessagesShape(400, "messages: at least one message is required"))
		return
	}
	cands, rerr := s.vercelPlan(q.Model, q.ProviderOptions.gateway())
	if rerr != nil {
		writeJSON(w, rerr.status, vercelMessagesShape(rerr.status, rerr.msg))
		return
	}
	overflow := func(m *Model, prompt int) failure {
		b := mustJSON(vercelMessagesShape(400, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, m.ContextWindow)))
		return failure{status: http.StatusBadRequest, body: b}
	}
	prompt := promptTokens(q.System, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindVercel, hdr, q.Stream, prompt, cands, anyAttempt(vercelMessagesShape), overflow)
	if !ok {
		return
	}
	c := res.served
	a := s.anthropicAnswer(c.model, q.Model, prompt, q.thinks(), sc, &anthExtras{text: answerText(c.model.Slug, c.ep.Slug())})
	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		const msg = "simulated fault: error after generation started"
		if !stream {
			return http.StatusInternalServerError, mustJSON(vercelMessagesShape(500, msg)), nil
		}
		return 0, nil, []streamEvent{{name: "error", data: mustJSON(vercelMessagesShape(500, msg))}}
	}
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}
