package ui

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// session is a logged-in browser. The cookie carries only id; the principal
// stays here, so no token ever reaches the browser after the login form.
type session struct {
	id   string
	csrf string
	// admin is true for the admin token; otherwise keyID names the analyst
	// key, re-checked against the current configuration on every request.
	admin bool
	keyID string
	// reviewer is set for a sign-in through the identity provider (oidc.go).
	reviewer *reviewer
	created  time.Time
	seen     time.Time
	// seq orders sessions by creation, breaking ties between sessions last
	// used at the same instant.
	seq uint64
}

// sessions is the bounded, expiring, in-memory session table.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*session
	max    int
	idle   time.Duration
	maxAge time.Duration
	now    func() time.Time
	seq    uint64
}

func newSessions(max int, idle, maxAge time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[string]*session{}, max: max, idle: idle, maxAge: maxAge, now: now}
}

// randomToken returns 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a session id
		// must never be predictable, so refuse to go on.
		panic("ui: crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) expired(x *session, now time.Time) bool {
	return now.Sub(x.seen) > s.idle || now.Sub(x.created) > s.maxAge
}

// maxPerPrincipal bounds the sessions one principal (the admin, or one
// analyst key) holds: its next login ends its own least recently used
// session, so that one principal logging in over and over cannot push
// everybody else's sessions out of the table.
const maxPerPrincipal = 8

// samePrincipal reports whether two sessions are the same principal's.
func samePrincipal(a, b *session) bool { return a.admin == b.admin && a.keyID == b.keyID }

// lru reports whether y was used less recently than x (of equals, created
// earlier).
func lru(y, x *session) bool {
	return x == nil || y.seen.Before(x.seen) || (y.seen.Equal(x.seen) && y.seq < x.seq)
}

// create stores a new session for the principal. A principal at
// maxPerPrincipal live sessions loses its own least recently used one.
// When the table is still full it drops expired sessions, then the least
// recently used one.
func (s *sessions) create(admin bool, keyID string) *session {
	now := s.now()
	x := &session{id: randomToken(), csrf: randomToken(), admin: admin, keyID: keyID, created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	x.seq = s.seq
	var own, ownOldest *session
	n := 0
	for id, y := range s.m {
		if s.expired(y, now) {
			delete(s.m, id)
			continue
		}
		if samePrincipal(y, x) {
			n++
			if lru(y, ownOldest) {
				ownOldest = y
			}
		}
	}
	if n >= maxPerPrincipal && ownOldest != nil {
		own = ownOldest
		delete(s.m, own.id)
	}
	if len(s.m) >= s.max {
		var oldest *session
		for id, y := range s.m {
			if s.expired(y, now) {
				delete(s.m, id)
				continue
			}
			if oldest == nil || y.seen.Before(oldest.seen) || (y.seen.Equal(oldest.seen) && y.seq < oldest.seq) {
				oldest = y // least recently used; of equals, the oldest
			}
		}
		if len(s.m) >= s.max && oldest != nil {
			delete(s.m, oldest.id)
		}
	}
	s.m[x.id] = x
	return x
}

// get returns a copy of the live session with the id and marks it used, or
// nil.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.m[id]
	if x == nil {
		return nil
	}
	if s.expired(x, now) {
		delete(s.m, id)
		return nil
	}
	x.seen = now
	c := *x
	return &c
}

// delete ends the session.
func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// len returns the number of stored sessions (live or not yet swept).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
