package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// chatRequest is the OpenAI chat body plus the marketplaces' routing fields.
type chatRequest struct {
	Model         string        `json:"model"`
	Models        []string      `json:"models"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Provider *orProvider `json:"provider"`
	Plugins  []struct {
		ID            string   `json:"id"`
		AllowedModels []string `json:"allowed_models"`
	} `json:"plugins"`
	ProviderOptions *struct {
		Gateway *vercelGateway `json:"gateway"`
	} `json:"providerOptions"`
}

func (q *chatRequest) includeUsage() bool {
	return q.StreamOptions != nil && q.StreamOptions.IncludeUsage
}

// attemptLog is one attempt as reported back in routing metadata.
type attemptLog struct {
	Model    string
	Provider string
	Status   int
}

// walkResult is what walking a candidate list produced.
type walkResult struct {
	served   *candidate
	fault    *Fault // behaviour fault on the served attempt, if any
	attempts []attemptLog
	last     *failure
	gone     bool // client went away / server closed mid-walk
}

// walk tries candidates in order, applying faults; failed attempts (status,
// error, huge_error faults, context overflow) move on to the next candidate.
func (s *Server) walk(r *http.Request, kind string, hdr []Fault, stream bool, prompt int,
	cands []candidate, shape func(int, string) any, overflow func(m *Model, prompt int) failure) walkResult {
	var res walkResult
	for i := range cands {
		c := cands[i]
		slug := c.ep.Slug()
		delay, f := s.plan(hdr, c.model.Slug, slug)
		if s.cfg.ApplyLatency {
			delay += time.Duration(c.ep.LatencyMs * float64(time.Millisecond))
		}
		if !s.sleep(r.Context(), delay) {
			res.gone = true
			return res
		}
		fs := ""
		if f != nil {
			fs = f.String()
		}
		var fl *failure
		switch {
		case f != nil && f.failsAttempt():
			x := s.failWith(f, shape, slug)
			fl = &x
		case c.model.ContextWindow > 0 && prompt > c.model.ContextWindow:
			x := overflow(c.model, prompt)
			fl = &x
		}
		if fl != nil {
			s.record(Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: fl.status, Fault: fs, Stream: stream})
			res.attempts = append(res.attempts, attemptLog{c.model.Slug, slug, fl.status})
			res.last = fl
			continue
		}
		st := http.StatusOK
		if f != nil && f.Action == FaultHang {
			st = 0
		}
		s.record(Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: st, Fault: fs, Stream: stream})
		res.attempts = append(res.attempts, attemptLog{c.model.Slug, slug, http.StatusOK})
		res.served, res.fault = &c, f
		return res
	}
	return res
}

// serveWalk walks the candidates like walk; when none served it answers with
// the last failure (nothing when the client went away) and reports false.
func (s *Server) serveWalk(w http.ResponseWriter, r *http.Request, kind string, hdr []Fault, stream bool, prompt int,
	cands []candidate, shape func(int, string) any, overflow func(m *Model, prompt int) failure) (walkResult, bool) {
	res := s.walk(r, kind, hdr, stream, prompt, cands, shape, overflow)
	if res.gone {
		return res, false
	}
	if res.served == nil {
		res.last.write(w)
		return res, false
	}
	return res, true
}

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
	e := s.newSSE(w, r)
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

// ---- OpenRouter ----

func orShape(status int, msg string) any {
	return map[string]any{"error": map[string]any{"code": status, "message": msg}}
}

func orShapeFor(provider string) func(int, string) any {
	return func(status int, msg string) any {
		return map[string]any{"error": map[string]any{"code": status, "message": msg,
			"metadata": map[string]any{"provider_name": provider}}}
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

const orAuto = "openrouter/auto"

func (s *Server) handleOpenRouter(w http.ResponseWriter, r *http.Request) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return
	}
	var q chatRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, orShape(400, err.Error()))
		return
	}
	if len(q.Models) > 3 {
		writeJSON(w, http.StatusBadRequest, orShape(400, "'models' array must have 3 items or fewer"))
		return
	}
	sortKey, err := q.Provider.sortKey()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, orShape(400, err.Error()))
		return
	}
	chain := []string{}
	if q.Model != "" {
		chain = append(chain, q.Model)
	}
	for _, m := range q.Models {
		if !containsFold(chain, m) {
			chain = append(chain, m)
		}
	}
	if len(chain) == 0 {
		writeJSON(w, http.StatusBadRequest, orShape(400, "No models provided"))
		return
	}
	var allowed []string
	for _, p := range q.Plugins {
		if p.ID == "auto-router" {
			allowed = append(allowed, p.AllowedModels...)
		}
	}
	strategy := "default"
	if sortKey != "" {
		strategy = sortKey
	}
	var cands []candidate
	var primary *Model
	for _, ref := range chain {
		key, slug := sortKey, ref
		switch {
		case strings.HasSuffix(slug, ":nitro"):
			slug, key = strings.TrimSuffix(slug, ":nitro"), "throughput"
		case strings.HasSuffix(slug, ":floor"):
			slug, key = strings.TrimSuffix(slug, ":floor"), "price"
		}
		var m *Model
		if strings.EqualFold(slug, orAuto) {
			strategy = "auto"
			m, _ = s.cfg.autoPick(allowed, func(m *Model) bool { return len(openRouterEndpoints(m, q.Provider, key)) > 0 })
			if m == nil {
				continue
			}
		} else {
			var ok bool
			if m, ok = s.cfg.model(slug); !ok {
				writeJSON(w, http.StatusBadRequest, orShape(400, ref+" is not a valid model ID"))
				return
			}
		}
		if primary == nil {
			primary = m
		}
		for _, e := range openRouterEndpoints(m, q.Provider, key) {
			cands = append(cands, candidate{m, e})
		}
	}
	if len(cands) == 0 {
		writeJSON(w, http.StatusNotFound, orNoProviders(primary, q.Provider))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	res, ok := s.serveWalk(w, r, KindOpenRouter, hdr, q.Stream, prompt, cands, orShape, orOverflow)
	if !ok {
		return
	}
	c := res.served
	slug := c.ep.Slug()
	text := answerText(c.model.Slug, slug)
	out := estimateTokens(len(text))
	a := &chatAnswer{
		id: s.nextID("gen-sim-"), model: c.model.Slug, provider: slug, text: text, created: time.Now().Unix(),
		in: prompt, out: out, cost: cost(c.ep, prompt, out), usageCost: true, alwaysUsage: true, orStreamErr: true,
		extra: map[string]any{"provider": slug},
	}
	if strings.EqualFold(r.Header.Get("X-OpenRouter-Metadata"), "enabled") {
		atts := make([]any, 0, len(res.attempts))
		for _, at := range res.attempts {
			atts = append(atts, map[string]any{"provider": at.Provider, "model": at.Model, "status": at.Status})
		}
		a.finalExtra = map[string]any{"openrouter_metadata": map[string]any{
			"attempt": len(res.attempts), "attempts": atts, "strategy": strategy, "is_byok": false,
		}}
	}
	s.serveChat(w, r, &q, a, res.fault, orShapeFor(slug))
}

func orNoProviders(m *Model, p *orProvider) any {
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
		for _, e := range vercelEndpoints(m, g) {
			cands = append(cands, candidate{m, e})
		}
	}
	if len(cands) == 0 {
		writeJSON(w, http.StatusNotFound, vercelShape(404, fmt.Sprintf("No providers available for model '%s' with the requested provider options", q.Model)))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	res, ok := s.serveWalk(w, r, KindVercel, hdr, q.Stream, prompt, cands, vercelShape, vercelOverflow)
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
		if n == 0 || modelAttempts[n-1].(map[string]any)["modelId"] != at.Model {
			modelAttempts = append(modelAttempts, map[string]any{"modelId": at.Model, "providerAttempts": []any{}})
			n++
		}
		ma := modelAttempts[n-1].(map[string]any)
		ma["providerAttempts"] = append(ma["providerAttempts"].([]any), map[string]any{"provider": at.Provider, "statusCode": at.Status})
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

// ---- OpenAI ----

func openAIShape(status int, msg string) any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == 429:
		typ, code = "requests", "rate_limit_exceeded"
	case status == 401:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

func openAIOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", m.ContextWindow, prompt),
		"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
	}})
	return failure{status: http.StatusBadRequest, body: b}
}

// directModel finds a catalog model served by provider from a native id
// ("gpt-4o", "claude-sonnet-4-5") or a slug ("openai/gpt-4o").
func (s *Server) directModel(ref, provider string) (*Model, Endpoint, bool) {
	norm := func(x string) string { return strings.ReplaceAll(strings.ToLower(x), ".", "-") }
	want := norm(ref)
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		_, name, _ := strings.Cut(m.Slug, "/")
		if want != norm(m.Slug) && want != norm(name) {
			continue
		}
		for _, e := range m.Endpoints {
			if providerMatches(provider, e.Slug()) {
				return m, e, true
			}
		}
	}
	return nil, Endpoint{}, false
}

func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return
	}
	var q chatRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, openAIShape(400, "We could not parse the JSON body of your request."))
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, openAIShape(400, "you must provide a model parameter"))
		return
	}
	m, ep, ok := s.directModel(q.Model, "openai")
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", q.Model),
			"type":    "invalid_request_error", "param": nil, "code": "model_not_found",
		}})
		return
	}
	prompt := promptTokens(nil, q.Messages)
	res, ok := s.serveWalk(w, r, KindOpenAI, hdr, q.Stream, prompt, []candidate{{m, ep}}, openAIShape, openAIOverflow)
	if !ok {
		return
	}
	_, name, _ := strings.Cut(m.Slug, "/")
	text := answerText(m.Slug, "openai")
	out := estimateTokens(len(text))
	a := &chatAnswer{
		id: s.nextID("chatcmpl-sim-"), model: name, text: text, created: time.Now().Unix(), in: prompt, out: out,
		extra: map[string]any{"system_fingerprint": "fp_sim"},
	}
	s.serveChat(w, r, &q, a, res.fault, openAIShape)
}
