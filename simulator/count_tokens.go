package simulator

import (
	"net/http"
	"strings"
)

// handleAnthropicCount is Anthropic's POST /v1/messages/count_tokens: the
// request's size in the simulator's tokens, answered as the live API was
// recorded answering ({"input_tokens": N}, testdata/recorded/count_tokens),
// its errors in the Messages API's shape.
func (s *Server) handleAnthropicCount(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") == "" {
		writeJSON(w, http.StatusUnauthorized, anthropicShape(401, "x-api-key header is required"))
		return
	}
	var q anthropicRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "There was an issue with your request body: "+err.Error()))
		return
	}
	if q.MaxTokens != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "max_tokens: Extra inputs are not permitted"))
		return
	}
	if _, _, ok := s.directModel(strings.TrimPrefix(strings.ToLower(q.Model), "anthropic/"), "anthropic"); !ok {
		writeJSON(w, http.StatusNotFound, anthropicShape(404, "model: "+q.Model))
		return
	}
	s.record(r, Call{Kind: KindAnthropic, Model: q.Model, Provider: "anthropic", Status: http.StatusOK})
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": promptTokens(q.System, q.Messages)})
}
