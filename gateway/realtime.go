package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/request"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/guardrails"
)

// GET /v1/realtime: an OpenAI Realtime API session under policy. The whole
// policy path runs before the upgrade (the key, the model from ?model=, the
// guardrail decision, data restrictions, rate limits: a session holds a
// max_parallel slot while open); a refusal is a plain HTTP answer and no
// upstream is contacted. sluice then dials the upstream first and accepts
// the caller only once the upstream accepted: connect fails over across the
// plan's ordinary targets by failure class and never uses a takes_over
// target. Once accepted nothing fails over. Every response.done is metered
// and priced, and a budget must cover a response before its
// response.create is sent (see meter and guard).

// Close codes sluice sends the caller when it ends a session itself.
const (
	// CloseBudget (1008, policy violation): the key's or team's budget is
	// exhausted.
	CloseBudget = websocket.StatusPolicyViolation
	// CloseShutdown (1012, service restart): the gateway is shutting down.
	CloseShutdown = websocket.StatusServiceRestart
	// CloseUpstreamGone (1014, bad gateway): the upstream's connection
	// dropped without a close frame.
	CloseUpstreamGone = websocket.StatusBadGateway
)

// realtime serves GET /v1/realtime.
func (s *Server) realtime(w http.ResponseWriter, r *http.Request) {
	r, e := s.authRequest(w, r, connectors.APIRealtime)
	if r == nil {
		return
	}
	defer s.inflight.leave(e)
	s.serveRealtime(w, r)
}

// serveRealtime is a realtime session's path, the HTTP path's steps in
// order (begin, parse, admit, plan; then connect, accept, relay, settle,
// record).
func (s *Server) serveRealtime(w http.ResponseWriter, r *http.Request) {
	t := s.begin(r, connectors.APIRealtime)
	defer s.record(t)
	if e := s.parseRealtime(r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	if e := s.admit(r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	defer s.depart(t)
	if e := s.plan(r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	s.logLeftOut(t)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), t.snap.Config.Realtime.MaxDuration.Duration)
	defer cancel()
	up, e := s.connect(ctx, r, t)
	if e != nil {
		s.answerError(w, t, e)
		return
	}
	caller, err := acceptSession(w, r, []string{"realtime"}, t.snap.Config.Realtime.MaxFrameBytes)
	if err != nil { // Accept answered the caller itself
		_ = up.CloseNow()
		t.final.out.answered = false
		t.status = http.StatusBadRequest
		return
	}
	up.SetReadLimit(t.snap.Config.Realtime.MaxFrameBytes)
	t.status = http.StatusSwitchingProtocols
	open := s.metrics.RealtimeSessions.WithLabelValues(t.final.target.Upstream)
	open.Inc()
	defer open.Dec()
	rt := newRealtimeSession(s, t, caller, up)
	t.ws = rt.ws
	rt.run(r.Context(), ctx)
	rt.settle()
}

// parseRealtime reads the session's request: the model from ?model= (a
// catalog slug, OpenAI's own id, or a route alias) and a blind caller key.
func (s *Server) parseRealtime(r *http.Request, t *turn) *apierr.Error {
	if !isUpgrade(r) {
		return apierr.New(apierr.CodeInvalidRequest, "GET /v1/realtime is a WebSocket session: send Upgrade: websocket")
	}
	if e := blindCallerKey(r, t); e != nil {
		return e
	}
	req, e := request.ParseRealtime(r.URL.Query().Get("model"))
	if e != nil {
		return e
	}
	req.Model = t.snap.ResolveModel(req.Model, "openai")
	t.req = req
	return nil
}

// connect dials the plan's targets in order until one accepts the session:
// a handshake that fails with a retryable class moves to the next ordinary
// target (never a takes_over one); the plan's first target that accepts
// is the session's. The caller is not accepted before.
func (s *Server) connect(ctx context.Context, r *http.Request, t *turn) (*websocket.Conn, *apierr.Error) {
	t.cur, t.curReason = t.first, firstReason(t)
	for {
		if shutdownCut(r) {
			return nil, errServerShutdown
		}
		tgt := &t.cur
		c, err := t.memo.Compile(tgt.Upstream, tgt.Model)
		if err != nil {
			return nil, s.compileFailed(t, tgt, err)
		}
		if rf := c.Refused(); rf != nil {
			return nil, apierr.FromRefusal(rf)
		}
		t.at = stage{compiled: c, reason: t.curReason}
		key := t.callerKey(tgt.Upstream)
		a := t.newAttempt(tgt, c, t.curReason, key)
		if key == "" {
			a.apiKey, a.metered = c.Upstream.APIKey, true
			if limits := budgetLimits(t); len(limits) > 0 && s.available(t, budget.Month(time.Now()), limits) <= 0 {
				return nil, apierr.New(apierr.CodeBudgetExhausted, fmt.Sprintf("the monthly platform-key budget of key %q or its team is exhausted", t.key.ID))
			}
		} else {
			a.callerKey = true
		}
		t.sent++
		t.final = a
		s.startAttemptSpan(t, a)
		start := time.Now()
		conn, f := s.dialSession(ctx, r, a, t.snap.Config.Server.ForwardHeaders)
		took := time.Since(start)
		a.out.answered, a.out.failure = conn != nil, f
		s.endAttemptSpan(a)
		if conn != nil {
			a.out.ttft = took
			if t.route != nil {
				s.planner.Observe(t.route.Model, a.target, took, true)
			}
			return conn, nil
		}
		a.out.failure = f
		s.metrics.UpstreamErrors.WithLabelValues(a.target.Upstream, f.Class).Inc()
		if t.route != nil && healthFailure(f) {
			s.planner.Observe(t.route.Model, a.target, took, false)
		}
		next, ok, _ := t.targets.NextOrdinary(*tgt, f, a.callerKey)
		if !ok {
			return nil, sessionFailed(a, f)
		}
		s.logFailover(t, a, &next, "failover")
		t.curReason, t.cur = f.String(), next
	}
}

// logLeftOut logs, for a session on a route, each target it will not
// dial and why: a takes_over target (a session never uses one), or one the
// session may not be sent to (its connector does not speak the Realtime
// API, a guardrail, ...), with the refusal's code.
func (s *Server) logLeftOut(t *turn) {
	if t.route == nil || t.snap.Config.Server.LogRequests == "off" {
		return
	}
	for _, tg := range t.route.AllTargets() {
		why := ""
		if tg.Restricted() {
			why = "takes_over"
		} else if c, err := t.memo.Compile(tg.Upstream, tg.Model); err == nil && c.Refused() != nil {
			why = c.Refused().Code
		}
		if why != "" {
			s.log.Info("realtime session leaves a target out", "request_id", t.id, "route", t.route.Model,
				"upstream", tg.Upstream, "model", tg.Model, "reason", why)
		}
	}
}

// sessionFailed is the caller's answer when no target accepted the session:
// the last attempt's own error if the gateway made one (its credentials),
// else what the failure says.
func sessionFailed(a *attempt, f failover.Failure) *apierr.Error {
	if a.out.apiErr != nil {
		return a.out.apiErr
	}
	code := apierr.CodeUpstreamUnavailable
	if f.Class == failover.ClassTimeout {
		code = apierr.CodeUpstreamTimeout
	}
	what := f.String()
	if f.Status > 0 {
		what = strconv.Itoa(f.Status) + " " + what
	}
	return apierr.New(code, fmt.Sprintf("upstream %q did not accept the realtime session (%s)", a.target.Upstream, what))
}

// dialSession opens the attempt's upstream session: the connector's URL as
// a WebSocket's, its credential (a [connectors.Signer]'s too), the caller's OpenAI-Beta as given and the
// configured forward_headers; the handshake is bounded by the upstream's
// first_byte_timeout. Compression is not negotiated, so that every event
// can be read.
func (s *Server) dialSession(ctx context.Context, r *http.Request, a *attempt, forward []string) (*websocket.Conn, failover.Failure) {
	up := a.compiled.Upstream
	base := up.Config.BaseURL
	if o, ok := s.opts.UpstreamURLs[up.Config.Name]; ok {
		base = o
	}
	u, err := connectors.RealtimeURL(base, a.compiled.Native)
	if err != nil {
		return nil, failover.ClassifyTransport(err)
	}
	h := make(http.Header, len(a.compiled.Native.Header)+4)
	for k, v := range a.compiled.Native.Header {
		h[k] = v
	}
	h["User-Agent"] = headerUserAgent
	if v := r.Header.Values("OpenAI-Beta"); len(v) > 0 {
		h["Openai-Beta"] = v
	}
	for _, name := range forward {
		if v := r.Header.Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = v
		}
	}
	up.Connector.Authorize(h, a.apiKey)
	if sg, ok := up.Connector.(connectors.Signer); ok {
		// A signing connector's credentials (Azure's Entra ID bearer) go on
		// the handshake as on any request to it; the request only carries
		// the headers to sign. A credential that cannot be had fails the
		// attempt like an unreachable upstream, answered 502
		// upstream_credentials_unavailable if no other target accepts.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			req.Header = h
			err = sg.Sign(req, nil)
		}
		if err != nil {
			a.out.apiErr = transportError(err)
			return nil, failover.ClassifyTransport(err)
		}
	}
	// The dial's context outlives the handshake: the upgraded connection
	// is the request's, and a cancelled request would drop it without a
	// close frame. The handshake alone is bounded, by a timer and by ctx;
	// the session's end closes the connection itself (run).
	dctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	timer := time.AfterFunc(up.Config.FirstByteTimeout.Duration, func() { cancel(errFirstByte) })
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: s.clientFor(up), HTTPHeader: h,
		CompressionMode: websocket.CompressionDisabled})
	stopped := timer.Stop()
	stop()
	if err == nil {
		return conn, failover.Failure{}
	}
	cancel(nil)
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode > 0 {
		return nil, failover.Classify(resp.StatusCode, resp.Header, nil)
	}
	if !stopped {
		return nil, failover.ClassifyTransport(errFirstByte)
	}
	return nil, failover.ClassifyTransport(err)
}

// realtimeSession is an accepted realtime session: the relay and its books.
type realtimeSession struct {
	s  *Server
	t  *turn
	ws *wsSession
	// ep is the served endpoint, whose prices cost each response (nil:
	// unpriced).
	ep *guardrails.Endpoint

	mu      sync.Mutex
	model   string // the served model as session.created named it
	usage   connectors.Usage
	cost    float64
	priced  bool
	maxOut  int64       // the session's own max_output_tokens (0: none or inf)
	pending []*respHold // reservations of response.create frames sent, oldest first
	limits  []budget.Limit
	metered bool
	// exhausted: the budget ran out; the session is closing.
	exhausted bool
	// started are when the responses in progress were created, oldest
	// first (each response's span starts there).
	started []time.Time
}

// respHold is the budget reservation of one response.create.
type respHold struct {
	release func()
	hold    *shared.Hold
}

func newRealtimeSession(s *Server, t *turn, caller, up *websocket.Conn) *realtimeSession {
	rt := &realtimeSession{s: s, t: t, ws: newWSSession(caller, up), metered: t.final.metered}
	if rt.metered {
		rt.limits = budgetLimits(t)
	}
	rt.served(t.decided)
	return rt
}

// served sets the served model (a session.created's), and the endpoint
// that prices it.
func (rt *realtimeSession) served(reported string) {
	who := rt.t.final.compiled.Served(rt.t.snap.Catalog, connectors.Result{ServedModel: nativeName(reported), ServedProvider: "openai"})
	rt.model, rt.ep = who.Model, who.Endpoint
}

// nativeName strips a catalog slug's author ("openai/gpt-realtime" →
// "gpt-realtime"), as an upstream reports its own model.
func nativeName(m string) string {
	if _, after, ok := strings.Cut(m, "/"); ok {
		return after
	}
	return m
}

// run relays until the session ends, then closes both sides as its end
// says. shutdown is the caller's request context (cut at shutdown), ctx the
// session's (its maximum duration).
func (rt *realtimeSession) run(shutdown, ctx context.Context) {
	ws := rt.ws
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ws.pump(ws.caller, ws.up, ClosedByCaller, rt.guard) }()
	go func() { defer wg.Done(); ws.pump(ws.up, ws.caller, ClosedByUpstream, rt.meter) }()
	both, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-shutdown.Done():
			stop()
		case <-both.Done():
		}
	}()
	ws.wait(both, rt.t.snap.Config.Realtime.IdleTimeout.Duration, func() wsEnd {
		if cutAtShutdown(shutdown) {
			return wsEnd{by: ClosedBySluice, code: CloseShutdown, reason: "the gateway is shutting down"}
		}
		return wsEnd{by: ClosedBySluice, code: websocket.StatusNormalClosure, reason: "maximum session duration reached ([realtime] max_duration)"}
	})
	end := ws.end
	toCaller, reason := end.code, end.reason
	if end.by == ClosedByUpstream {
		reason = "upstream closed the session"
		if end.reason != "" {
			reason += ": " + end.reason
		}
		if !sendable(toCaller) {
			toCaller, reason = CloseUpstreamGone, "upstream connection lost"
		}
	}
	if !sendable(toCaller) {
		toCaller = websocket.StatusNormalClosure
	}
	ws.close(toCaller, reason)
	wg.Wait()
	rt.releaseAll()
}

// guard sees the caller's frames: a response.create is sent only when the
// budget covers a response at its max_output_tokens (sluice sets
// [realtime] max_output_tokens on one that sets none); otherwise the
// caller gets an error event and the frame is dropped.
func (rt *realtimeSession) guard(typ websocket.MessageType, b []byte) ([]byte, bool) {
	if typ != websocket.MessageText || !bytes.Contains(b, evResponseCreate) || eventType(b) != "response.create" {
		return b, true
	}
	var ev map[string]json.RawMessage
	if json.Unmarshal(b, &ev) != nil {
		return b, true // the upstream's to refuse
	}
	var resp map[string]json.RawMessage
	_ = json.Unmarshal(ev["response"], &resp)
	var asked int64
	if json.Unmarshal(resp["max_output_tokens"], &asked) != nil || asked <= 0 {
		// None, or "inf": the session's own cap when it set one below
		// sluice's, else sluice's. A number the caller set stands.
		asked = rt.t.snap.Config.Realtime.MaxOutputTokens
		rt.mu.Lock()
		if rt.maxOut > 0 && rt.maxOut < asked {
			asked = rt.maxOut
		}
		rt.mu.Unlock()
		if resp == nil {
			resp = map[string]json.RawMessage{}
		}
		resp["max_output_tokens"] = json.RawMessage(strconv.FormatInt(asked, 10))
		ev["response"], _ = json.Marshal(resp)
		b, _ = json.Marshal(ev)
	}
	if !rt.reserve(asked) {
		var id string
		_ = json.Unmarshal(ev["event_id"], &id)
		_ = writeFrame(rt.ws.caller, rt.t.snap.Config.Server.WriteTimeout.Duration, budgetErrorEvent(rt.t, id))
		return nil, false
	}
	return b, true
}

// budgetErrorEvent is the Realtime API's error event for a response the
// budget cannot cover, with sluice's code.
func budgetErrorEvent(t *turn, clientEvent string) []byte {
	e := map[string]any{"type": "error", "event_id": "event_sluice_" + t.id,
		"error": map[string]any{"type": "insufficient_quota", "code": apierr.CodeBudgetExhausted, "param": nil,
			"message":  fmt.Sprintf("the monthly platform-key budget of key %q or its team cannot cover this response; it was not sent", t.key.ID),
			"event_id": nullable(clientEvent)}}
	b, _ := json.Marshal(e)
	return b
}

// nullable is s, or JSON null for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// reserve holds a response's worst case under the budgets: its output cap
// at the endpoint's highest output price; false when the budgets cannot
// cover it. An unmetered session (the caller's own key) always may.
func (rt *realtimeSession) reserve(maxOut int64) bool {
	if !rt.metered || len(rt.limits) == 0 {
		return true
	}
	month := budget.Month(time.Now())
	out := rt.outPrice()
	if out <= 0 { // unpriced: refuse only an exhausted budget
		return rt.s.available(rt.t, month, rt.limits) > 0
	}
	want := float64(maxOut) * out / 1e6
	grant, release, hold := rt.s.hold(rt.t, rt.t.final.target.Upstream, rt.t.decided, month, want, rt.limits)
	if grant < want {
		release()
		return false
	}
	rt.mu.Lock()
	rt.pending = append(rt.pending, &respHold{release: release, hold: hold})
	rt.mu.Unlock()
	return true
}

// outPrice is the endpoint's highest output price (audio's, when set).
func (rt *realtimeSession) outPrice() float64 {
	if rt.ep == nil {
		return 0
	}
	p := rt.ep.PriceOut
	if rt.ep.PriceAudioOut != nil {
		p = math.Max(p, *rt.ep.PriceAudioOut)
	}
	return p
}

// realtimeUsage is a response.done's usage.
type realtimeUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	Input        struct {
		Text   int64 `json:"text_tokens"`
		Audio  int64 `json:"audio_tokens"`
		Image  int64 `json:"image_tokens"`
		Cached int64 `json:"cached_tokens"`
		CDet   struct {
			Text  int64 `json:"text_tokens"`
			Audio int64 `json:"audio_tokens"`
			Image int64 `json:"image_tokens"`
		} `json:"cached_tokens_details"`
	} `json:"input_token_details"`
	Output struct {
		Text  int64 `json:"text_tokens"`
		Audio int64 `json:"audio_tokens"`
	} `json:"output_token_details"`
}

// meter sees the upstream's frames (all relayed unchanged): the served
// model from session.created, the session's max_output_tokens from
// session.created and session.updated, and every response.done's usage,
// priced and charged; an input-audio transcription's token usage adds to
// the session's tokens.
func (rt *realtimeSession) meter(typ websocket.MessageType, b []byte) ([]byte, bool) {
	if typ != websocket.MessageText || !metered(b) {
		return b, true
	}
	switch eventType(b) {
	case "session.created", "session.updated":
		var ev struct {
			Session struct {
				Model     string          `json:"model"`
				MaxOutput json.RawMessage `json:"max_output_tokens"`
			} `json:"session"`
		}
		if json.Unmarshal(b, &ev) == nil {
			rt.mu.Lock()
			if ev.Session.Model != "" {
				rt.served(ev.Session.Model)
			}
			var n int64
			if json.Unmarshal(ev.Session.MaxOutput, &n) == nil && n > 0 {
				rt.maxOut = n
			} else {
				rt.maxOut = 0
			}
			rt.mu.Unlock()
		}
	case "response.created":
		rt.mu.Lock()
		rt.started = append(rt.started, time.Now())
		rt.mu.Unlock()
	case "response.done":
		var ev struct {
			Response struct {
				Usage *realtimeUsage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(b, &ev) == nil {
			rt.done(ev.Response.Usage)
		}
	case "conversation.item.input_audio_transcription.completed":
		var ev struct {
			Usage struct {
				Type         string `json:"type"`
				InputTokens  int64  `json:"input_tokens"`
				OutputTokens int64  `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(b, &ev) == nil && ev.Usage.Type == "tokens" {
			rt.mu.Lock()
			rt.usage.PromptTokens += ev.Usage.InputTokens
			rt.usage.CompletionTokens += ev.Usage.OutputTokens
			rt.mu.Unlock()
		}
	}
	return b, true
}

// done books one response: its usage added, its cost priced at the served
// endpoint's prices per modality and charged (with the release of the
// oldest reservation: responses finish in the order they were created); a
// budget then exhausted cancels the response in progress and ends the
// session with CloseBudget.
func (rt *realtimeSession) done(u *realtimeUsage) {
	rt.mu.Lock()
	rt.ws.responses++
	var cost float64
	if u != nil {
		rt.usage.PromptTokens += u.InputTokens
		rt.usage.CompletionTokens += u.OutputTokens
		rt.usage.CachedTokens += u.Input.Cached
		if rt.ep != nil {
			cost = responseCost(rt.ep, u)
			rt.cost += cost
			rt.priced = true
		}
	}
	var h *respHold
	if len(rt.pending) > 0 {
		h, rt.pending = rt.pending[0], rt.pending[1:]
	}
	start := time.Now()
	if len(rt.started) > 0 {
		start, rt.started = rt.started[0], rt.started[1:]
	}
	model := rt.model
	rt.mu.Unlock()
	rt.s.metrics.RealtimeResponses.WithLabelValues(rt.t.final.target.Upstream, strconv.FormatBool(rt.ep != nil)).Inc()
	if rt.t.span != nil {
		rt.responseSpan(start, model, u, cost)
	}
	if !rt.metered {
		return
	}
	s, t := rt.s, rt.t
	month := budget.Month(time.Now())
	scopes := []budget.Scope{budget.KeyScope(t.key.ID), budget.TeamScope(t.key.Org, t.key.Team)}
	if s.fleet == nil {
		s.ledger.Add(month, cost, scopes...)
		if h != nil {
			h.release()
		}
	} else {
		w := shared.Writes{Month: month, Cost: cost, Scopes: scopes}
		if h != nil {
			w.Hold = h.hold
		}
		s.fleet.Write(context.Background(), &w)
	}
	if len(rt.limits) > 0 && s.available(t, month, rt.limits) <= 0 {
		rt.mu.Lock()
		first := !rt.exhausted
		rt.exhausted = true
		rt.mu.Unlock()
		if first {
			_ = writeFrame(rt.ws.up, t.snap.Config.Server.WriteTimeout.Duration, []byte(`{"type":"response.cancel"}`))
			rt.ws.finish(wsEnd{by: ClosedBySluice, code: CloseBudget, reason: "budget exhausted (" + apierr.CodeBudgetExhausted + ")"})
		}
	}
}

// responseCost prices a response's usage at the endpoint's prices per
// modality: text, audio and image input (their cached parts at the cache
// prices), text and audio output. A price the endpoint lacks falls back as
// the catalog documents (audio at the text price, cached at the input's).
func responseCost(ep *guardrails.Endpoint, u *realtimeUsage) float64 {
	or := func(p *float64, d float64) float64 {
		if p != nil {
			return *p
		}
		return d
	}
	audioIn := or(ep.PriceAudioIn, ep.PriceIn)
	imageIn := or(ep.PriceImageIn, ep.PriceIn)
	in := u.Input
	textCached, audioCached, imageCached := in.CDet.Text, in.CDet.Audio, in.CDet.Image
	if textCached+audioCached+imageCached == 0 {
		textCached = min(in.Cached, in.Text) // only the total reported: the text part
	}
	usd := float64(max(in.Text-textCached, 0))*ep.PriceIn + float64(textCached)*ep.CacheReadPrice() +
		float64(max(in.Audio-audioCached, 0))*audioIn + float64(audioCached)*or(ep.PriceAudioCacheRead, audioIn) +
		float64(max(in.Image-imageCached, 0))*imageIn + float64(imageCached)*or(ep.PriceImageCacheRead, imageIn) +
		float64(u.Output.Text)*ep.PriceOut + float64(u.Output.Audio)*or(ep.PriceAudioOut, ep.PriceOut)
	return usd / 1e6
}

// releaseAll frees the reservations of responses that never finished.
func (rt *realtimeSession) releaseAll() {
	rt.mu.Lock()
	pending := rt.pending
	rt.pending = nil
	rt.mu.Unlock()
	for _, h := range pending {
		if h.release != nil {
			h.release()
		}
	}
}

// settle writes what the session learned into the turn, for its row: who
// served, the summed usage and cost. Its charges were made response by
// response.
func (rt *realtimeSession) settle() {
	t := rt.t
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sv := &t.served
	sv.model, sv.provider, sv.usage = rt.model, "openai", rt.usage
	if rt.ep != nil && rt.ep.Provider != "" {
		sv.provider = rt.ep.Provider
	}
	sv.cost = rt.cost
	if rt.priced {
		sv.costSource = "catalog"
	} else if rt.ws.responses > 0 {
		rt.s.log.Warn("realtime session not priced: the catalog has no price for its model", "request_id", t.id, "model", rt.model,
			"code", guardrails.CodeRealtimeUnpriced)
	}
	sv.representationBreak = false
}

// The event types the relay reads, as they appear in a frame: a frame
// without any of them (an audio or text delta, most of a session) is
// relayed without being decoded.
var (
	evResponseCreate = []byte(`"response.create"`)
	evMetered        = [][]byte{[]byte(`"session.created"`), []byte(`"session.updated"`), []byte(`"response.created"`),
		[]byte(`"response.done"`), []byte(`"conversation.item.input_audio_transcription.completed"`)}
)

// metered reports whether a frame may be an event meter reads.
func metered(b []byte) bool {
	for _, ev := range evMetered {
		if bytes.Contains(b, ev) {
			return true
		}
	}
	return false
}

// eventType is an event's type member, "" when it has none.
func eventType(b []byte) string {
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &ev)
	return ev.Type
}

// responseSpan records one response of the session as a span under the
// session's: from its response.created to its response.done, with its
// usage and cost.
func (rt *realtimeSession) responseSpan(start time.Time, model string, u *realtimeUsage, cost float64) {
	t := rt.t
	_, sp := rt.s.tracing.Tracer().Start(t.spanCtx, "realtime.response "+recorded(model), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrOperation.String(t.operation()), attrResponseModel.String(model),
			attrUpstream.String(t.final.target.Upstream)))
	if u != nil {
		sp.SetAttributes(attrInputTokens.Int64(u.InputTokens), attrOutputTokens.Int64(u.OutputTokens), attrCachedTokens.Int64(u.Input.Cached),
			attribute.Float64("sluice.cost_usd", cost))
	}
	sp.End()
}
