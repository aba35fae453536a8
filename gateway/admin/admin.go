// Package admin serves the admin API under /api/v1: routes and their
// targets edited live with the same validation as sluice.toml, the audit
// trail, read-only explain and effective-profile views, and the OpenAPI
// document. It reaches the gateway only through [Backend].
package admin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/schemas"
	"github.com/sluicegw/sluice/store/state"
)

// Backend is what the admin API needs from the gateway.
type Backend interface {
	// Routes returns the routes serving now.
	Routes() []profiles.Route
	// Change applies a change to the routes, serialised with every other
	// change and reload: mutate gets a copy of the current routes and returns
	// the new list (or an *apierr.Error to refuse). The new list is validated
	// as a whole; its problems come back as a *ProblemsError. On success the
	// list is stored with its audit entry in one transaction and serves from
	// the next request on. It returns the stored routes.
	Change(ctx context.Context, entry state.AuditEntry, mutate func([]profiles.Route) ([]profiles.Route, error)) ([]profiles.Route, error)
	// Explain returns the explain JSON for a key and a model.
	Explain(ctx context.Context, keyID, model string) (any, error)
	// EffectiveProfile returns a key's merged profile with provenance.
	EffectiveProfile(ctx context.Context, keyID string) (any, error)
	// Audit lists the audit trail, newest first.
	Audit(ctx context.Context, limit int, cursor string) ([]state.AuditEntry, string, error)
}

// ProblemsError carries the validation problems of a route list.
type ProblemsError struct{ Problems []profiles.RouteProblem }

// Error implements error.
func (e *ProblemsError) Error() string { return fmt.Sprintf("%d route problems", len(e.Problems)) }

// Options configure the admin API.
type Options struct {
	// Token is the admin token; empty disables the API (every endpoint 404).
	Token string
	// Backend is the gateway.
	Backend Backend
	// Logger receives one line per change. Default slog.Default().
	Logger *slog.Logger
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the admin and analytics APIs.
func OpenAPI() []byte { return openAPI }

type api struct {
	opts Options
	log  *slog.Logger
}

// New returns the admin API's handler; mount it at the paths listed by
// [Paths].
func New(opts Options) http.Handler {
	a := &api{opts: opts, log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	r := chi.NewRouter()
	r.Get("/api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	r.Group(func(r chi.Router) {
		r.Use(a.authorize)
		r.Get("/api/v1/routes", a.listRoutes)
		r.Get("/api/v1/routes/{id}", a.getRoute)
		r.Put("/api/v1/routes/{id}", a.putRoute)
		r.Delete("/api/v1/routes/{id}", a.deleteRoute)
		r.Post("/api/v1/routes/{id}/targets", a.addTarget)
		r.Delete("/api/v1/routes/{id}/targets/{target}", a.deleteTarget)
		r.Get("/api/v1/audit", a.audit)
		r.Get("/api/v1/explain", a.explain)
		r.Get("/api/v1/profiles/effective", a.effective)
	})
	return r
}

// Paths are the path patterns the handler serves.
var Paths = []string{"/api/v1/openapi.json", "/api/v1/routes", "/api/v1/routes/*", "/api/v1/audit", "/api/v1/explain", "/api/v1/profiles/effective"}

// maxBody bounds an admin request body.
const maxBody = 1 << 20

type ctxKey struct{}

// originKey carries where a request came from, for its audit entry.
type originKey struct{}

type origin struct{ client, requestID string }

// WithOrigin returns ctx carrying a request's client address and request
// id, which the audit entry of a change made by the request records. The
// gateway sets them before the admin API's handler runs.
func WithOrigin(ctx context.Context, client, requestID string) context.Context {
	return context.WithValue(ctx, originKey{}, origin{client, requestID})
}

// authorize admits the admin token only (compared in constant time); a key
// secret is never accepted here. Without a configured token the API does not
// exist (404).
func (a *api) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.opts.Token == "" {
			apierr.Write(w, apierr.New(apierr.CodeNotFound, "the admin API is disabled: set SLUICE_ADMIN_TOKEN to enable it"))
			return
		}
		tok := access.BearerToken(r)
		if !access.SameSecret(tok, a.opts.Token) {
			apierr.Write(w, apierr.New(apierr.CodeUnauthorized, "the admin API needs the admin token: Authorization: Bearer <SLUICE_ADMIN_TOKEN>"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, access.Actor(tok))))
	})
}

func actor(r *http.Request) string { s, _ := r.Context().Value(ctxKey{}).(string); return s }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *api) fail(w http.ResponseWriter, err error) {
	var e *apierr.Error
	if errors.As(err, &e) {
		apierr.Write(w, e)
		return
	}
	a.log.Error("admin API", "err", err.Error())
	apierr.Write(w, apierr.New(apierr.CodeInternal, "internal error; see the gateway log"))
}

// RouteList is the body of GET /api/v1/routes.
type RouteList struct {
	Data []profiles.Route `json:"data"`
}

func (a *api) listRoutes(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, RouteList{Data: a.opts.Backend.Routes()})
}

// routeID is the route alias in the request's path: unescaped (an alias may
// hold a slash, sent as %2F) and lower-cased, as aliases are stored.
func routeID(r *http.Request) string { return strings.ToLower(pathParam(r, "id")) }

// pathParam is a path parameter, unescaped; a malformed escape is kept as
// sent (it names nothing, so the lookup answers 404).
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// find returns the index of the route with alias id (both lower-cased:
// stored aliases by Route.ApplyDefaults, ids by routeID), or -1.
func find(routes []profiles.Route, id string) int {
	return slices.IndexFunc(routes, func(r profiles.Route) bool { return r.Model == id })
}

func notFound(what string) *apierr.Error { return apierr.New(apierr.CodeNotFound, what+" not found") }

func (a *api) getRoute(w http.ResponseWriter, r *http.Request) {
	routes := a.opts.Backend.Routes()
	i := find(routes, routeID(r))
	if i < 0 {
		a.fail(w, notFound(fmt.Sprintf("route %q", routeID(r))))
		return
	}
	writeJSON(w, http.StatusOK, routes[i])
}

// decode reads a JSON body, validates it against a definition of the
// sluice.toml schema and decodes it into v. Every violation comes back in
// one error, each with its JSON pointer into the body.
func decode(r *http.Request, def string, fill func(map[string]any), v any) *apierr.Error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return apierr.New(apierr.CodeBodyTooLarge, "request body exceeds 1 MiB")
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return apierr.New(apierr.CodeInvalidJSON, "request body is not JSON: "+err.Error())
	}
	if m, ok := doc.(map[string]any); ok && fill != nil {
		fill(m)
	}
	if vs := schemas.ValidateDef(schemas.Sluice, def, doc); len(vs) > 0 {
		e := &apierr.Error{Code: apierr.CodeValidation, Message: fmt.Sprintf("the %s is invalid: %s: %s", def, ptr(vs[0].Pointer), vs[0].Message), Param: ptr(vs[0].Pointer)}
		for _, x := range vs {
			e.Details = append(e.Details, apierr.Detail{Pointer: ptr(x.Pointer), Code: profiles.CodeSchema, Message: x.Message})
		}
		return e
	}
	b, _ := json.Marshal(doc)
	if err := json.Unmarshal(b, v); err != nil {
		return apierr.New(apierr.CodeValidation, err.Error())
	}
	return nil
}

func ptr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// problemsError renders validation problems of the whole route list as one
// 422, each problem located by a JSON pointer into the request body.
// locate maps a problem's tokens (relative to the route list) to that
// pointer. A problem that leaves a route with only restricted targets gives
// the error its code, all_targets_restricted.
func problemsError(probs []profiles.RouteProblem, locate func([]string) string) *apierr.Error {
	e := &apierr.Error{Code: apierr.CodeValidation}
	for _, p := range probs {
		pointer := locate(p.Tokens)
		e.Details = append(e.Details, apierr.Detail{Pointer: pointer, Code: p.Code, Message: p.Message})
		if p.Code == profiles.CodeAllTargetsRestricted {
			e.Code = apierr.CodeAllTargetsRestricted
		}
	}
	e.Param = e.Details[0].Pointer
	e.Message = e.Details[0].Message
	if len(e.Details) > 1 {
		e.Message += fmt.Sprintf(" (and %d more; see details)", len(e.Details)-1)
	}
	return e
}

// relative turns tokens under routes/<i>/<prefix...> into a pointer relative
// to a body that is that sub-document, or "/" when the problem lies
// elsewhere in the route.
func relative(i int, prefix ...string) func([]string) string {
	return func(tokens []string) string {
		head := append([]string{"routes", strconv.Itoa(i)}, prefix...)
		if len(tokens) < len(head) || !slices.Equal(tokens[:len(head)], head) {
			return "/"
		}
		return ptr(schemas.Pointer(tokens[len(head):]...))
	}
}

// change runs a change and maps its problems to body pointers.
func (a *api) change(w http.ResponseWriter, r *http.Request, entry state.AuditEntry, locate func(i int) func([]string) string,
	mutate func([]profiles.Route) ([]profiles.Route, int, error)) ([]profiles.Route, int, bool) {
	entry.Actor = actor(r)
	o, _ := r.Context().Value(originKey{}).(origin)
	entry.Client, entry.RequestID = o.client, o.requestID
	idx := -1
	routes, err := a.opts.Backend.Change(r.Context(), entry, func(cur []profiles.Route) ([]profiles.Route, error) {
		out, i, err := mutate(cur)
		idx = i
		return out, err
	})
	var pe *ProblemsError
	if errors.As(err, &pe) {
		a.fail(w, problemsError(pe.Problems, locate(idx)))
		return nil, 0, false
	}
	if err != nil {
		a.fail(w, err)
		return nil, 0, false
	}
	a.log.Info("admin change", "actor", entry.Actor, "client", entry.Client, "request_id", entry.RequestID, "action", entry.Action, "route", entry.RouteID)
	return routes, find(routes, entry.RouteID), true
}

func (a *api) putRoute(w http.ResponseWriter, r *http.Request) {
	id := routeID(r)
	var rt profiles.Route
	if e := decode(r, "route", func(m map[string]any) {
		if _, ok := m["model"]; !ok {
			m["model"] = id
		}
	}, &rt); e != nil {
		a.fail(w, e)
		return
	}
	rt.Model = strings.ToLower(rt.Model)
	if rt.Model != id {
		a.fail(w, &apierr.Error{Code: apierr.CodeValidation, Param: "/model", Message: fmt.Sprintf("model %q must equal the route id in the path, %q", rt.Model, id),
			Details: []apierr.Detail{{Pointer: "/model", Code: "route_id_mismatch", Message: "must equal the route id in the path"}}})
		return
	}
	created := false
	routes, i, ok := a.change(w, r, state.AuditEntry{Action: "route.put", RouteID: id}, func(i int) func([]string) string { return relative(i) },
		func(cur []profiles.Route) ([]profiles.Route, int, error) {
			i := find(cur, id)
			if i < 0 {
				created = true
				return append(cur, rt), len(cur), nil
			}
			cur[i] = rt
			return cur, i, nil
		})
	if !ok {
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, routes[i])
}

func (a *api) deleteRoute(w http.ResponseWriter, r *http.Request) {
	id := routeID(r)
	_, _, ok := a.change(w, r, state.AuditEntry{Action: "route.delete", RouteID: id}, func(int) func([]string) string { return func([]string) string { return "/" } },
		func(cur []profiles.Route) ([]profiles.Route, int, error) {
			i := find(cur, id)
			if i < 0 {
				return nil, -1, notFound(fmt.Sprintf("route %q", id))
			}
			return slices.Delete(cur, i, i+1), -1, nil
		})
	if ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *api) addTarget(w http.ResponseWriter, r *http.Request) {
	id := routeID(r)
	var tg profiles.Target
	if e := decode(r, "target", nil, &tg); e != nil {
		a.fail(w, e)
		return
	}
	var n int
	routes, i, ok := a.change(w, r, state.AuditEntry{Action: "target.add", RouteID: id},
		func(i int) func([]string) string {
			return func(tokens []string) string {
				if len(tokens) == 3 && tokens[2] == "targets" {
					return "/takes_over" // the new target would leave only restricted ones
				}
				return relative(i, "targets", strconv.Itoa(n))(tokens)
			}
		},
		func(cur []profiles.Route) ([]profiles.Route, int, error) {
			i := find(cur, id)
			if i < 0 {
				return nil, -1, notFound(fmt.Sprintf("route %q", id))
			}
			n = len(cur[i].Targets)
			cur[i].Targets = append(slices.Clone(cur[i].Targets), tg)
			return cur, i, nil
		})
	if !ok {
		return
	}
	writeJSON(w, http.StatusCreated, routes[i])
}

func (a *api) deleteTarget(w http.ResponseWriter, r *http.Request) {
	id, tid := routeID(r), pathParam(r, "target")
	routes, i, ok := a.change(w, r, state.AuditEntry{Action: "target.delete", RouteID: id}, func(int) func([]string) string { return func([]string) string { return "/" } },
		func(cur []profiles.Route) ([]profiles.Route, int, error) {
			i := find(cur, id)
			if i < 0 {
				return nil, -1, notFound(fmt.Sprintf("route %q", id))
			}
			rt := cur[i]
			if j := slices.IndexFunc(rt.Targets, func(t profiles.Target) bool { return t.ID == tid }); j >= 0 {
				rt.Targets = slices.Delete(slices.Clone(rt.Targets), j, j+1)
			} else if rt.Then != nil && slices.ContainsFunc(rt.Then.Targets, func(t profiles.Target) bool { return t.ID == tid }) {
				tail := *rt.Then
				tail.Targets = slices.DeleteFunc(slices.Clone(tail.Targets), func(t profiles.Target) bool { return t.ID == tid })
				if len(tail.Targets) == 0 {
					rt.Then = nil
				} else {
					rt.Then = &tail
				}
			} else {
				return nil, -1, notFound(fmt.Sprintf("target %q of route %q", tid, id))
			}
			cur[i] = rt
			return cur, i, nil
		})
	if ok {
		writeJSON(w, http.StatusOK, routes[i])
	}
}

// AuditList is the body of GET /api/v1/audit.
type AuditList struct {
	Data       []state.AuditEntry `json:"data"`
	NextCursor string             `json:"next_cursor"`
}

func (a *api) audit(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			a.fail(w, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "limit", Message: "limit must be an integer from 1 to 1000"})
			return
		}
		limit = n
	}
	entries, next, err := a.opts.Backend.Audit(r.Context(), limit, r.URL.Query().Get("cursor"))
	if errors.Is(err, state.ErrBadCursor) {
		a.fail(w, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "cursor", Message: "invalid cursor; pass next_cursor from a previous page"})
		return
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, AuditList{Data: entries, NextCursor: next})
}

func (a *api) explain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, model := q.Get("key"), q.Get("model")
	if key == "" || strings.TrimSpace(model) == "" {
		a.fail(w, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "key", Message: "explain needs ?key=KEY_ID&model=MODEL"})
		return
	}
	v, err := a.opts.Backend.Explain(r.Context(), key, model)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *api) effective(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		a.fail(w, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "key", Message: "needs ?key=KEY_ID"})
		return
	}
	v, err := a.opts.Backend.EffectiveProfile(r.Context(), key)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
