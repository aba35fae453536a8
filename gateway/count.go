package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
)

// countTokens is the request path of POST /v1/messages/count_tokens, which
// Claude Code calls to size a conversation. The request is planned like a
// Messages request (guardrails and profiles apply: a forbidden model is
// refused); then the planned target counts it when its upstream speaks the
// Messages API (the count passed through as it comes, an error too), and
// sluice estimates it otherwise, as the planner does (4 bytes a token), for
// no other upstream counts a Messages request. A count spends nothing: no
// budget is reserved, no failover is tried.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	t := s.begin(r, connectors.APICountTokens) // auth: x-api-key or a bearer token
	defer s.record(t)                          // record: the row, whatever happens below
	if e := s.parse(w, r, t); e != nil {
		s.answerError(w, t, e)
		return
	}
	if e := s.plan(r, t); e != nil { // plan: the first target is the one that counts
		s.answerError(w, t, e)
		return
	}
	if e := s.count(w, r, t); e != nil {
		s.answerError(w, t, e)
	}
}

// count counts the request's tokens with the planned target, or estimates.
func (s *Server) count(w http.ResponseWriter, r *http.Request, t *turn) *apierr.Error {
	c, err := t.memo.Compile(t.first.Upstream, t.first.Model) // planning kept only a target that compiles
	if err != nil {
		s.log.Error("compile failed", "request_id", t.id, "upstream", t.first.Upstream, "err", err)
		return internalError()
	}
	t.at = stage{compiled: c}
	h := w.Header()
	h.Set(HeaderUpstream, c.Upstream.Config.Name)
	if c.Native.Path == "" { // the upstream does not count: estimate
		body := t.req.Body
		n := failover.EstimateTokens(body["messages"]) + failover.EstimateTokens(body["system"]) + failover.EstimateTokens(body["tools"])
		h.Set("Content-Type", "application/json")
		h.Set(HeaderCountEstimated, "true")
		t.status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"input_tokens":` + strconv.Itoa(n) + `}`))
		return nil
	}
	key := t.callerKey(c.Upstream.Config.Name)
	if key == "" {
		key = c.Upstream.APIKey
	}
	t.sent = 1
	call, err := s.call(r.Context(), c, false, r.Header, t.snap.Config.Server.ForwardHeaders, key, nil)
	if err != nil {
		if clientGone(r) {
			return errClientGone
		}
		if shutdownCut(r) {
			return errServerShutdown
		}
		return transportError(err)
	}
	defer call.finish()
	b, err := io.ReadAll(io.LimitReader(call.resp.Body, maxErrorBody+1))
	switch {
	case err != nil && shutdownCut(r):
		return errServerShutdown
	case err != nil:
		return transportError(call.readErr(err))
	case len(b) > maxErrorBody:
		return apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's token count exceeded 1 MiB")
	case call.resp.StatusCode == http.StatusOK && !json.Valid(b):
		return apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's token count was not JSON")
	}
	if call.resp.StatusCode == http.StatusOK {
		if b, err = connectors.CountAnswer(c.Upstream.Connector, b); err != nil {
			return apierr.New(apierr.CodeUpstreamBadResponse, "the upstream's token count could not be read")
		}
	}
	call.complete = true
	h.Set("Content-Type", "application/json")
	t.status = call.resp.StatusCode
	w.WriteHeader(call.resp.StatusCode)
	_, _ = w.Write(b)
	return nil
}
