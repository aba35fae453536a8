package gateway

import (
	"net/http"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/snapshot"
)

// messages serves POST /v1/messages, the Anthropic Messages API: the same
// policy as chat completions, the request passed natively to the Anthropic
// upstream and translated onto any other, the answer and the errors in the
// Messages API's shape. Keys come from x-api-key or a bearer token.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, connectors.APIMessages)
}

// responses serves POST /v1/responses, the OpenAI Responses API: the same
// policy as chat completions, the request passed natively to every upstream
// that speaks the API (OpenAI, OpenRouter, the Vercel AI Gateway) and
// translated onto Anthropic's, the answer, the stream's events and the
// errors in the Responses API's shape. A continuation
// (previous_response_id) goes only to the upstream that stored the
// response it continues (see holders.go).
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, connectors.APIResponses)
}

// embeddings serves POST /v1/embeddings, the OpenAI embeddings API: the
// same policy as chat completions, sent only to upstreams with an
// embeddings endpoint, recorded with its input tokens and cost.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, connectors.APIEmbeddings)
}

// reserveInput reserves an embeddings attempt under the key's and team's
// budgets: its input's estimated cost at the highest input price of what
// the upstream may serve. There is no completion to cap. ok is false when
// the budget is exhausted; release frees the reservation (nil when nothing
// is priced, and then nothing is held).
func (s *Server) reserveInput(t *turn, c *snapshot.Compiled, model, month string, limits []budget.Limit) (release func(), hold *shared.Hold, ok bool) {
	in, _, _ := highestPrices(t.snap, c, model)
	cost := float64(t.req.PromptTokens) * in / 1e6
	if cost <= 0 {
		return nil, nil, s.available(t, month, limits) > 0
	}
	grant, release, hold := s.hold(t, c.Upstream.Config.Name, model, month, cost, limits)
	if grant <= 0 {
		release()
		return nil, nil, false
	}
	return release, hold, true
}
