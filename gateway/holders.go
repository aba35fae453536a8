package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/store/holders"
)

// Stored Responses API responses are a placement restriction. An upstream
// that stores responses (OpenAI's) keeps each one it answered with store
// left true, and only that upstream can continue it: a request naming it in
// previous_response_id, and GET or DELETE /v1/responses/{id}, go there and
// nowhere else — no failover, no chain onto another upstream. sluice
// records which upstream answered each stored response, and for which key
// ([responses] ttl; in the fleet's Redis with [shared] redis_url, else in
// data_dir's state file, read through each replica's bounded table), and
// places the request by it. A response it has no record of is not found:
// its continuation, GET and DELETE are refused, never sent (the upstream
// would answer anyone on the platform key). The marketplaces' Responses
// endpoints are stateless: they never hold a response, and a continuation
// is never sent to them.

// keepHolder records, in this replica's table, the upstream that stored
// the turn's response, and returns the id and the value the fleet's table
// takes (settle writes them with the turn's other shared writes); "" when
// the response was not stored.
func (s *Server) keepHolder(t *turn, a *attempt) (id, value string) {
	res := &a.out.result
	if t.api != connectors.APIResponses || res.ResponseID == "" || !res.Stored ||
		!connectors.ResponsesStateful(a.compiled.Upstream.Connector) {
		return "", ""
	}
	h := holder{upstream: a.target.Upstream, key: t.key.ID}
	s.holders.Put(res.ResponseID, h)
	if s.holderFile != nil {
		s.holderFile.Put(res.ResponseID, holders.Holder{Upstream: h.upstream, Key: h.key}, t.snap.Config.Responses.TTL.Duration)
	}
	return res.ResponseID, h.upstream + "\x00" + h.key
}

// holder is where a stored response is: the upstream that stored it, and
// the key whose request it answered (only that key continues, reads or
// deletes it: the upstream holds every tenant's responses under one
// platform key).
type holder struct{ upstream, key string }

// holderOf returns where a response is stored; ok is false when no replica
// recorded it (or the record cannot be read: then nobody may use it).
func (s *Server) holderOf(ctx context.Context, id string) (holder, bool) {
	if h, ok := s.holders.Get(id); ok {
		return h, true
	}
	if s.holderFile != nil {
		f, ok, err := s.holderFile.Get(ctx, id)
		if err != nil {
			s.log.Error("reading a stored response's holder failed", "err", err)
		}
		if !ok {
			return holder{}, false
		}
		h := holder{upstream: f.Upstream, key: f.Key}
		s.holders.Put(id, h)
		return h, true
	}
	if s.fleet != nil {
		if v, ok, err := s.fleet.Holder(ctx, id); err == nil && ok {
			up, key, _ := strings.Cut(v, "\x00")
			h := holder{upstream: up, key: key}
			s.holders.Put(id, h)
			return h, true
		}
	}
	return holder{}, false
}

// notYours refuses a key access to another key's stored response, in words
// that do not confirm the response exists.
func notYours(id string) *apierr.Error {
	return apierr.New(apierr.CodeNotFound, fmt.Sprintf("no stored response %q is known to this gateway for this key (it records where each response is for [responses] ttl)", id))
}

// placeContinuation restricts a continuation's plan to the one target that
// can continue it: the first target on the upstream that stored the
// response. The request is then never sent anywhere else. One that no
// target storing responses could take is refused first, whatever its id (a
// marketplace is stateless). A response sluice
// has no record of (older than [responses] ttl, stored before sluice
// fronted it, or by a replica whose record is lost) is refused as another
// key's is: sent on the platform key, any key could continue any tenant's
// response.
func (s *Server) placeContinuation(ctx context.Context, t *turn) *apierr.Error {
	prev := t.req.PreviousResponse()
	if prev == "" {
		return nil
	}
	stateful := func(tgt failover.Target) bool {
		u := t.snap.Upstreams[tgt.Upstream]
		return u != nil && connectors.ResponsesStateful(u.Connector)
	}
	if _, ok := t.targets.Find(stateful); !ok { // whatever the id: this says nothing of it
		return apierr.New(apierr.CodeResponseElsewhere, fmt.Sprintf(
			"response %q can only be continued by an upstream that stores responses, and none of this request's targets does (the marketplaces' Responses endpoints are stateless: send the whole input with store false instead)", prev))
	}
	h, known := s.holderOf(ctx, prev)
	if !known || h.key != t.key.ID {
		return notYours(prev)
	}
	tgt, ok := t.targets.Find(func(tgt failover.Target) bool { return tgt.Upstream == h.upstream })
	if !ok {
		return apierr.New(apierr.CodeResponseElsewhere, fmt.Sprintf(
			"response %q is stored by upstream %q, which this request may not be sent to; a continuation goes only where its response is stored", prev, h.upstream))
	}
	if tgt.Upstream != t.first.Upstream || tgt.Model != t.first.Model {
		t.first = tgt
		p := t.memo.Plan(tgt.Model)
		t.decided, t.chain = p.DecidedModel, p.Chain
	}
	t.targets = failover.Single(tgt)
	return nil
}

// storedResponse serves GET and DELETE /v1/responses/{id}: passed to the
// upstream that stored the response, with the platform key of that
// upstream, and answered as it answered. A response sluice has no record of
// is not found. Its row is written as every request's is (record), its api
// naming the operation (rowAPIResponsesGet, rowAPIResponsesDelete).
func (s *Server) storedResponse(w http.ResponseWriter, r *http.Request) {
	t := s.begin(r, connectors.APIResponses)
	t.stored = rowAPIResponsesGet
	if r.Method == http.MethodDelete {
		t.stored = rowAPIResponsesDelete
	}
	defer s.record(t)
	if e := s.passStored(w, r, t, chi.URLParam(r, "id")); e != nil {
		s.answerError(w, t, e)
	}
}

// The row's api of a stored response's GET and DELETE.
const (
	rowAPIResponsesGet    = "responses_get"
	rowAPIResponsesDelete = "responses_delete"
)

// apiName is the row's api: the API the request came in on, or the
// operation on a stored response.
func (t *turn) apiName() string {
	if t.stored != "" {
		return t.stored
	}
	if t.socket {
		return rowAPIResponsesWS
	}
	return t.api.String()
}

// passStored passes a GET or DELETE of the stored response id to the
// upstream that holds it, for the key that stored it.
func (s *Server) passStored(w http.ResponseWriter, r *http.Request, t *turn, id string) *apierr.Error {
	h, ok := s.holderOf(r.Context(), id)
	up := t.snap.Upstreams[h.upstream]
	if !ok || up == nil || t.key == nil || h.key != t.key.ID {
		return notYours(id)
	}
	t.first = failover.Target{Upstream: h.upstream}
	base := up.Config.BaseURL
	if o, ok := s.opts.UpstreamURLs[up.Config.Name]; ok {
		base = o
	}
	ctx, cancel := context.WithTimeout(r.Context(), up.Config.Timeout.Duration)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, base+"/responses/"+id, nil)
	if err != nil {
		return internalError()
	}
	req.Header["User-Agent"] = headerUserAgent
	req.Header["Accept"] = headerJSON
	up.Connector.Authorize(req.Header, up.APIKey)
	if sg, ok := up.Connector.(connectors.Signer); ok {
		if err := sg.Sign(req, nil); err != nil {
			return transportError(err)
		}
	}
	t.sent = 1
	resp, err := s.clientFor(up).Do(req)
	if err != nil {
		if clientGone(r) {
			return errClientGone
		}
		return apierr.New(apierr.CodeUpstreamUnavailable, fmt.Sprintf("upstream %q did not answer: %v", h.upstream, err))
	}
	defer resp.Body.Close()
	if r.Method == http.MethodDelete && resp.StatusCode == http.StatusOK {
		s.holders.Delete(id)
		if s.holderFile != nil {
			s.holderFile.Delete(id)
		}
		if s.fleet != nil {
			s.fleet.DropHolder(r.Context(), id)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set(HeaderUpstream, h.upstream)
	t.status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 64<<20))
	return nil
}
