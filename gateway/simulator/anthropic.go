package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicRequest is the Messages API body (the fields the simulator reads).
type anthropicRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Messages  []chatMessage   `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
}

var anthropicTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 529: "overloaded_error",
}

func anthropicShape(status int, msg string) any {
	typ, ok := anthropicTypes[status]
	if !ok {
		typ = "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func anthropicOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(anthropicShape(400, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, m.ContextWindow)))
	return failure{status: http.StatusBadRequest, body: b}
}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return
	}
	if r.Header.Get("x-api-key") == "" {
		writeJSON(w, http.StatusUnauthorized, anthropicShape(401, "x-api-key header is required"))
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "anthropic-version: header is required"))
		return
	}
	var q anthropicRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "There was an issue with your request body: "+err.Error()))
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "model: Field required"))
		return
	}
	if q.MaxTokens == nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "max_tokens: Field required"))
		return
	}
	if len(q.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "messages: at least one message is required"))
		return
	}
	m, ep, ok := s.directModel(strings.TrimPrefix(strings.ToLower(q.Model), "anthropic/"), "anthropic")
	if !ok {
		writeJSON(w, http.StatusNotFound, anthropicShape(404, "model: "+q.Model))
		return
	}
	prompt := promptTokens(q.System, q.Messages)
	res, ok := s.serveWalk(w, r, KindAnthropic, hdr, q.Stream, prompt, []candidate{{m, ep}}, anyAttempt(anthropicShape), anthropicOverflow)
	if !ok {
		return
	}
	_, name, _ := strings.Cut(m.Slug, "/")
	native := strings.ReplaceAll(name, ".", "-")
	text := answerText(m.Slug, "anthropic")
	out := estimateTokens(len(text))
	id := s.nextID("msg_sim_")
	msg := map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": native,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": prompt, "output_tokens": out},
	}
	body, _ := json.Marshal(msg)
	f := res.fault
	if s.serveBehaviour(w, r, f, q.Stream, body) {
		return
	}
	if !q.Stream {
		if f != nil && f.Action == FaultStreamErrorAfter {
			writeJSON(w, http.StatusInternalServerError, anthropicShape(500, "Internal server error"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	type event struct {
		name string
		data any
	}
	events := []event{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": native, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": prompt, "output_tokens": 1},
		}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}},
		{"ping", map[string]any{"type": "ping"}},
	}
	for _, p := range pieces(text) {
		events = append(events, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": p}}})
	}
	events = append(events,
		event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": out}}},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	)
	e := s.newSSE(w, r, "text/event-stream")
	for i, ev := range events {
		if f != nil && f.Action == FaultCutAfter && i == f.N {
			cut()
		}
		if f != nil && f.Action == FaultStreamErrorAfter && i == f.N {
			// Anthropic reports mid-stream failures as an `error` event.
			e.sendJSON("error", anthropicShape(529, "Overloaded"))
			return
		}
		if !e.sendJSON(ev.name, ev.data) {
			return
		}
	}
	if f != nil && f.Action == FaultCutAfter {
		cut()
	}
}
