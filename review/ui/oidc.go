package ui

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/sluicegw/sluice/profiles"
)

// RoleReviewer is the pages' role for a user signed in through the identity
// provider: reads the rows and pages of its scope (an org, or one team of
// it). It holds no API key, so it cannot call the model APIs.
const RoleReviewer = "reviewer"

// oidcCookie binds a sign-in in progress to the browser that started it: it
// holds the state sent to the provider. SameSite=Lax, as the provider's
// redirect back is a cross-site navigation.
const oidcCookie = "sluice_ui_oidc"

// oidcPendingTTL bounds how long a sign-in may take at the provider.
const oidcPendingTTL = 10 * time.Minute

// maxPending bounds the sign-ins in progress kept in memory.
const maxPending = 1000

// reviewer is a session's principal when it signed in through OIDC.
type reviewer struct {
	Subject string
	Name    string
	Group   string
	Org     string
	Team    string
}

// pendingLogin is a sign-in in progress: what the callback must check.
type pendingLogin struct {
	verifier string
	nonce    string
	created  time.Time
}

// relyingParty is the pages' OIDC client for one [ui.oidc] configuration,
// made on first use (discovery) and remade when the configuration changes.
type relyingParty struct {
	cfg      profiles.OIDC
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	provider *oidc.Provider
}

// oidcState is the handler's OIDC state: the relying party and the sign-ins
// in progress.
type oidcState struct {
	mu      sync.Mutex
	rp      *relyingParty
	pending map[string]pendingLogin
}

// oidcHTTP is the client the pages talk to the provider with.
var oidcHTTP = &http.Client{Timeout: 15 * time.Second}

// oidcConfig returns the serving configuration's [ui.oidc], or nil.
func (h *handler) oidcConfig() *profiles.OIDC {
	return h.opts.Snapshot().Config.UI.OIDC
}

// party returns the relying party for the current configuration, running
// discovery against the issuer when the configuration is new.
func (h *handler) party(ctx context.Context) (*relyingParty, error) {
	cfg := h.oidcConfig()
	if cfg == nil {
		return nil, fmt.Errorf("single sign-on is not configured")
	}
	h.oidc.mu.Lock()
	rp := h.oidc.rp
	h.oidc.mu.Unlock()
	if rp != nil && sameOIDC(&rp.cfg, cfg) {
		return rp, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, oidcHTTP), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("identity provider %s: %w", cfg.Issuer, err)
	}
	secret := ""
	if cfg.ClientSecretEnv != "" {
		secret = os.Getenv(cfg.ClientSecretEnv)
	}
	rp = &relyingParty{cfg: *cfg, provider: p,
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: secret, Endpoint: p.Endpoint(), RedirectURL: cfg.RedirectURL,
			Scopes: append([]string{oidc.ScopeOpenID}, cfg.Scopes...)},
		verifier: p.Verifier(&oidc.Config{ClientID: cfg.ClientID})}
	h.oidc.mu.Lock()
	h.oidc.rp = rp
	h.oidc.mu.Unlock()
	return rp, nil
}

func sameOIDC(a, b *profiles.OIDC) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// oidcStart sends the browser to the provider: a fresh state (also in a
// cookie), nonce and PKCE verifier, kept until the callback.
func (h *handler) oidcStart(w http.ResponseWriter, r *http.Request) {
	rp, err := h.party(r.Context())
	if err != nil {
		h.log.Warn("ui: oidc sign-in unavailable", "err", err)
		h.showLogin(w, r, http.StatusServiceUnavailable, "Single sign-on is unavailable: "+err.Error())
		return
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := h.opts.Now()
	h.oidc.mu.Lock()
	for k, p := range h.oidc.pending {
		if now.Sub(p.created) > oidcPendingTTL || len(h.oidc.pending) >= maxPending {
			delete(h.oidc.pending, k)
		}
	}
	h.oidc.pending[state] = pendingLogin{verifier: verifier, nonce: nonce, created: now}
	h.oidc.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: state, Path: "/ui/oidc/", MaxAge: int(oidcPendingTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.opts.OverTLS(r)})
	http.Redirect(w, r, rp.oauth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), http.StatusFound)
}

// oidcCallback completes the sign-in: the state must match the browser's
// cookie, the code is exchanged with the PKCE verifier, the ID token is
// verified (issuer, audience, expiry, signature, nonce) and the groups
// claim mapped to a role by [[ui.oidc.groups]].
func (h *handler) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	c, err := r.Cookie(oidcCookie)
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		h.showLogin(w, r, http.StatusForbidden, "The sign-in did not start in this browser, or took too long; sign in again.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/ui/oidc/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.opts.OverTLS(r)})
	h.oidc.mu.Lock()
	p, ok := h.oidc.pending[state]
	delete(h.oidc.pending, state)
	h.oidc.mu.Unlock()
	if !ok || h.opts.Now().Sub(p.created) > oidcPendingTTL {
		h.showLogin(w, r, http.StatusForbidden, "The sign-in expired; sign in again.")
		return
	}
	if e := q.Get("error"); e != "" {
		h.log.Info("ui: oidc sign-in refused by the provider", "error", e, "description", q.Get("error_description"))
		h.showLogin(w, r, http.StatusUnauthorized, "The identity provider refused the sign-in: "+e+".")
		return
	}
	rp, err := h.party(r.Context())
	if err != nil {
		h.showLogin(w, r, http.StatusServiceUnavailable, "Single sign-on is unavailable: "+err.Error())
		return
	}
	ctx := oidc.ClientContext(r.Context(), oidcHTTP)
	tok, err := rp.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.verifier))
	if err != nil {
		h.log.Warn("ui: oidc code exchange failed", "err", err)
		h.showLogin(w, r, http.StatusUnauthorized, "The identity provider did not accept the sign-in code; sign in again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := rp.verifier.Verify(ctx, raw)
	if err != nil || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.nonce)) != 1 {
		h.log.Warn("ui: oidc ID token rejected", "err", err)
		h.showLogin(w, r, http.StatusUnauthorized, "The identity provider's ID token did not verify; sign in again.")
		return
	}
	claims := map[string]any{}
	_ = idt.Claims(&claims)
	_, hasGroups := claims[rp.cfg.GroupsClaim]
	if !hasGroups || firstString(claims, "email", "preferred_username", "name") == "" {
		// Many providers put groups, and the profile and email claims
		// beside an access token, in the userinfo answer only.
		if ui, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			more := map[string]any{}
			if ui.Claims(&more) == nil && ui.Subject == idt.Subject {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	groups := claimStrings(claims[rp.cfg.GroupsClaim])
	rv := reviewer{Subject: idt.Subject, Name: firstString(claims, "email", "preferred_username", "name")}
	if rv.Name == "" {
		rv.Name = idt.Subject
	}
	m := mapGroups(rp.cfg.Groups, groups)
	if m == nil {
		h.log.Info("ui: oidc sign-in refused: no mapped group", "subject", idt.Subject, "groups", groups)
		h.showLogin(w, r, http.StatusForbidden, "Your account ("+rv.Name+") is in no group that [ui.oidc.groups] maps to a role.")
		return
	}
	rv.Group, rv.Org, rv.Team = m.Group, m.Org, m.Team
	s := h.sess.createReviewer(rv)
	h.log.Info("ui: login", "principal", RoleReviewer, "subject", rv.Subject, "name", rv.Name, "group", rv.Group, "org", rv.Org, "team", rv.Team)
	if old, err := r.Cookie(sessionCookie); err == nil {
		h.sess.delete(old.Value)
	}
	h.setCookie(w, r, sessionCookie, s.id, "/ui", 0)
	// The answer to the provider's redirect is a page that moves on to
	// /ui/ by itself: a redirect here would continue the provider's
	// cross-site chain, on which browsers withhold the SameSite=Strict
	// session cookie.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = signedInPage.Execute(w, rv.Name)
}

var signedInPage = template.Must(template.New("signed-in").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=/ui/"><title>Signed in</title></head>
<body><p>Signed in as {{.}}. <a href="/ui/" id="continue">Continue to the pages</a>.</p></body></html>
`))

// mapGroups returns the first [[ui.oidc.groups]] entry naming one of the
// user's groups, or nil.
func mapGroups(entries []profiles.OIDCGroup, groups []string) *profiles.OIDCGroup {
	for i := range entries {
		if entries[i].Role == RoleReviewer && slices.Contains(groups, entries[i].Group) {
			return &entries[i]
		}
	}
	return nil
}

// claimStrings reads a claim holding a list of strings, or one string.
func claimStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func firstString(claims map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := claims[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// createReviewer stores a new session for a user signed in through OIDC.
func (s *sessions) createReviewer(rv reviewer) *session {
	x := s.create(false, "")
	s.mu.Lock()
	x.reviewer = &rv
	s.mu.Unlock()
	return x
}
