package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/sluicegw/sluice/gateway/access"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

type ctxKey int

const authCtx ctxKey = iota

// authenticated is what authentication attaches to a request: the key and
// the configuration it was found in, so that the whole request is served by
// one configuration revision even if a reload lands meanwhile.
type authenticated struct {
	key  *profiles.Key
	snap *snapshot.Snapshot
	// id is the request id, made before authentication so that a refused
	// request carries one too.
	id    string
	start time.Time
}

// KeyFrom returns the authenticated key of a request, or nil.
func KeyFrom(ctx context.Context) *profiles.Key {
	a, _ := ctx.Value(authCtx).(authenticated)
	return a.key
}

// snapshotFrom returns the configuration the request was authenticated
// against.
func snapshotFrom(ctx context.Context) *snapshot.Snapshot {
	a, _ := ctx.Value(authCtx).(authenticated)
	return a.snap
}

// requestIDFrom returns the request's id and when it arrived; the id is ""
// for a request that did not pass authenticate.
func requestIDFrom(ctx context.Context) (string, time.Time) {
	a, _ := ctx.Value(authCtx).(authenticated)
	return a.id, a.start
}

// authenticate resolves the API key to its principal. A missing or unknown
// key gets 401; such requests have no principal and are counted in metrics,
// not recorded in the request log.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer of the API carries its request id, a refusal too.
		start := time.Now()
		id := newRequestID(start)
		w.Header().Set(HeaderRequestID, id)
		snap := s.snap.Load()
		k := access.Key(snap.Config, access.BearerToken(r))
		if k == nil {
			s.metrics.AuthFailures.Inc()
			writeError(w, apierr.New(apierr.CodeUnauthorized, "missing or unknown API key; send Authorization: Bearer <key>"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), authCtx, authenticated{key: k, snap: snap, id: id, start: start})))
	})
}

func writeError(w http.ResponseWriter, e *apierr.Error) { apierr.Write(w, e) }

func notFound(r *http.Request) *apierr.Error {
	return apierr.New(apierr.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
}

func internalError() *apierr.Error {
	return apierr.New(apierr.CodeInternal, "internal error; the gateway log has the details under the request id")
}
