package gateway

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Switch reasons recorded in routing_switch_reason: why the served model
// differs from the decided one.
const (
	// SwitchChain: the upstream walked the fallback chain it was sent.
	SwitchChain = "chain"
	// SwitchSubstitution: neither the decided model nor one of the chain
	// served; the upstream did something the plan did not allow.
	SwitchSubstitution = "upstream_substitution"
	// SwitchTargetFallback: gateway failover answered from a route target
	// whose model differs from the first planned one.
	SwitchTargetFallback = "target_fallback"
	// SwitchSafetyNet: the platform key answered after the caller's own key
	// failed.
	SwitchSafetyNet = "safety_net"
)

// record builds the request's row from what the turn learned, in this one
// place, hands it to the request log (never blocking) and counts it.
func (s *Server) record(t *turn) {
	// The row is built in pooled storage, not in record's frame: it is
	// large, record runs at the request's deepest (the log line's handler
	// under it), and the deepest point of a request decides the stack its
	// connection's goroutine keeps, open streams' included.
	r := rowPool.Get().(*requestlog.Row)
	defer rowPool.Put(r)
	s.row(t, r)
	if t.span != nil { // checked here: endSpan's frame is large
		s.endSpan(t, r)
	}
	s.measure(t.snap, r, t.operation())
	for _, d := range r.RoutingDegraded {
		if strings.HasPrefix(d, compiler.DegradedBetaPrefix) {
			d = "beta" // the flag is the caller's word: one label for all (the row names it)
		}
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
	if a := t.final; a != nil && a.out.answered {
		if a.out.ttft > 0 {
			s.metrics.TTFT.WithLabelValues(r.Upstream).Observe(a.out.ttft.Seconds())
		}
		if r.FallbackReason != "" {
			s.metrics.Fallbacks.WithLabelValues(r.FallbackReason).Inc()
		}
	}
	s.writer.Enqueue(r)
	switch t.snap.Config.Server.LogRequests {
	case "off":
		return
	case "errors":
		if r.Status >= 200 && r.Status < 300 || r.Status == 101 && r.ClosedBy != ClosedBySluice {
			return
		}
	}
	// On a goroutine of its own: slog's frames (about 3.4 KiB) would land
	// on the connection's stack, which a stream keeps (stack_test.go).
	connectors.OwnStack(func() { s.logRequest(t, r) })
}

// rowPool holds rows being recorded.
var rowPool = sync.Pool{New: func() any { return new(requestlog.Row) }}

// logRequest writes the request's log line: the API and path it came in
// on, who asked, the route and whether it streamed, where it went and what
// answered, the outcome with how many attempts it took and why the one that
// answered was not the first (fallback_reason), what was lost ("degraded")
// as a comma-separated string, the latency in whole microseconds. (Its own
// function, and neither a slice nor a float, which the JSON handler encodes
// through encoding/json: the line is the deepest point of a request, which
// decides the stack its connection's goroutine keeps.)
//
//go:noinline
func (s *Server) logRequest(t *turn, r *requestlog.Row) {
	// The attributes are built in pooled storage rather than as the call's
	// variadic array, which would sit in this frame: the deepest point of
	// a request.
	args := logArgsPool.Get().(*[]any)
	*args = append((*args)[:0], "request_id", r.RequestID, "api", r.API, "path", t.path, "key", r.KeyID, "team", r.Team,
		"route", r.Route, "stream", r.Stream, "upstream", r.Upstream,
		"decided_model", r.DecidedModel, "served_model", r.ServedModel, "served_provider", r.ServedProvider,
		"status", r.Status, "refused_code", r.RefusedCode, "attempts", r.Attempts, "fallback_reason", r.FallbackReason,
		"degraded", strings.Join(r.RoutingDegraded, ","), "latency_us", int64(r.LatencyMS*1000))
	s.log.Info("request", *args...)
	clear(*args)
	logArgsPool.Put(args)
}

// logArgsPool holds the attributes of request log lines being written.
var logArgsPool = sync.Pool{New: func() any { return new([]any) }}

// measure counts an answered request's tokens and cost by served model,
// provider and team, and observes the GenAI duration histograms. A model
// is labelled by modelLabel: one the configuration and the catalog do not
// know is OtherModel.
func (s *Server) measure(snap *snapshot.Snapshot, r *requestlog.Row, op string) {
	m := s.metrics
	decided := modelLabel(snap, r.DecidedModel)
	if r.ServedModel != "" && !r.CacheHit { // a replayed answer used no tokens
		served := modelLabel(snap, r.ServedModel)
		m.Tokens.WithLabelValues(served, r.ServedProvider, r.Team, "input").Add(float64(r.PromptTokens))
		m.Tokens.WithLabelValues(served, r.ServedProvider, r.Team, "output").Add(float64(r.CompletionTokens))
		if r.CachedTokens > 0 { // parts of input and output, counted apart as well
			m.Tokens.WithLabelValues(served, r.ServedProvider, r.Team, "cached").Add(float64(r.CachedTokens))
		}
		if r.ReasoningTokens > 0 {
			m.Tokens.WithLabelValues(served, r.ServedProvider, r.Team, "reasoning").Add(float64(r.ReasoningTokens))
		}
		if r.CostSource != "" {
			m.Cost.WithLabelValues(served, r.ServedProvider, r.Team, r.CostSource).Add(r.CostUSD)
		}
	}
	provider := r.ServedProvider
	m.GenAIDuration.WithLabelValues(op, decided, provider, errorType(r)).Observe(r.LatencyMS / 1000)
	if r.TTFTMS > 0 {
		m.GenAITTFT.WithLabelValues(op, decided, provider).Observe(r.TTFTMS / 1000)
	}
}

// row fills r with the request-log row of a turn: every column written
// here, once.
func (s *Server) row(t *turn, r *requestlog.Row) {
	p := t.key.Principal()
	*r = requestlog.Row{TS: t.start, RequestID: t.id, Org: p.Org, Team: p.Team, Project: p.Project, KeyID: p.Key,
		SessionID: t.session, SessionKey: t.sessionKey, Chain: []string{}, RoutingDegraded: []string{}, Status: t.status, ConfigRevision: t.snap.Revision,
		API: t.apiName(), Upstream: t.first.Upstream, Attempts: t.sent,
		LatencyMS: float64(time.Since(t.start).Microseconds()) / 1000}
	if r.Status == 0 {
		r.Status = 499 // the client went away before an answer
	}
	if ws := t.ws; ws != nil { // a WebSocket session's end
		r.Responses, r.CloseCode, r.ClosedBy = ws.responses, int(ws.end.code), ws.end.by
	}
	if t.refusal != nil {
		r.RefusedCode, r.RefusedMessage = t.refusal.Code, t.refusal.Message
	}
	r.PreferenceVerdict = requestlog.VerdictNotApplicable // until a provider answers
	if t.req == nil {
		return // refused before the body was understood
	}
	// The caller's names are capped (bound.go).
	r.Stream, r.DecidedModel, r.Route = t.req.Stream, recorded(t.req.Model), t.routeName()
	r.RequestRouting = t.req.Routing != nil
	if t.req.RoutingJSON != nil {
		r.RoutingObject = string(t.req.RoutingJSON)
	}
	if t.decided != "" {
		r.DecidedModel = recorded(t.decided)
	}
	if t.chain != nil {
		r.Chain = recordedList(t.chain)
	}
	if t.decided != "" && t.memo.Snapshot() != nil {
		plan := t.memo.Plan(t.decided)
		r.DataPolicy = plan.Data.Fields()
		setPreference(r, plan.Providers)
	}
	if hit := t.cached; hit != nil {
		r.CacheHit = true
		r.Upstream = hit.upstream // the upstream whose answer is replayed; none was contacted now
		r.ServedModel, r.ServedProvider = recorded(hit.servedModel), recorded(hit.servedProvider)
		r.RoutingSwitchReason = switchReason(r.DecidedModel, nil, hit.servedModel)
		r.PromptTokens, r.CompletionTokens = hit.usage.PromptTokens, hit.usage.CompletionTokens
		r.CachedTokens, r.ReasoningTokens = hit.usage.CachedTokens, hit.usage.ReasoningTokens
		return
	}
	if at := t.at; at.compiled != nil {
		r.Upstream, r.RoutingDegraded, r.FallbackReason = at.compiled.Upstream.Config.Name, at.compiled.Degraded(), at.reason
		r.DataPolicyVia = at.compiled.Outcome.DataVia
	}
	a := t.final
	if t.session != "" && a != nil {
		r.SessionAffinity = sessionAffinity(a.compiled)
	}
	if a == nil || !a.out.answered {
		return // refused, or ended on a failure
	}
	sv := t.served
	r.ServedModel, r.ServedProvider = recorded(sv.model), recorded(sv.provider)
	r.ServedRegion = a.compiled.Outcome.Region // where the answering direct upstream processes
	r.PromptTokens, r.CompletionTokens, r.CostUSD, r.CostSource = sv.usage.PromptTokens, sv.usage.CompletionTokens, sv.cost, sv.costSource
	r.CachedTokens, r.ReasoningTokens = sv.usage.CachedTokens, sv.usage.ReasoningTokens
	r.RepresentationBreak, r.CacheDiscountApplied = sv.representationBreak, sv.cacheDiscount
	r.TTFTMS = float64(a.out.ttft.Microseconds()) / 1000
	if c := a.compiled; c.Call != nil && c.Call.Plan != nil { // the answering target's plan
		ps := c.Call.Plan.Providers
		setPreference(r, ps)
		r.PreferenceVerdict = preferenceVerdict(ps, sv.provider, c.Upstream.Check.Capabilities.DirectProvider != "")
	}
	r.UpstreamAttempts = upstreamAttempts(a.out.result.Attempts)
	switch {
	case a.safetyNet:
		r.RoutingSwitchReason = SwitchSafetyNet
	case a.target.Model != t.decided:
		r.RoutingSwitchReason = SwitchTargetFallback
	default:
		r.RoutingSwitchReason = switchReason(r.DecidedModel, a.compiled.Outcome.Chain, sv.model)
	}

}

// sessionAffinity is the row's session_affinity for a session's request
// sent as c: sluice's own pin always, and the upstream's stickiness knob
// when the translation set one ("pin+session_id", "pin+prompt_cache_key").
func sessionAffinity(c *snapshot.Compiled) string {
	if c != nil && c.Native != nil && c.Native.Affinity != "" {
		return "pin+" + c.Native.Affinity
	}
	return "pin"
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

var statusLabels = map[int]string{200: "200", 400: "400", 401: "401", 403: "403", 404: "404", 413: "413", 422: "422", 429: "429", 499: "499", 500: "500", 502: "502", 503: "503", 504: "504"}

func statusLabel(code int) string {
	if l, ok := statusLabels[code]; ok {
		return l
	}
	return strconv.Itoa(code)
}
