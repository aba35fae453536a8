// Package ui serves the compliance pages under /ui/: an overview of how often
// requests were degraded, refused, switched or fell back (per day and team),
// the filterable request-log rows with CSV and JSON exports, a glossary of
// every badge, and one row's detail
// with the explain output of its compile re-run against the current
// configuration. Pages are rendered on the server with html/template; the
// stylesheet is embedded and the charts are inline SVG, so nothing is loaded
// from the network and no script runs.
//
// A reviewer logs in once with the admin token or an analyst key's secret,
// or, with [ui.oidc], through the company's identity provider (oidc.go).
// The browser then holds only an opaque session id (HttpOnly, SameSite=Strict
// cookie) mapped in memory to the principal; analyst keys see only their own
// team's rows on every page.
//
// It is a review tool: it reads the request-log store and compiles through
// snapshot, and never imports the gateway, which mounts it under /ui/
// through gateway.Options.Pages (cmd/sluice wires the two).
package ui

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Cookie names. The session cookie holds an opaque random id only. Over
// TLS they carry the __Host- prefix (cookieName), which makes a browser
// keep them only when Secure, for Path=/ and without Domain: no sibling
// host or plain-HTTP page of the site can set or shadow them.
const (
	sessionCookie = "sluice_ui"
	loginCookie   = "sluice_ui_login"
	// hostPrefix is the cookie-name prefix browsers hold to Secure, Path=/
	// and no Domain.
	hostPrefix = "__Host-"
)

// cookieName is the name a cookie has for this request: __Host- prefixed
// over TLS (directly or to a trusted proxy). Over plain HTTP (a loopback
// trial) the prefix cannot hold (it needs Secure, which a browser drops
// outside a secure context), so the bare name is used, Path-scoped to
// the pages as before.
func (h *handler) cookieName(r *http.Request, name string) string {
	if h.opts.OverTLS(r) {
		return hostPrefix + name
	}
	return name
}

// cookie reads one of the pages' cookies under its name for the request.
func (h *handler) cookie(r *http.Request, name string) (*http.Cookie, error) {
	return r.Cookie(h.cookieName(r, name))
}

// contentSecurityPolicy allows the embedded stylesheet and nothing else: no
// script, no inline style, no frames, forms posting only to this origin.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Options configure the handler returned by [New].
type Options struct {
	// Store is the request log the pages read. Required. Stores that
	// implement [requestlog.Summarizer] aggregate the overview in the
	// database; others are read row by row.
	Store requestlog.Store
	// AdminToken logs in as the admin, who sees every team. Default "": only
	// analyst keys can log in.
	AdminToken string
	// Snapshot returns the configuration currently serving: analyst keys
	// are looked up in it (at login and on every request, so a removed key
	// or role ends its sessions) and the row detail re-runs explain on it.
	// Required.
	Snapshot func() *snapshot.Snapshot
	// Logger receives login and failure logs. Default: slog.Default().
	Logger *slog.Logger
	// SessionIdle ends a session unused for this long. Default 30m.
	SessionIdle time.Duration
	// SessionMaxAge ends a session this long after login, used or not.
	// Default 12h.
	SessionMaxAge time.Duration
	// MaxSessions bounds the session table; a login beyond it evicts the
	// least recently used session. Default 1000.
	MaxSessions int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// WhatIf weighs the change from the serving configuration to another
	// directory by the request log, for the admin's what-if page. Default
	// nil: the page says it is not available.
	WhatIf WhatIfFunc
	// OverTLS reports whether the browser's request came over TLS, which
	// makes the cookies Secure. Default: r.TLS != nil (the gateway passes
	// one that also believes X-Forwarded-Proto from [server]
	// trusted_proxies).
	OverTLS func(r *http.Request) bool
}

// handler serves the pages.
type handler struct {
	opts Options
	log  *slog.Logger
	sess *sessions
	mux  *http.ServeMux
	// whatIfSlot admits one what-if run at a time.
	whatIfSlot chan struct{}
	// oidc is the single sign-on state (oidc.go).
	oidc oidcState
}

// page names; each is templates/<name>.html rendered inside the layout.
var pageNames = []string{"login", "overview", "rows", "detail", "whatif", "error", "glossary"}

// pageTemplates parses the pages' templates when the first page is rendered,
// once per process: a gateway whose pages nobody opens keeps none of them
// (about 0.25 MB of parse trees). They are embedded, so a parse error is a
// programming mistake (TestPageTemplatesParse), and its panic names the
// template's file and line.
var pageTemplates = sync.OnceValue(func() map[string]*template.Template {
	funcs := template.FuncMap{"join": strings.Join, "help": helpText, "helpLink": helpLink}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html"))
	}
	return pages
})

// New returns the handler of the compliance pages. It serves paths under
// /ui/ (mount it at /ui without stripping the prefix) and panics when a
// required option is missing, a wiring mistake.
func New(opts Options) http.Handler {
	if opts.Store == nil || opts.Snapshot == nil {
		panic("ui: Options.Store and Options.Snapshot are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = 30 * time.Minute
	}
	if opts.SessionMaxAge <= 0 {
		opts.SessionMaxAge = 12 * time.Hour
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.OverTLS == nil {
		opts.OverTLS = func(r *http.Request) bool { return r.TLS != nil }
	}
	h := &handler{opts: opts, log: opts.Logger, whatIfSlot: make(chan struct{}, 1),
		sess: newSessions(opts.MaxSessions, opts.SessionIdle, opts.SessionMaxAge, opts.Now)}
	h.oidc.pending = map[string]pendingLogin{}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic("ui: embedded static files: " + err.Error())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui/login", h.loginPage)
	mux.HandleFunc("POST /ui/login", h.login)
	mux.HandleFunc("POST /ui/logout", h.authed(h.logout))
	mux.HandleFunc("GET /ui/oidc/start", h.oidcStart)
	mux.HandleFunc("GET /ui/oidc/callback", h.oidcCallback)
	mux.HandleFunc("GET /ui/{$}", h.authed(h.overview))
	mux.HandleFunc("GET /ui/rows", h.authed(h.rows))
	mux.HandleFunc("GET /ui/rows.csv", h.authed(h.rowsCSV))
	mux.HandleFunc("GET /ui/rows.json", h.authed(h.rowsJSON))
	mux.HandleFunc("GET /ui/glossary", h.authed(h.glossaryPage))
	mux.HandleFunc("GET /ui/rows/{id}", h.authed(h.detail))
	mux.HandleFunc("GET /ui/whatif", h.authed(h.whatIf))
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, nil, http.StatusNotFound, "No such page.")
	})
	h.mux = mux
	return h
}

// ServeHTTP sets the security headers on every answer, then routes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// viewer is the principal behind a request's session, resolved against the
// current configuration.
type viewer struct {
	sessionID string
	// CSRF is the session's token for state-changing forms.
	CSRF string
	// Admin sees every team; otherwise KeyID is an analyst key of Team
	// in Org.
	Admin bool
	KeyID string
	Org   string
	Team  string
	// Reviewer names a user signed in through the identity provider (role
	// reviewer; KeyID is empty, Team is empty for an org-wide scope).
	Reviewer string
}

// Label names the viewer in the page header.
func (v *viewer) Label() string {
	if v.Admin {
		return "admin"
	}
	if v.Reviewer != "" {
		scope := "org " + v.Org
		if v.Team != "" {
			scope = "team " + v.Team
		}
		return "reviewer " + v.Reviewer + " (" + scope + ")"
	}
	return "analyst " + v.KeyID + " (team " + v.Team + ")"
}

// resolve returns the request's viewer, or nil without a live session. A
// session whose key was removed or lost the analyst role is ended.
func (h *handler) resolve(r *http.Request) *viewer {
	c, err := h.cookie(r, sessionCookie)
	if err != nil {
		return nil
	}
	s := h.sess.get(c.Value)
	if s == nil {
		return nil
	}
	v := &viewer{sessionID: s.id, CSRF: s.csrf, Admin: s.admin, KeyID: s.keyID}
	if s.admin {
		if h.opts.AdminToken == "" {
			h.sess.delete(s.id)
			return nil
		}
		return v
	}
	if rv := s.reviewer; rv != nil {
		// The session lasts while [ui.oidc] still maps its group to the
		// same scope.
		cfg := h.oidcConfig()
		if cfg == nil {
			h.sess.delete(s.id)
			return nil
		}
		m := mapGroups(cfg.Groups, []string{rv.Group})
		if m == nil || m.Org != rv.Org || m.Team != rv.Team {
			h.sess.delete(s.id)
			return nil
		}
		v.Reviewer, v.Org, v.Team = rv.Name, rv.Org, rv.Team
		return v
	}
	k := h.opts.Snapshot().Config.KeyByID(s.keyID)
	if k == nil || !k.HasRole(access.RoleAnalyst) {
		h.sess.delete(s.id)
		return nil
	}
	v.Org, v.Team = k.Org, k.Team
	return v
}

// authed runs next with the viewer, or sends the browser to the login page.
func (h *handler) authed(next func(http.ResponseWriter, *http.Request, *viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := h.resolve(r)
		if v == nil {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				h.errorPage(w, r, nil, http.StatusUnauthorized, "Your session has ended; log in again.")
				return
			}
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		next(w, r, v)
	}
}

// base is what the layout shows on every page.
type base struct {
	Title  string
	Nav    string
	Viewer *viewer
}

// render executes a page into a buffer first, so a template error becomes a
// clean 500 rather than half a page.
func (h *handler) render(w http.ResponseWriter, status int, page string, data any) {
	var buf bytes.Buffer
	if err := pageTemplates()[page].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		h.log.Error("ui: render failed", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	base
	Status  int
	Message string
}

func (h *handler) errorPage(w http.ResponseWriter, _ *http.Request, v *viewer, status int, msg string) {
	h.render(w, status, "error", errorData{base: base{Title: http.StatusText(status), Viewer: v}, Status: status, Message: msg})
}

// setCookie writes a cookie of the pages: HttpOnly, SameSite=Strict; over
// TLS (directly, or to a trusted proxy in front: Options.OverTLS) Secure,
// named __Host-<name> and so for Path=/ (the prefix requires it); over
// plain HTTP its bare name, scoped to path. maxAge < 0 deletes it.
func (h *handler) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	tls := h.opts.OverTLS(r)
	if tls {
		path = "/"
	}
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r, name), Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: tls})
}

type loginData struct {
	base
	CSRF  string
	Error string
	// SSO is the identity provider's issuer when [ui.oidc] is configured.
	SSO string
}

// loginPage shows the form, with a fresh login CSRF token that must come
// back both in the form and in a cookie (double submit): there is no
// session yet to hold it.
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.resolve(r) != nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	h.showLogin(w, r, http.StatusOK, "")
}

func (h *handler) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	tok := randomToken()
	h.setCookie(w, r, loginCookie, tok, "/ui/login", 3600)
	d := loginData{base: base{Title: "Log in"}, CSRF: tok, Error: msg}
	if cfg := h.oidcConfig(); cfg != nil {
		d.SSO = cfg.Issuer
	}
	h.render(w, status, "login", d)
}

// maxFormBytes bounds a posted form.
const maxFormBytes = 8 << 10

// login checks the posted token: the admin token, or the secret of a key
// with the analyst role. The token is never stored; the session is.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.showLogin(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := h.cookie(r, loginCookie)
	if err != nil || !access.SameSecret(c.Value, r.PostForm.Get("csrf")) {
		h.showLogin(w, r, http.StatusForbidden, "The login form expired; enter the token again.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	var s *session
	switch {
	case access.SameSecret(token, h.opts.AdminToken):
		s = h.sess.create(true, "")
		h.log.Info("ui: login", "principal", "admin")
	default:
		k := access.Key(h.opts.Snapshot().Config, token)
		if k == nil {
			h.log.Info("ui: login refused: unknown token")
			h.showLogin(w, r, http.StatusUnauthorized, "Unknown token: enter the admin token or an analyst key.")
			return
		}
		if !k.HasRole(access.RoleAnalyst) {
			h.log.Info("ui: login refused: key has no analyst role", "key_id", k.ID)
			h.showLogin(w, r, http.StatusForbidden, "This key has no analyst role.")
			return
		}
		s = h.sess.create(false, k.ID)
		h.log.Info("ui: login", "principal", "analyst", "key_id", k.ID, "team", k.Team)
	}
	// A login always starts a new session id (no fixation), and ends the
	// one the browser held before.
	if old, err := h.cookie(r, sessionCookie); err == nil {
		h.sess.delete(old.Value)
	}
	h.setCookie(w, r, loginCookie, "", "/ui/login", -1)
	h.setCookie(w, r, sessionCookie, s.id, "/ui", 0)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// logout ends the session; the form must carry the session's CSRF token.
func (h *handler) logout(w http.ResponseWriter, r *http.Request, v *viewer) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || !access.SameSecret(r.PostForm.Get("csrf"), v.CSRF) {
		h.errorPage(w, r, v, http.StatusForbidden, "Missing or wrong form token; use the page's own Log out button.")
		return
	}
	h.sess.delete(v.sessionID)
	h.setCookie(w, r, sessionCookie, "", "/ui", -1)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}
