package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/request"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
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
	// socket: the request is one response.create frame of a Responses
	// WebSocket (responses_ws.go).
	socket bool
}

// KeyFrom returns the authenticated key of a request, or nil.
func KeyFrom(ctx context.Context) *profiles.Key { return authFrom(ctx).key }

// authFrom returns what authenticate attached to the request.
func authFrom(ctx context.Context) authenticated {
	a, _ := ctx.Value(authCtx).(authenticated)
	return a
}

// authenticate resolves the API key to its principal. A missing or unknown
// key gets 401; such requests have no principal and are counted in metrics,
// not recorded in the request log.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.authenticateFor(connectors.APIChat, next)
}

// authenticateMessages is authenticate for the Messages API: the key comes
// from x-api-key, as Anthropic clients send it, or from Authorization:
// Bearer, and a refusal is in the Messages API's error shape.
func (s *Server) authenticateMessages(next http.Handler) http.Handler {
	return s.authenticateFor(connectors.APIMessages, next)
}

// authenticateFor authenticates a request of an API.
func (s *Server) authenticateFor(api connectors.API, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, e := s.authRequest(w, r, api)
		if r == nil {
			return
		}
		defer s.inflight.leave(e)
		next.ServeHTTP(w, r)
	})
}

// authRequest authenticates r: the request to serve, carrying what was
// found, registered in flight (leave e when it is served), or nil when it
// was refused (and answered). Out of the middleware, whose frame stays on
// the stack under every request, open streams' included.
//
//go:noinline
func (s *Server) authRequest(w http.ResponseWriter, r *http.Request, api connectors.API) (*http.Request, *inflightReq) {
	secret, hint := access.BearerToken, "send Authorization: Bearer <key>"
	if messagesShape(api) {
		secret, hint = access.APIKey, "send x-api-key: <key> or Authorization: Bearer <key>"
	}
	if api == connectors.APIRealtime {
		secret, hint = sessionSecret, "send Authorization: Bearer <key>, x-api-key: <key>, or the subprotocol openai-insecure-api-key.<key>"
	}
	// Every answer of the API carries its request id, a refusal too.
	start := time.Now()
	id := newRequestID(start)
	w.Header().Set(HeaderRequestID, id)
	if messagesShape(api) {
		// The id where Anthropic clients read a request's id (an SDK's
		// _request_id, an error's requestID).
		w.Header().Set(HeaderMessagesRequestID, id)
	}
	snap := s.snap.Load()
	k := access.Key(snap.Config, secret(r))
	if k == nil {
		s.metrics.AuthFailures.Inc()
		s.logUnauthorized(r, snap, api, id, start)
		writeAPIError(w, api, apierr.New(apierr.CodeUnauthorized, "missing or unknown API key; "+hint))
		return nil, nil
	}
	ctx, e := s.inflight.enter(r.Context())
	return r.WithContext(context.WithValue(ctx, authCtx, authenticated{key: k, snap: snap, id: id, start: start})), e
}

// logUnauthorized writes the log line of a request refused for a missing
// or unknown key (it has no row): under log_requests "errors" and "all",
// like any other refusal.
//
//go:noinline
func (s *Server) logUnauthorized(r *http.Request, snap *snapshot.Snapshot, api connectors.API, id string, start time.Time) {
	if snap.Config.Server.LogRequests == "off" {
		return
	}
	// On a goroutine of its own, as record's line: slog's frames (about 3.4
	// KiB) would land on the connection's stack, which a keep-alive
	// connection keeps (stack_test.go).
	path, latency := r.URL.Path, time.Since(start).Microseconds()
	connectors.OwnStack(func() {
		s.log.Info("request", "request_id", id, "api", api.String(), "path", path, "status", http.StatusUnauthorized,
			"refused_code", apierr.CodeUnauthorized, "latency_us", latency)
	})
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

// begin starts the turn of an authenticated request of an API, in storage
// from turns: a turn is large (~2.7 KB), and serve, whose turn nothing
// holds once it returns, gives it back (endTurn). Every other caller leaves
// its turn to the collector.
func (s *Server) begin(r *http.Request, api connectors.API) *turn {
	a := authFrom(r.Context())
	t := turns.Get().(*turn)
	// Field by field: a composite literal would be built on the stack first.
	t.id, t.start, t.snap, t.key, t.api, t.path, t.socket = a.id, a.start, a.snap, a.key, api, r.URL.Path, a.socket
	s.startSpan(r, t)
	return t
}

// turns holds cleared turns.
var turns = sync.Pool{New: func() any { return new(turn) }}

// endTurn clears t, which nothing refers to any more, and gives it back to
// turns.
func endTurn(t *turn) {
	*t = turn{}
	turns.Put(t)
}

// errClientGone ends a request whose caller left: there is nobody to
// answer, and the row records 499.
var errClientGone = &apierr.Error{Code: "client_gone"}

// parse reads and validates the request: a blind caller key, the session id, the body within
// max_body_bytes, and the body itself.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, t *turn) *apierr.Error {
	if e := blindCallerKey(r, t); e != nil {
		return e
	}
	if name, sid := t.snap.Config.Sessions.Lookup(r.Header); sid != "" {
		if !validSessionID(sid) {
			return apierr.New(apierr.CodeInvalidRequest, name+" must be 1 to 128 printable ASCII characters")
		}
		t.session, t.sessionKey = sid, name
		t.pinKey = t.key.ID + "\x00" + sid
	}
	limit := t.snap.Config.Server.MaxBodyBytes
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierr.New(apierr.CodeBodyTooLarge, "request body exceeds the gateway's limit ([server] max_body_bytes)")
		}
		return errClientGone // the client went away while sending
	}
	// Read to its end, the body is closed: net/http then knows there is
	// nothing left to drain before the answer's headers (it would otherwise
	// try, in a deep frame of a stream's first flush).
	_ = r.Body.Close()
	req, perr := s.parseAPI(r, t, body)
	if perr != nil {
		return perr
	}
	t.req, t.body = req, body
	if t.session == "" && t.api == connectors.APIResponses && len(t.snap.Config.Sessions.Headers) > 0 {
		// The Responses API's own cache-routing key names the session
		// where no session header does (Codex sends its thread id in both).
		// One sluice cannot use as a session id (longer than 128 bytes,
		// say) is the upstream's alone.
		var key string
		if v, ok := req.Body["prompt_cache_key"]; ok && json.Unmarshal(v, &key) == nil && validSessionID(key) {
			t.session, t.sessionKey = key, SessionKeyPromptCacheKey
			t.pinKey = t.key.ID + "\x00" + key
		}
	}
	return nil
}

// SessionKeyPromptCacheKey is the session_key a row records when a
// Responses request's prompt_cache_key named its session (no session
// header did).
const SessionKeyPromptCacheKey = "prompt_cache_key"

// parseAPI parses a body in the shape of the request's API. A Messages or
// embeddings request may name its model as its clients do (an Anthropic
// model id, dated or not; an OpenAI one): a name that is no route alias and
// no catalog slug is resolved through the catalog's names.
func (s *Server) parseAPI(r *http.Request, t *turn, body []byte) (*request.Request, *apierr.Error) {
	var (
		req  *request.Request
		perr *apierr.Error
		own  string // the direct provider whose model ids the API's clients use
	)
	switch t.api {
	case connectors.APIMessages:
		req, perr = request.ParseMessages(body, r.Header.Values("Anthropic-Beta"))
		own = "anthropic"
	case connectors.APICountTokens:
		req, perr = request.ParseCountTokens(body, r.Header.Values("Anthropic-Beta"))
		own = "anthropic"
	case connectors.APIEmbeddings:
		req, perr = request.ParseEmbeddings(body)
		own = "openai"
	case connectors.APIResponses:
		req, perr = request.ParseResponses(body)
		own = "openai"
	default:
		return request.Parse(body)
	}
	if perr != nil {
		return nil, perr
	}
	req.Model = t.snap.ResolveModel(req.Model, own)
	return req, nil
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
