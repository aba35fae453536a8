package gateway

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/lru"
)

// Attempt throttles: per client address, a token bucket for compliance-page
// logins (every POST /ui/login) and one for admin-API calls that do not
// carry the admin token (guesses at it).
const (
	loginBurst   = 10
	loginPerSec  = 1.0 / 6 // 10 a minute
	adminBurst   = 60
	adminPerSec  = 1.0 // 60 a minute
	throttleKeep = 10000
	throttleTTL  = 10 * time.Minute
)

// throttle is a token bucket per client address, in a bounded table.
type throttle struct {
	burst, perSec float64
	mu            sync.Mutex
	buckets       *lru.Cache[string, *bucket]
	now           func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(burst int, perSec float64) *throttle {
	return &throttle{burst: float64(burst), perSec: perSec, buckets: lru.New[string, *bucket](throttleKeep, throttleTTL), now: time.Now}
}

// take spends one token of the client's bucket; ok is false when it is
// empty, with the wait until the next token.
func (t *throttle) take(client string) (ok bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b, found := t.buckets.Get(client)
	if !found {
		b = &bucket{tokens: t.burst, at: now}
		t.buckets.Put(client, b)
	}
	b.tokens = math.Min(t.burst, b.tokens+now.Sub(b.at).Seconds()*t.perSec)
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / t.perSec * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// clientAddr is the address a request came from (the connection's peer).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// throttled wraps h: a client past its bucket gets 429 too_many_attempts
// with Retry-After, before h runs. only, when set, picks the requests
// that count (the others pass untouched).
func (s *Server) throttled(t *throttle, only func(*http.Request) bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if only == nil || only(r) {
			if ok, wait := t.take(clientAddr(r)); !ok {
				s.log.Warn("too many attempts from one client", "client", clientAddr(r), "path", r.URL.Path)
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
				writeError(w, apierr.New(apierr.CodeTooManyAttempts, "too many attempts from this address; retry after the Retry-After seconds"))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
