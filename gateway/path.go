package gateway

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/request"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// serve is the request path of every API that asks an upstream for an
// answer — chat completions, the Messages API, embeddings — top to bottom:
// begin, parse, admit (rate limits, and the fleet's shared state read in
// one round trip), replay, plan, dispatch, relay, settle, answer, record.
// Each step is one method in the file of its name; none writes the
// request-log row, which record builds once from what the turn learned.
// What differs between the APIs is carried by the turn from begin on: how
// parse reads the body, how the upstream is asked (natively or translated,
// see connectors.TranslateFor), and the shape of the answer, the stream's
// events and the errors (answer.go).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, api connectors.API) {
	t := s.begin(r, api) // auth: the key and configuration authenticate found
	defer endTurn(t)     // the turn's storage serves the next request
	defer s.record(t)    // record: the row, whatever happens below
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

// chatCompletions serves POST /v1/chat/completions, the OpenAI chat
// completions API, non-streaming and streaming.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, connectors.APIChat)
}

// turn is one request on its way down the path: what each step learned.
// Steps add to it; record turns it into the request-log row.
type turn struct {
	// begin
	id    string
	start time.Time
	snap  *snapshot.Snapshot
	key   *profiles.Key
	// api is the API the request came in on: its body's shape, its
	// answer's, and its errors'.
	api connectors.API
	// stored is the row's api of a GET or DELETE of a stored response
	// ("" for every other request; holders.go).
	stored string
	// socket: the request is a response.create frame of a Responses
	// WebSocket; its row's api is rowAPIResponsesWS.
	socket bool
	// blindKey is the request's blind caller key (X-Sluice-Caller-Key), for
	// blindUpstream, the upstream its shape names; both "" without one.
	blindKey, blindUpstream string
	// path is the request's URL path, for its log line.
	path string
	// span is the request's server span, spanCtx its context (nil when
	// tracing is off).
	span    trace.Span
	spanCtx context.Context

	// parse
	session string // the session's id, "" without one
	// sessionKey is the header that carried session ([sessions] headers).
	sessionKey string
	pinKey     string // the session's key in the pin table
	pin        snapshot.Pin
	hasPin     bool
	req        *request.Request
	body       []byte // as received (the cache key's input)

	// admit
	checks   []shared.Check // the rate limits the request passed
	charged  int64          // tokens a tpm limit charged at admission
	admitted bool           // checks hold something to give back at depart
	// fetched: admission read the shared state (fetchedLocal: Redis was
	// down, so the replica's own cache and pins answer instead).
	// A pin it read is set in pin and hasPin.
	fetched, fetchedLocal bool
	fetchedCache          *cachedAnswer
	pre                   *preReservation // the first attempt's reservation, made with admission
	reserved              int             // shared reservations made since

	// cache
	cacheKey string  // "" when the answer is not cached
	cacheID  cacheID // cacheKey's digest: the in-process cache's key
	noStore  bool    // the request said Cache-Control: no-store
	repeat   bool    // its key was sighted before: its answer may be stored
	cached   *cachedAnswer

	// plan
	decision       *guardrails.Decision // nil when no guardrail applies
	decisionIssued bool
	memo           snapshot.Memo
	route          *profiles.Route // the route alias, nil for a plain model
	targets        *failover.Plan
	single         failover.Plan   // targets' storage for a plain model's plan
	first          failover.Target // the first target planned
	decided        string          // the decided model: the first target's
	chain          []string        // the decided model's chain

	// dispatch
	cur       failover.Target // the target being dispatched
	curReason string          // the failure that sent the request on to cur ("" for the first)
	at        stage           // where the request is: the target dispatched last
	sent      int             // attempts sent
	final     *attempt        // the last attempt sent (answered or not)
	// attemptBuf holds the first attempts, so that a request that answers
	// at once allocates none for them.
	attemptBuf [1]attempt
	made       int

	// settle
	served settled

	// ws is a WebSocket session once accepted (nil for every other
	// request): how it ended and its responses, for the row.
	ws *wsSession

	// answer
	status  int           // the HTTP outcome the row records
	refusal *apierr.Error // the gateway's refusal, if it refused
}

// stage is a target the request was dispatched to: its compiled request
// (which names the upstream) and the failure that sent the request on to it
// ("" for the first dial).
type stage struct {
	compiled *snapshot.Compiled
	reason   string
}

// newAttempt returns the request's next attempt, on tgt compiled as c with
// apiKey; the caller sets what kind of key it is. Built in place: an attempt
// is large, and a copy of it in the dispatching frames would stay on the
// stack for a whole stream.
func (t *turn) newAttempt(tgt *failover.Target, c *snapshot.Compiled, reason, apiKey string) *attempt {
	var a *attempt
	if t.made < len(t.attemptBuf) {
		a = &t.attemptBuf[t.made]
		t.made++
	} else {
		a = new(attempt)
	}
	a.target, a.compiled, a.reason, a.apiKey = *tgt, c, reason, apiKey
	return a
}

// attempt is one exchange with an upstream: a target, its compiled request
// and the credential it is sent with. The exchange fills in out; it never
// writes the row or charges a budget.
type attempt struct {
	target   failover.Target
	compiled *snapshot.Compiled
	// reason is the failure that sent the request on to this attempt ("" for
	// the first dial; a planning overflow when the prompt skipped the pool).
	reason string
	apiKey string
	// callerKey: the caller's own provider key (unmetered, 401/403 retryable).
	callerKey bool
	// safetyNet: the platform key, after the caller's own key failed.
	safetyNet bool
	// metered: the platform key, whose spend counts against the budgets.
	metered bool
	// capped: a budget lowered the completion cap; the answer is not the
	// answer to the request as sent, so it is not cached.
	capped bool
	// release frees the attempt's budget reservation; settle calls it after
	// charging the cost, a failure at once.
	release func()
	// open is the stream this attempt opened, until the relay step has
	// relayed it (nil for anything else).
	open *relay
	// span is the attempt's client span, spanCtx its context, which the
	// upstream request carries (nil when tracing is off).
	span    trace.Span
	spanCtx context.Context
	// hold is the reservation in the fleet's shared budgets (nil in
	// process): settle charges it and releases it in one step.
	hold *shared.Hold

	out exchange
}

// exchange is what came back from one attempt.
type exchange struct {
	// answered: the upstream answered (a stream: began relaying); result
	// says who served.
	answered bool
	// body is a non-streaming answer, translated, not yet written.
	body   []byte
	result connectors.Result
	// streamed: the answer was a stream, relayed to the caller as it came
	// (whole or cut); status
	// is its outcome (200, 502 cut, 499 the caller left), ttft the time to
	// its first chunk.
	streamed bool
	status   int
	ttft     time.Duration
	// gone: the caller left before anything was written.
	gone bool
	// cut: the server cut the request at shutdown before an answer
	// (apiErr says so); nothing is dialled after it.
	cut bool
	// failure classifies an attempt that did not answer; relay is the
	// upstream's own error answer to forward, apiErr a gateway-made one.
	failure failover.Failure
	relay   *relayedError
	apiErr  *apierr.Error
}

// committed reports that the attempt ended the request: an answer to write,
// a stream already relayed, nobody left to answer, or a server shutting
// down.
func (x *exchange) committed() bool { return x.answered || x.gone || x.cut }
