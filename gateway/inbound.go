package gateway

import (
	"net/http"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/snapshot"
)

// The request paths of the APIs beside chat completions. Each reads top to
// bottom like chatCompletions and runs the same steps; what differs is
// their API, which the turn carries from begin on: how parse reads the
// body, how the upstream is asked (natively or translated, see
// connectors.TranslateFor), and the shape of the answer, the stream's
// events and the errors (answer.go).

// messages is the request path of POST /v1/messages, the Anthropic Messages
// API: the same policy as chat completions, the request passed natively to
// the Anthropic upstream and translated onto any other, the answer and the
// errors in the Messages API's shape.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	t := s.begin(r, connectors.APIMessages) // auth: x-api-key or a bearer token
	defer s.record(t)                       // record: the row, whatever happens below
	if e := s.parse(w, r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	if e := s.admit(r, t); e != nil { // admit: rate limits; the shared state's reads, one round trip
		s.answerError(w, t, e)
		return
	}
	defer s.depart(t)      // depart: give back what admission held
	if s.replay(w, r, t) { // cache: a hit contacts no provider
		return
	}
	if e := s.plan(r, t); e != nil { // plan: a plain model is a one-target plan
		s.answerError(w, t, e)
		return
	}
	if e := s.dispatch(w, r, t); e != nil { // dispatch: the attempt loop
		s.answerError(w, t, e)
		return
	}
	s.relay(r, t)  // relay: the rest of a stream dispatch opened
	s.settle(t)    // settle: price, pin, charge, release, keep for replay
	s.answer(w, t) // answer: the answer, or the failure the request ended on
}

// embeddings is the request path of POST /v1/embeddings, the OpenAI
// embeddings API: the same policy as chat completions, sent only to
// upstreams with an embeddings endpoint, recorded with its input tokens and
// cost.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	t := s.begin(r, connectors.APIEmbeddings) // auth: a bearer token
	defer s.record(t)                         // record: the row, whatever happens below
	if e := s.parse(w, r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	if e := s.admit(r, t); e != nil { // admit: rate limits; the shared state's reads, one round trip
		s.answerError(w, t, e)
		return
	}
	defer s.depart(t)      // depart: give back what admission held
	if s.replay(w, r, t) { // cache: a hit contacts no provider
		return
	}
	if e := s.plan(r, t); e != nil { // plan: a plain model is a one-target plan
		s.answerError(w, t, e)
		return
	}
	if e := s.dispatch(w, r, t); e != nil { // dispatch: the attempt loop
		s.answerError(w, t, e)
		return
	}
	s.settle(t)    // settle: price, pin, charge, release
	s.answer(w, t) // answer: the answer, or the failure the request ended on
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
