package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/profiles"
)

// cachedAnswer is a response-cache entry: the answer and who served it.
type cachedAnswer struct {
	body           []byte
	servedModel    string
	servedProvider string
	upstream       string
	usage          connectors.Usage
}

// replay answers from the response cache when it holds the answer, and
// reports whether it did. It runs before the expressibility check: a hit
// contacts no provider, so a restriction an upstream cannot express does not
// stop it. Streams are never cached: a replayed stream would not be the
// stream it claims to be.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, t *turn) bool {
	if !t.snap.Config.Cache.Enabled || t.req.Stream {
		return false
	}
	t.noStore = noStore(r.Header)
	if s.decide(r, t) != nil {
		return false // plan reports the failure
	}
	var hit *cachedAnswer
	ok := false
	if t.fetched && !t.fetchedLocal {
		hit, ok = t.fetchedCache, t.fetchedCache != nil // admission read the shared cache
	} else {
		if t.cacheKey == "" { // admission made it when Redis was down
			t.cacheKey, t.cacheID = cacheKey(t)
		}
		var v cachedAnswer
		if v, ok = s.cache.Get(t.cacheID); ok {
			hit = &v
		}
	}
	if !ok {
		s.metrics.Cache.WithLabelValues("miss").Inc()
		t.repeat = s.sighted(t)
		return false
	}
	s.metrics.Cache.WithLabelValues("hit").Inc()
	t.cached = hit
	s.answerCached(w, t)
	return true
}

// sighted records a miss's key among the keys sighted and reports whether
// its answer is to be stored: always with [cache] store_after = 1; with 2
// (the default) only when the key was sighted before, here or, on a fleet,
// on another replica (a first sighting is published with the replica's
// next batch: shared.Client.Sighted). Agent traffic rarely repeats a
// request exactly, so storing every answer costs a miss-heavy workload
// the answers it keeps and writes and never reads; a request that does
// repeat pays one more upstream call before its answer is stored.
func (s *Server) sighted(t *turn) bool {
	if t.snap.Config.Cache.StoreAfter <= 1 {
		return true
	}
	fp := shared.Fingerprint(t.cacheID[:])
	if s.seen.Sight(fp) {
		return true
	}
	if s.fleet != nil {
		s.fleet.Sighted(fp)
	}
	return false
}

// sightingsFor is how many keys sighted once the cache remembers at least:
// max_entries, and at least 32,768 (80 KiB).
func sightingsFor(cfg *profiles.Config) int { return max(cfg.Cache.MaxEntries, 1<<15) }

// cacheKey is an exact match on the normalised request (the routing object
// included), the principal's decision revision and, for a route alias, the
// route's own revision: an edit of the route (on any replica) changes the
// key, so its cached answers are never served again, everywhere at once,
// while other routes keep theirs. It names neither the upstream nor the
// profile revision: an answer is a property of the request and of what
// governance allows, and a hit contacts no provider at all.
//
// It returns the key as the shared cache names it (hex) and as the
// in-process cache keeps it (the digest itself, held in its entry).
func cacheKey(t *turn) (string, cacheID) {
	bp := keyBufs.Get().(*[]byte)
	b := (*bp)[:0]
	// The API first: the same body means another request on another API
	// (and the Messages API's beta flags can change its answer).
	b = append(b, t.api.String()...)
	b = append(b, 0)
	if in := t.req.Inbound; in != nil {
		for _, x := range in.Beta {
			b = append(b, x...)
			b = append(b, ',')
		}
	}
	b = append(b, 0)
	b = append(b, t.key.Principal().String()...)
	b = append(b, 0)
	if t.decision != nil {
		b = append(b, t.decision.Revision()...)
	}
	b = append(b, 0)
	b = append(b, t.snap.RouteRevision(t.req.Model)...)
	b = append(b, 0)
	b = canonicalBody(b, t.body)
	sum := sha256.Sum256(b)
	if cap(b) <= 1<<20 { // a huge request's buffer is not kept
		*bp = b
		keyBufs.Put(bp)
	}
	return hex.EncodeToString(sum[:]), sum
}

// cacheID is a cache key in the in-process cache: a value, so that an
// entry holds its key and its answer in one object.
type cacheID [sha256.Size]byte

// keyBufs are the buffers cache keys are made in.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonicalBody appends the request with its members in sorted order, so
// that the same request written in another member order hits the same
// entry (the body as sent when it cannot be read).
func canonicalBody(dst, raw []byte) []byte {
	b, err := connectors.AppendCanonicalJSON(dst, raw)
	if err != nil {
		return append(dst, raw...)
	}
	return b
}

// keep stores the answer for replay: a non-streaming answer to the request
// as sent (not one a budget capped), when the cache is on.
func (s *Server) keep(t *turn) {
	if c, ok := t.answerToKeep(); ok {
		s.cache.Put(t.cacheID, c)
	}
}

// answerToKeep is the answer as the cache keeps it, false when it must
// not be kept. Only what can be hit again is stored: a non-streaming answer to
// the request as sent (not one a budget capped), when the cache is on, its
// key was sighted before (with [cache] store_after = 2), the request did not
// say no-store, and the body is within [cache] max_answer_bytes. It is the
// answer's own body, not a copy.
func (t *turn) answerToKeep() (cachedAnswer, bool) {
	a := t.final
	if t.cacheKey == "" || !t.repeat || t.noStore || a == nil || !a.out.answered || a.out.streamed || a.capped ||
		int64(len(a.out.body)) > t.snap.Config.Cache.MaxAnswerBytes {
		return cachedAnswer{}, false
	}
	return cachedAnswer{body: a.out.body, servedModel: t.served.model, servedProvider: t.served.provider,
		upstream: a.target.Upstream, usage: a.out.result.Usage}, true
}

// noStore reports whether the request's Cache-Control says no-store: its
// answer is not to be kept (RFC 9111, 5.2.1.5). It may still be served
// from the cache.
func noStore(h http.Header) bool {
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "no-store") {
				return true
			}
		}
	}
	return false
}
