package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The answer shapes still to be replaced by the recorded ones.

// chatAnswer holds what every OpenAI-shaped answer needs.
type chatAnswer struct {
	id, model, provider, text string
	created                   int64
	in, out                   int
	cost                      float64
	extra                     map[string]any // extra top-level fields (provider, metadata)
	finalExtra                map[string]any // extra fields on the final stream chunk only
	usageCost                 bool           // include usage.cost (OpenRouter)
	alwaysUsage               bool           // usage on the final chunk even without include_usage
	orStreamErr               bool           // OpenRouter-style in-band error chunk
}

func (a *chatAnswer) usage() map[string]any {
	u := map[string]any{"prompt_tokens": a.in, "completion_tokens": a.out, "total_tokens": a.in + a.out}
	if a.usageCost {
		u["cost"] = a.cost
	}
	return u
}

func (a *chatAnswer) body() []byte {
	m := map[string]any{
		"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": a.text, "refusal": nil},
		}},
		"usage": a.usage(),
	}
	for k, v := range a.extra {
		m[k] = v
	}
	for k, v := range a.finalExtra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func (a *chatAnswer) chunk(delta map[string]any, finish any) map[string]any {
	m := map[string]any{
		"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
	for k, v := range a.extra {
		m[k] = v
	}
	return m
}

// serveChat writes a served answer, honouring the behaviour fault f.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, q *chatRequest, a *chatAnswer, f *Fault, shape func(int, string) any) {
	body := a.body()
	if s.serveBehaviour(w, r, f, q.Stream, body) {
		return
	}
	if !q.Stream {
		if f != nil && f.Action == FaultStreamErrorAfter {
			if a.orStreamErr {
				// OpenRouter: once generation started the status stays 200
				// and the error is in the body.
				m := map[string]any{}
				_ = json.Unmarshal(body, &m)
				m["error"] = map[string]any{"code": 502, "message": "simulated fault: provider error after generation started"}
				m["choices"] = []any{map[string]any{"index": 0, "finish_reason": "error",
					"message": map[string]any{"role": "assistant", "content": ""}}}
				writeJSON(w, http.StatusOK, m)
				return
			}
			writeJSON(w, http.StatusInternalServerError, shape(http.StatusInternalServerError, "simulated fault: error after generation started"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	e := s.newSSE(w, r, "text/event-stream")
	ps := pieces(a.text)
	events := make([]map[string]any, 0, len(ps)+2)
	for i, p := range ps {
		d := map[string]any{"content": p}
		if i == 0 {
			d["role"] = "assistant"
		}
		events = append(events, a.chunk(d, nil))
	}
	final := a.chunk(map[string]any{}, "stop")
	for k, v := range a.finalExtra {
		final[k] = v
	}
	if a.alwaysUsage {
		final["usage"] = a.usage()
	}
	events = append(events, final)
	if !a.alwaysUsage && q.includeUsage() {
		u := a.chunk(nil, nil)
		u["choices"] = []any{}
		u["usage"] = a.usage()
		events = append(events, u)
	}
	for i, ev := range events {
		if f != nil && f.Action == FaultCutAfter && i == f.N {
			cut()
		}
		if f != nil && f.Action == FaultStreamErrorAfter && i == f.N {
			if a.orStreamErr {
				ch := a.chunk(map[string]any{"content": ""}, "error")
				ch["error"] = map[string]any{"code": 502, "message": "simulated fault: provider error after generation started"}
				e.sendJSON("", ch)
			} else {
				e.sendJSON("", shape(http.StatusInternalServerError, "simulated fault: error after generation started"))
			}
			return
		}
		if !e.sendJSON("", ev) {
			return
		}
	}
	if f != nil && f.Action == FaultCutAfter {
		cut()
	}
	if e.send("", []byte("[DONE]")) && s.cfg.StreamEndDelay > 0 {
		s.sleep(e.ctx, s.cfg.StreamEndDelay)
	}
}

// ---- Vercel AI Gateway ----

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

func (s *Server) handleVercel(w http.ResponseWriter, r *http.Request) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return
	}
	var q chatRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, vercelShape(400, err.Error()))
		return
	}
	var g *vercelGateway
	if q.ProviderOptions != nil {
		g = q.ProviderOptions.Gateway
	}
	if g != nil && g.Sort != "" {
		if _, ok := vercelSort[g.Sort]; !ok {
			writeJSON(w, http.StatusBadRequest, vercelShape(400, fmt.Sprintf("providerOptions.gateway.sort: invalid value %q (expected cost, ttft or tps)", g.Sort)))
			return
		}
	}
	chain := []string{q.Model}
	if g != nil {
		for _, m := range g.Models {
			if !containsFold(chain, m) {
				chain = append(chain, m)
			}
		}
	}
	var cands []candidate
	for _, ref := range chain {
		m, ok := s.cfg.model(ref)
		if !ok {
			writeJSON(w, http.StatusNotFound, vercelShape(404, fmt.Sprintf("Model '%s' not found", ref)))
			return
		}
		for _, e := range vercelEndpoints(m, g, slugMatch) {
			cands = append(cands, candidate{m, e})
		}
	}
	if len(cands) == 0 {
		writeJSON(w, http.StatusNotFound, vercelShape(404, fmt.Sprintf("No providers available for model '%s' with the requested provider options", q.Model)))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	res, ok := s.serveWalk(w, r, KindVercel, hdr, q.Stream, prompt, cands, anyAttempt(vercelShape), vercelOverflow)
	if !ok {
		return
	}
	c := res.served
	slug := c.ep.Slug()
	text := answerText(c.model.Slug, slug)
	out := estimateTokens(len(text))
	var modelAttempts []any
	for _, at := range res.attempts {
		n := len(modelAttempts)
		if n == 0 || modelAttempts[n-1].(map[string]any)["modelId"] != at.model.Slug {
			modelAttempts = append(modelAttempts, map[string]any{"modelId": at.model.Slug, "providerAttempts": []any{}})
			n++
		}
		ma := modelAttempts[n-1].(map[string]any)
		ma["providerAttempts"] = append(ma["providerAttempts"].([]any), map[string]any{"provider": at.ep.Slug(), "statusCode": at.Status})
	}
	a := &chatAnswer{
		id: s.nextID("chatcmpl-sim-"), model: c.model.Slug, text: text, created: time.Now().Unix(),
		in: prompt, out: out, cost: cost(c.ep, prompt, out),
		finalExtra: map[string]any{"providerMetadata": map[string]any{"gateway": map[string]any{
			"routing": map[string]any{"finalProvider": slug, "modelAttempts": modelAttempts},
			"cost":    fmt.Sprintf("%.8f", cost(c.ep, prompt, out)),
		}}},
	}
	s.serveChat(w, r, &q, a, res.fault, vercelShape)
}

func (e *sseWriter) sendJSON(event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return e.send(event, b)
}
