package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// healthz answers while the process serves.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Readiness is the /readyz body.
type Readiness struct {
	Ready   bool         `json:"ready"`
	Config  ConfigState  `json:"config"`
	Catalog CatalogState `json:"catalog"`
	Store   StoreState   `json:"store"`
	// State is the state store (routes and audit).
	State StateStoreState `json:"state"`
	// Shared is the fleet's shared state (Redis), absent without
	// [shared] redis_url. Redis down does not make the gateway unready:
	// it serves from local state.
	Shared *shared.Status `json:"shared,omitempty"`
}

// StateStoreState describes the state store. One that does not answer
// does not make the gateway unready: it serves with the routes loaded last
// and refuses route changes (503).
type StateStoreState struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	// Error is "state_unreachable", or, for the admin token, the error.
	Error string `json:"error,omitempty"`
}

// CatalogState describes the catalog serving and its refresh. A failed
// refresh does not make the gateway unready: the last good catalog serves.
type CatalogState struct {
	// Revision and Models identify the catalog serving.
	Revision string `json:"revision,omitempty"`
	Models   int    `json:"models"`
	// Source and Refresh are [catalog] source and refresh ("" when off).
	Source  string `json:"source,omitempty"`
	Refresh string `json:"refresh,omitempty"`
	// ListingFetchedAt is when the listing merged over catalog.json was
	// fetched (zero when none is).
	ListingFetchedAt time.Time `json:"listing_fetched_at,omitzero"`
	// LastRefreshAt is the last refresh attempt; LastRefreshFailed is set
	// while it failed, with its Errors.
	LastRefreshAt     time.Time `json:"last_refresh_at,omitzero"`
	LastRefreshFailed bool      `json:"last_refresh_failed"`
	// Errors are the failed refresh's errors: their stable codes, or,
	// for the admin token, the whole messages (URLs without their
	// user:password@, never an upstream's body).
	Errors []string `json:"errors,omitempty"`
	codes  []string
}

// ConfigState describes the configuration serving.
type ConfigState struct {
	Revision string    `json:"revision"`
	LoadedAt time.Time `json:"loaded_at"`
	// LastReloadFailed is set while the last reload failed (the revision above
	// keeps serving); Errors lists its diagnostics: their stable codes,
	// or, for the admin token, the whole located diagnostics.
	LastReloadFailed bool      `json:"last_reload_failed"`
	FailedAt         time.Time `json:"failed_at,omitzero"`
	Errors           []string  `json:"errors,omitempty"`
}

// StoreState describes the request log.
type StoreState struct {
	Reachable   bool   `json:"reachable"`
	Spooling    bool   `json:"spooling"`
	QueueDepth  int    `json:"queue_depth"`
	SpooledRows uint64 `json:"spooled_rows"`
	DroppedRows uint64 `json:"dropped_rows"`
	SpoolBytes  int64  `json:"spool_bytes"`
	// Error is "store_unreachable", or, for the admin token, the error
	// (which may name the store's internal address).
	Error string `json:"error,omitempty"`
}

// Stable codes /readyz shows without the admin token.
const (
	codeStoreUnreachable     = "store_unreachable"
	codeStateUnreachable     = "state_unreachable"
	codeCatalogRefreshFailed = "catalog_refresh_failed"
	codeSharedUnreachable    = "shared_unreachable"
)

// readyz answers 200 when a configuration is loaded and the request log is
// either reachable or spooling to disk (nothing is lost), 503 otherwise. A
// failed reload is shown but does not make the gateway unready: the last
// good configuration serves. Unauthenticated (a probe's), it says which
// component is not ready and a stable code only; with the admin token it
// adds the errors' text, which may name internal addresses.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	detail := access.Admin(r, s.opts.AdminToken)
	snap := s.snap.Load()
	st := s.writer.Stats()
	rd := Readiness{Config: ConfigState{Revision: snap.Revision, LoadedAt: snap.LoadedAt}, Catalog: s.catalogState(snap)}
	if le := s.lastErr.Load(); le != nil {
		rd.Config.LastReloadFailed, rd.Config.FailedAt = true, le.at
		for _, d := range le.diags {
			if detail {
				rd.Config.Errors = append(rd.Config.Errors, d.String())
			} else {
				rd.Config.Errors = append(rd.Config.Errors, d.Code)
			}
		}
	}
	if !detail {
		rd.Catalog.Errors = rd.Catalog.codes
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := s.store.Ping(ctx)
	rd.Store = StoreState{Reachable: err == nil, Spooling: err != nil || !st.StoreUp, QueueDepth: st.QueueDepth,
		SpooledRows: st.SpooledRows, DroppedRows: st.DroppedRows, SpoolBytes: st.SpoolBytes}
	if err != nil {
		rd.Store.Error = codeStoreUnreachable
		if detail {
			rd.Store.Error = err.Error()
		}
	}
	rd.State.Kind = snap.Config.State.Kind
	if err := s.state.Ping(ctx); err != nil {
		rd.State.Error = codeStateUnreachable
		if detail {
			rd.State.Error = err.Error()
		}
	} else {
		rd.State.Reachable = true
	}
	if s.fleet != nil {
		st := s.fleet.Status()
		if st.Error != "" && !detail {
			st.Error = codeSharedUnreachable // its text names Redis's address
		}
		rd.Shared = &st
	}
	limit := snap.Config.Store.SpoolMaxBytes
	rd.Ready = rd.Store.Reachable || st.SpoolBytes < limit
	status := http.StatusOK
	if !rd.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, rd)
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// routeUsable reports whether a caller with decision d (nil: no guardrail)
// may use the route: its decision allows the model of at least one of the
// route's ordinary targets, the ones a request is dialled to first. Other
// callers are not told the route exists.
func routeUsable(rt *profiles.Route, d *guardrails.Decision) bool {
	if d == nil {
		return true
	}
	for _, t := range rt.Targets {
		if !t.Restricted() && d.ModelAllowed(t.Model) {
			return true
		}
	}
	return false
}

// listModels lists what the caller may ask for: the catalog models their
// guardrail decision allows, and the route aliases they may use (see
// [routeUsable]).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	a := authFrom(r.Context())
	snap, key := a.snap, a.key
	d, err := snap.Decision(r.Context(), key.Principal())
	if err != nil {
		s.log.Error("guardrail decision failed", "key", key.ID, "err", err)
		writeError(w, internalError())
		return
	}
	data := []modelEntry{}
	if snap.Catalog != nil {
		for _, m := range snap.Catalog.Models() {
			if d == nil || d.ModelAllowed(m.Slug) {
				owner, _, _ := strings.Cut(m.Slug, "/")
				data = append(data, modelEntry{ID: m.Slug, Object: "model", OwnedBy: owner})
			}
		}
	}
	for i := range snap.Config.Routes {
		if rt := &snap.Config.Routes[i]; routeUsable(rt, d) {
			data = append(data, modelEntry{ID: rt.Model, Object: "model", OwnedBy: "sluice-route"})
		}
	}
	sort.Slice(data, func(i, j int) bool { return data[i].ID < data[j].ID })
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
