package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/request"
	"github.com/sluicegw/sluice/gateway/requestlog"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// Response headers sluice adds. Streams carry only the request id (their
// headers leave before the upstream has said who serves): correlate a stream
// with its request-log row by X-Request-Id.
const (
	HeaderRequestID      = "X-Request-Id"
	HeaderServedModel    = "X-Sluice-Served-Model"
	HeaderServedProvider = "X-Sluice-Served-Provider"
	HeaderUpstream       = "X-Sluice-Upstream"
	HeaderDegraded       = "X-Sluice-Degraded"
	HeaderCache          = "X-Sluice-Cache"
	HeaderSessionID      = "X-Session-Id"
	// HeaderFallback is "true" on a non-streaming success that came from an
	// attempt after the first (absent otherwise). Streams do not carry it:
	// correlate them with their row by X-Request-Id.
	HeaderFallback = "X-Sluice-Fallback"
)

// Switch reasons recorded in routing_switch_reason.
const (
	SwitchChain        = "chain"
	SwitchSubstitution = "upstream_substitution"
)

// cachedAnswer is a response-cache entry: the answer and who served it.
type cachedAnswer struct {
	body           []byte
	servedModel    string
	servedProvider string
	upstream       string
	usage          connectors.Usage
}

// pin is a session's routing pin: the model and provider that served its
// last turn.
type pin struct{ model, provider string }

// turn carries one request through the path and becomes its request-log row.
type turn struct {
	start time.Time
	row   requestlog.Row
	snap  *snapshot.Snapshot
	key   *profiles.Key
	req   *request.Request
	plan  *compiler.Plan
	// pinKey is the session's key in the pin table ("" without a session).
	pinKey string
	pin    pin
	hasPin bool
	// metered reports that the current attempt uses the platform key, so its
	// answer's cost counts against the key's and the team's budgets.
	metered bool
}

// newRequestID returns 32 hex digits: the time in Unix milliseconds (6
// bytes, big-endian) then 10 random bytes. Ids sort by time, so the request
// log's unique index on them grows at its end instead of at random pages
// (inserts into the embedded store run about twice as fast), and 80 random
// bits keep ids of the same millisecond apart.
func newRequestID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// validSessionID accepts 1-128 printable ASCII characters (space included),
// so that a session id can never inject a header or a log line.
func validSessionID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// chatCompletions is the request path:
// auth (middleware) → parse → cache → decide → check → translate → send → record.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	id, start := requestIDFrom(r.Context())
	t := &turn{start: start, snap: snapshotFrom(r.Context()), key: KeyFrom(r.Context())}
	p := t.key.Principal()
	t.row = requestlog.Row{TS: t.start, RequestID: id, Org: p.Org, Team: p.Team, Project: p.Project,
		KeyID: p.Key, Chain: []string{}, RoutingDegraded: []string{}}
	defer s.record(t)

	// parse
	if sid := r.Header.Get(HeaderSessionID); sid != "" {
		if !validSessionID(sid) {
			s.fail(w, t, apierr.New(apierr.CodeInvalidRequest, "X-Session-Id must be 1 to 128 printable ASCII characters"))
			return
		}
		t.row.SessionID = sid
		t.pinKey = t.key.ID + "\x00" + sid
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, t.snap.Config.Server.MaxBodyBytes), r.ContentLength, t.snap.Config.Server.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.fail(w, t, apierr.New(apierr.CodeBodyTooLarge, "request body exceeds the gateway's limit ([server] max_body_bytes)"))
			return
		}
		t.row.Status = 499
		return // the client went away while sending
	}
	req, perr := request.Parse(body)
	if perr != nil {
		s.fail(w, t, perr)
		return
	}
	t.req = req
	t.row.DecidedModel, t.row.Stream = req.Model, req.Stream
	// cache: before the check, because a hit contacts no provider, so a
	// restriction an upstream cannot express does not stop it. Streams are
	// never cached: a replayed stream would not be the stream it claims.
	decision, err := t.snap.Decision(r.Context(), p)
	if err != nil {
		s.log.Error("guardrail decision failed", "request_id", t.row.RequestID, "key", p.Key, "err", err)
		s.fail(w, t, internalError())
		return
	}
	var cacheKey string
	if t.snap.Config.Cache.Enabled && !req.Stream {
		cacheKey = s.cacheKey(t, decision, body)
		if hit, ok := s.cache.Get(cacheKey); ok {
			s.metrics.Cache.WithLabelValues("hit").Inc()
			s.serveCached(w, t, hit)
			return
		}
		s.metrics.Cache.WithLabelValues("miss").Inc()
	}

	// decide → check → translate → send, per attempt
	if t.pinKey != "" {
		t.pin, t.hasPin = s.sessions.Get(t.pinKey)
	}
	s.serve(w, r, t, decision, cacheKey)
}

// translateError maps a connector's translation error to the caller's error,
// keeping its code: a parameter the upstream cannot honour is
// unsupported_parameter, a malformed request invalid_request (both 400).
func translateError(err error) *apierr.Error {
	var te *connectors.TranslateError
	if errors.As(err, &te) {
		code := apierr.CodeInvalidRequest
		if te.Code == connectors.CodeUnsupportedParameter {
			code = apierr.CodeUnsupportedParameter
		}
		return &apierr.Error{Code: code, Message: te.Message, Param: te.Param}
	}
	return internalError()
}

// cacheKey is an exact match on the normalised request (the routing object
// included) and the principal's decision revision. It names neither the
// upstream nor the profile revision: an answer is a property of the request
// and of what governance allows, and a hit contacts no provider at all.
func (s *Server) cacheKey(t *turn, d *guardrails.Decision, body []byte) string {
	h := sha256.New()
	h.Write([]byte(t.key.Principal().String()))
	h.Write([]byte{0})
	if d != nil {
		h.Write([]byte(d.Revision()))
	}
	h.Write([]byte{0})
	h.Write(canonicalBody(body))
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalBody is the request with its members in sorted order, so that the
// same request written in another member order hits the same entry.
func canonicalBody(raw []byte) []byte {
	b, err := connectors.CanonicalJSON(raw)
	if err != nil {
		return raw
	}
	return b
}

func (s *Server) serveCached(w http.ResponseWriter, t *turn, hit *cachedAnswer) {
	t.row.CacheHit = true
	t.row.Upstream = hit.upstream // the upstream whose answer is replayed; none was contacted now
	t.row.ServedModel, t.row.ServedProvider = hit.servedModel, hit.servedProvider
	t.row.RoutingSwitchReason = switchReason(t.row.DecidedModel, nil, hit.servedModel)
	t.row.PromptTokens, t.row.CompletionTokens = hit.usage.PromptTokens, hit.usage.CompletionTokens
	t.row.Status = http.StatusOK
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderCache, "hit")
	setServed(h, hit.servedModel, hit.servedProvider)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(hit.body)
}

// fail answers with an error and records its code.
func (s *Server) fail(w http.ResponseWriter, t *turn, e *apierr.Error) {
	t.row.Status = e.Status()
	if e.Status() != http.StatusInternalServerError {
		t.row.RefusedCode = e.Code
	}
	s.metrics.Refused.WithLabelValues(e.Code).Inc()
	writeError(w, e)
}

// switchReason says why the served model differs from the decided one.
func switchReason(decided string, chain []string, served string) string {
	served = strings.ToLower(served)
	if served == "" || served == decided {
		return ""
	}
	for _, c := range chain {
		if c == served {
			return SwitchChain
		}
	}
	return SwitchSubstitution
}

func setServed(h http.Header, model, provider string) {
	if model != "" {
		h.Set(HeaderServedModel, model)
	}
	if provider != "" {
		h.Set(HeaderServedProvider, provider)
	}
}

// served records who answered, moves the session pin and decides whether
// the turn keeps the cross-turn prompt-cache discount.
func (s *Server) served(t *turn, chain []string, res connectors.Result) {
	r := &t.row
	r.ServedModel = strings.ToLower(res.ServedModel)
	var ep *guardrails.Endpoint
	r.ServedProvider, ep = servedEndpoint(t.snap, r.ServedModel, res.ServedProvider)
	r.PromptTokens, r.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	if r.RoutingSwitchReason == "" {
		r.RoutingSwitchReason = switchReason(r.DecidedModel, chain, r.ServedModel)
	}
	// A switch of model is a representation break: the new model's prompt
	// cache is cold however identical the bytes, so no discount this turn.
	r.RepresentationBreak = r.ServedModel != "" && r.ServedModel != r.DecidedModel
	now := pin{model: r.ServedModel, provider: r.ServedProvider}
	r.CacheDiscountApplied = t.hasPin && !r.RepresentationBreak && t.pin == now
	if t.pinKey != "" && r.ServedModel != "" {
		s.sessions.Put(t.pinKey, now)
	}
	r.CostUSD = cost(ep, res.Usage, r.CacheDiscountApplied)
	if t.metered {
		s.ledger.Add(budget.Month(t.start), r.CostUSD, budget.KeyScope(t.key.ID), budget.TeamScope(t.key.Org, t.key.Team))
	}
}

// servedEndpoint names the provider that served the way the catalog does,
// and returns the catalog endpoint whose prices the answer costs (nil when
// the catalog does not have the model). Upstreams report providers in their
// own spelling — the marketplace by display name, "Amazon Bedrock" for the
// catalog's amazon-bedrock — so a reported name that is not a slug of the
// served model's endpoints is matched to one ignoring case and punctuation.
// A name no endpoint matches is kept, lower-cased (the row shows what the
// upstream said), and priced at the model's first endpoint.
func servedEndpoint(snap *snapshot.Snapshot, model, reported string) (string, *guardrails.Endpoint) {
	low := strings.ToLower(reported)
	if snap.Catalog == nil {
		return low, nil
	}
	m, ok := snap.Catalog.Model(model)
	if !ok || len(m.Endpoints) == 0 {
		return low, nil
	}
	if low != "" {
		for i, e := range m.Endpoints {
			if e.Provider == low || e.Slug() == low {
				return low, &m.Endpoints[i]
			}
		}
		for i, e := range m.Endpoints {
			if sameLetters(e.Provider, reported) {
				return e.Provider, &m.Endpoints[i]
			}
		}
	}
	return low, &m.Endpoints[0]
}

// sameLetters reports whether a and b spell the same letters and digits,
// ignoring case and everything else ("Amazon Bedrock", "amazon-bedrock").
func sameLetters(a, b string) bool {
	next := func(s string, i int) (byte, int) {
		for ; i < len(s); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c >= 0x80 {
				return c, i + 1
			}
		}
		return 0, i
	}
	i, j := 0, 0
	for {
		var ca, cb byte
		ca, i = next(a, i)
		cb, j = next(b, j)
		if ca != cb {
			return false
		}
		if ca == 0 {
			return true
		}
	}
}

// cost estimates the spend of an answer from the endpoint's prices (USD per
// million tokens; 0 without an endpoint). With the cross-turn discount,
// cached prompt tokens are priced at a tenth.
func cost(ep *guardrails.Endpoint, u connectors.Usage, discount bool) float64 {
	if ep == nil {
		return 0
	}
	prompt := float64(u.PromptTokens)
	if discount && u.CachedTokens > 0 && u.CachedTokens <= u.PromptTokens {
		prompt -= 0.9 * float64(u.CachedTokens)
	}
	return (prompt*ep.PriceIn + float64(u.CompletionTokens)*ep.PriceOut) / 1e6
}

// record finishes the row and hands it to the request log; it never blocks.
func (s *Server) record(t *turn) {
	r := &t.row
	r.LatencyMS = float64(time.Since(t.start).Microseconds()) / 1000
	if r.Status == 0 {
		r.Status = 499 // the client went away before an answer
	}
	for _, d := range r.RoutingDegraded {
		s.metrics.Degraded.WithLabelValues(d).Inc()
	}
	up := r.Upstream
	if r.CacheHit {
		up = "cache"
	}
	s.metrics.Requests.WithLabelValues(statusLabel(r.Status), up).Inc()
	stream := "false"
	if r.Stream {
		stream = "true"
	}
	s.metrics.Duration.WithLabelValues(up, stream).Observe(r.LatencyMS / 1000)
	s.writer.Enqueue(*r)
	switch t.snap.Config.Server.LogRequests {
	case "off":
		return
	case "errors":
		if r.Status >= 200 && r.Status < 300 {
			return
		}
	}
	s.log.Info("request", "request_id", r.RequestID, "key", r.KeyID, "team", r.Team, "upstream", r.Upstream,
		"decided_model", r.DecidedModel, "served_model", r.ServedModel, "served_provider", r.ServedProvider,
		"status", r.Status, "refused_code", r.RefusedCode, "degraded", r.RoutingDegraded, "latency_ms", r.LatencyMS)
}

var statusLabels = map[int]string{200: "200", 400: "400", 401: "401", 403: "403", 404: "404", 413: "413", 422: "422", 429: "429", 499: "499", 500: "500", 502: "502", 503: "503", 504: "504"}

func statusLabel(code int) string {
	if l, ok := statusLabels[code]; ok {
		return l
	}
	return strconv.Itoa(code)
}

// context helpers for the upstream deadlines.
var (
	errFirstByte error = deadlineError("the upstream sent nothing within first_byte_timeout")
	errTotal     error = deadlineError("the upstream did not finish within timeout")
)

// deadlineError is one of the gateway's upstream deadlines firing; it reports
// itself as a timeout so that the failure classifier sees one.
type deadlineError string

func (e deadlineError) Error() string { return string(e) }

// Timeout reports true: the error is a deadline.
func (deadlineError) Timeout() bool { return true }

// clientGone reports whether the caller has gone away.
func clientGone(ctx context.Context) bool { return ctx.Err() != nil }
