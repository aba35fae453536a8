// Package gateway serves the OpenAI-compatible API and the Anthropic
// Messages API over compiled plans and records every request. The request
// path is one function, serve in path.go, that chat completions, the
// Messages API and embeddings all go through, top to bottom: begin (auth) →
// parse → admit (rate limits; the shared state) → replay (the response
// cache) → plan → dispatch (the attempt loop) → relay (the rest of a
// stream) → settle → answer → record, each step in the file of its name.
// This file wires the server. Its own subpackages hold what only the
// gateway does: apierr (error codes and bodies), request (parsing), budget
// (spend), shared (the fleet's hot state on Redis), admin (the admin API),
// lru, metrics and telemetry. What it uses but does not own lives in rooms
// of its own: the stores (store/requestlog, store/state), key lookup
// (profiles/access); the compliance pages (review/ui) it serves only
// through [Options.Pages], and it never imports the simulator.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/gateway/admin"
	"github.com/sluicegw/sluice/gateway/budget"
	"github.com/sluicegw/sluice/gateway/lru"
	"github.com/sluicegw/sluice/gateway/metrics"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/gateway/telemetry"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/holders"
	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/state"
)

// Options configure a [Server].
type Options struct {
	// ConfigDir is the configuration directory. Required.
	ConfigDir string
	// Logger receives structured logs. Default: JSON to stderr, at the
	// level of [server] log_level.
	Logger *slog.Logger
	// LogLevel, when set, is set to [server] log_level at start and after
	// every good reload: build Logger's handler on it
	// (slog.HandlerOptions.Level) for its level to follow the
	// configuration. Default nil: a given Logger keeps its own level.
	LogLevel *slog.LevelVar
	// Registry receives the metrics. Default: a new registry with the Go and
	// process collectors.
	Registry *prometheus.Registry
	// Transport sends upstream requests. Default: a transport tuned for many
	// concurrent requests to few hosts.
	Transport http.RoundTripper
	// AdminToken authorises the admin and analytics APIs. Default "" (the
	// analytics API then serves analyst keys only).
	AdminToken string
	// MetricsToken is the scrape token: with [server] public_metrics =
	// "token", a bearer of it (or of the admin token) reads /metrics on the
	// API's listener. The binary reads it from SLUICE_METRICS_TOKEN.
	// Default "" (only the admin token).
	MetricsToken string
	// UpstreamURLs overrides upstream base URLs by upstream name (the demo
	// points them at the simulator). Default none.
	UpstreamURLs map[string]string
	// Store is the request-log store. Default: opened from [store] in
	// sluice.toml.
	Store requestlog.Store
	// State is the route state store. Default: opened from [state] in
	// sluice.toml. Close closes it.
	State state.Store
	// Pages builds the handler served under /ui/ from what the gateway
	// lends it (the binary passes the compliance pages, package review/ui).
	// Default nil: every /ui/ path answers 404.
	Pages func(PagesEnv) http.Handler
	// Tracing exports a server span per request and a client span per
	// upstream attempt (the binary passes telemetry.FromEnv). Default
	// telemetry.Off: no span is made. Close shuts it down.
	Tracing *telemetry.Tracing
	// Build labels sluice_build_info. Default: "(devel)", "unknown" and the
	// running Go version.
	Build metrics.Build
}

// Server is the gateway. Create it with [New]; serve [Server.Handler]; stop
// it with [Server.Close].
type Server struct {
	opts    Options
	log     *slog.Logger
	tracing *telemetry.Tracing
	reg     *prometheus.Registry
	metrics *metrics.Metrics
	client  *http.Client
	// upstreams are the upstreams' own clients (unless Options.Transport
	// is given: then every upstream is sent to through client).
	upstreams *upstreamClients
	store     requestlog.Store
	writer    *requestlog.Writer
	router    chi.Router

	snap     atomic.Pointer[snapshot.Snapshot]
	reloadMu sync.Mutex
	lastErr  atomic.Pointer[reloadError]
	// files hashes the configuration files of the last good load, for a
	// reload's log line (reloadfiles.go); guarded by reloadMu.
	files fileHashes
	// listing is the last good [catalog] listing, merged over catalog.json
	// at every load; refresh is the last refresh attempt.
	listing atomic.Pointer[listing.Import]
	refresh atomic.Pointer[refreshStatus]

	cache    *lru.Cache[cacheID, cachedAnswer]
	seen     *shared.Sightings // the cache's keys sighted once ([cache] store_after = 2)
	sessions *lru.Cache[string, snapshot.Pin]
	// holders records where each stored Responses API response is
	// (holders.go).
	holders *lru.Cache[string, holder]
	// holderFile keeps the records of holders in data_dir's state file
	// when there is no fleet's Redis to keep them (nil with one), so that
	// they survive a restart and an eviction (store/holders).
	holderFile *holders.Table
	planner    *failover.Planner
	ledger     *budget.Ledger
	state      state.Store
	// limiter is the rate limiter in process; fleet, set by [shared]
	// redis_url, is the fleet's shared state (budgets, rate limits, pins,
	// cache, health), nil without it.
	limiter *shared.Limiter
	fleet   *shared.Client

	// stopWatch ends the watch of a shared state store.
	stopWatch context.CancelFunc
	// inflight is every request being served, for Cut (inflight.go).
	inflight inflight

	closeOnce sync.Once
	// audits counts the reloads' audit entries being written; Close waits
	// for them.
	audits sync.WaitGroup
	// auditMu guards auditsClosed, set by Close before it waits on audits:
	// a reload that ends after that (a watcher still running) writes no
	// entry, so Add never races Wait.
	auditMu      sync.Mutex
	auditsClosed bool
	closeErr     error
}

type reloadError struct {
	at    time.Time
	diags profiles.Diagnostics
}

// New loads the configuration and opens the request log. A configuration
// error is returned with every located diagnostic.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		if opts.LogLevel == nil {
			opts.LogLevel = new(slog.LevelVar)
		}
		opts.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: opts.LogLevel}))
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
		opts.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if opts.Tracing == nil {
		opts.Tracing = telemetry.Off
	}
	if opts.Build.Version == "" {
		opts.Build = metrics.Build{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version()}
	}
	if err := access.CheckToken("SLUICE_ADMIN_TOKEN", opts.AdminToken); err != nil {
		return nil, err
	}
	if err := access.CheckToken("SLUICE_METRICS_TOKEN", opts.MetricsToken); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, reg: opts.Registry, metrics: metrics.New(opts.Registry, opts.Build), tracing: opts.Tracing}
	s.files = hashConfigFiles(opts.ConfigDir)
	snap, diags := s.loadAtStart()
	if len(diags) > 0 {
		return nil, diags
	}
	cfg := snap.Config
	s.setLogLevel(cfg.Server.LogLevel)
	s.cache = lru.New[cacheID, cachedAnswer](cfg.Cache.MaxEntries, cfg.Cache.TTL.Duration)
	s.seen = shared.NewSightings(sightingsFor(cfg))
	s.sessions = lru.New[string, snapshot.Pin](cfg.Sessions.MaxEntries, cfg.Sessions.TTL.Duration)
	s.holders = lru.New[string, holder](cfg.Responses.MaxEntries, cfg.Responses.TTL.Duration)
	s.limiter = shared.NewLimiter()
	if sc := cfg.Shared; sc.RedisURL != "" {
		pw, err := sc.RedisPassword()
		if err != nil {
			return nil, fmt.Errorf("shared: [shared] redis_password_env: %w", err)
		}
		fleet, err := shared.Open(context.Background(), shared.Options{URL: sc.RedisURL, Password: pw, Prefix: sc.KeyPrefix,
			Timeout: sc.Timeout.Duration, Logger: opts.Logger, Registerer: opts.Registry,
			// Budgets and rate limits on leases, writes behind: most requests
			// make no round trip for them (docs/scaling.md).
			Leased: true, Sightings: s.seen})
		if err != nil {
			return nil, fmt.Errorf("shared: %w", err)
		}
		s.fleet = fleet
		s.planner = failover.NewPlanner(failover.PlannerOptions{Health: fleet.Health()})
	} else {
		s.planner = failover.NewPlanner(failover.PlannerOptions{})
	}

	transport := opts.Transport
	s.upstreams = newUpstreamClients(s.metrics.UpstreamConnections)
	if transport == nil {
		// Each upstream has a transport of its own (its CAs, h2c, its
		// connection bound); this one serves requests to no upstream.
		transport = NewTransport()
	}
	s.client = newClient(transport)

	st := &cfg.Store
	if err := os.MkdirAll(st.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("store: data_dir %s: %w", st.DataDir, err)
	}
	s.store = opts.Store
	if s.store == nil {
		store, err := requestlog.Open(st)
		if err != nil {
			return nil, err
		}
		s.store = store
	}
	ledger, err := budget.Open(filepath.Join(st.DataDir, state.File))
	if err != nil {
		return nil, err
	}
	s.ledger = ledger
	if s.fleet == nil {
		if s.holderFile, err = holders.Open(filepath.Join(st.DataDir, state.File)); err != nil {
			return nil, err
		}
	}
	if s.state = opts.State; s.state == nil {
		if s.state, err = state.Open(context.Background(), cfg); err != nil {
			return nil, err
		}
	}
	// A shared store is listened to before its routes are loaded: a change
	// made while this replica starts is in what it loads or heard after.
	follow, err := s.listenState()
	if err != nil {
		return nil, err
	}
	served, diags := s.withStoredRoutes(context.Background(), snap)
	if len(diags) > 0 {
		s.stopWatch()
		return nil, diags
	}
	if err := s.upstreams.refresh(served.Config); err != nil {
		s.stopWatch()
		return nil, err
	}
	s.snap.Store(served)
	spoolDir := filepath.Join(st.DataDir, "spool")
	if st.Kind == "off" {
		spoolDir = ""
		s.log.Warn(`the request log is off ([store] kind = "off"): requests are served but not recorded`)
	}
	s.writer = requestlog.NewWriter(s.store, requestlog.WriterOptions{
		BatchSize: st.BatchSize, FlushInterval: st.FlushInterval.Duration,
		SpoolDir: spoolDir, SpoolMaxBytes: st.SpoolMaxBytes,
		Registerer: opts.Registry, Logger: opts.Logger,
	})
	s.router = s.routes()
	follow()
	return s, nil
}

// NewTransport returns an upstream transport with the default settings
// (the system's roots, HTTP/2 by ALPN, HTTP/1.1 in the clear, at most
// profiles.DefaultMaxConnections connections a host, no metric): see
// [NewUpstreamTransport].
func NewTransport() *http.Transport { return NewUpstreamTransport(TransportOptions{}) }

// Snapshot returns the configuration currently serving.
func (s *Server) Snapshot() *snapshot.Snapshot { return s.snap.Load() }

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// Registry returns the metrics registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Store returns the request-log store (for queries).
func (s *Server) Store() requestlog.Store { return s.store }

// WriterStats returns the request-log writer's counters.
func (s *Server) WriterStats() requestlog.Stats { return s.writer.Stats() }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.recoverer)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/metrics", s.publicMetrics(s.MetricsHandler()))
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		r.Post("/v1/chat/completions", s.chatCompletions)
		r.Post("/v1/embeddings", s.embeddings)
		r.Post("/v1/responses", s.responses)
		r.Get("/v1/responses", s.responsesSocket) // a WebSocket (responses_ws.go)
		r.Get("/v1/responses/{id}", s.storedResponse)
		r.Delete("/v1/responses/{id}", s.storedResponse)
		r.Get("/v1/models", s.listModels)
	})
	// The Messages API, as Anthropic clients call it (Claude Code adds
	// ?beta=true, which routing ignores).
	r.Group(func(r chi.Router) {
		r.Use(s.authenticateMessages)
		r.Post("/v1/messages", s.messages)
		r.Post("/v1/messages/count_tokens", s.countTokens)
	})
	// The Realtime API: a WebSocket session, authenticated before the
	// upgrade by its own handler (the key may come in a subprotocol).
	r.Get("/v1/realtime", s.realtime)
	r.With(s.track).Get("/api/v1/analytics/invocations", s.invocations)
	// The admin API charges only calls without the admin token: guesses
	// are throttled, an operator's scripts are not.
	adminAPI := s.track(s.throttled(newThrottle(adminBurst, adminPerSec), func(r *http.Request) bool {
		return !access.Admin(r, s.opts.AdminToken)
	}, s.adminHandler()))
	for _, p := range admin.Paths {
		r.Handle(p, adminAPI)
	}
	r.Mount("/ui", s.track(s.throttled(newThrottle(loginBurst, loginPerSec), func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/ui/login"
	}, s.pagesHandler())))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound(r))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound(r))
	})
	return r
}

// What triggered a reload, as the audit trail names it ([Server.ReloadBy]).
const (
	// ReloadFileWatch is a change the configuration directory's watcher saw.
	ReloadFileWatch = "file-watch"
	// ReloadSIGHUP is a SIGHUP to the process.
	ReloadSIGHUP = "sighup"
	// ReloadCall is a call of [Server.Reload] by the program embedding the
	// gateway.
	ReloadCall = "call"
)

// Reload is [Server.ReloadBy] for [ReloadCall].
func (s *Server) Reload() profiles.Diagnostics { return s.ReloadBy(ReloadCall) }

// ReloadBy loads the configuration directory again and swaps it in when it
// is valid. A broken configuration keeps the last good one serving; the
// diagnostics are returned, logged, kept for /readyz and counted. Either
// way the state store's audit trail gets an entry (action
// "config.reload", actor by: what triggered it), written apart so that a
// store that does not answer never holds the reload up (its failure is
// logged).
func (s *Server) ReloadBy(by string) profiles.Diagnostics {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	// The files that changed since the last good load, named in the log.
	files := hashConfigFiles(s.opts.ConfigDir)
	changed := changedFiles(s.files, files)
	snap, old, diags := s.swapIn(s.loadSnapshot)
	if len(diags) > 0 {
		s.lastErr.Store(&reloadError{at: time.Now(), diags: diags})
		s.metrics.Reloads.WithLabelValues("failed").Inc()
		s.metrics.ConfigHealthy.Set(0)
		s.log.Error("config reload failed; the last good configuration keeps serving",
			"revision", s.snap.Load().Revision, "changed", changed, "errors", len(diags), "first", diags[0].String())
		s.auditReload(by, reloadOutcome{Outcome: "refused", Changed: changed, Errors: len(diags), First: diags[0].String()})
		return diags
	}
	s.files = files
	s.metrics.Reloads.WithLabelValues("ok").Inc()
	s.log.Info("config reloaded", "revision", snap.Revision, "previous", old.Revision, "changed", changed)
	s.auditReload(by, reloadOutcome{Outcome: "applied", Changed: changed, Revision: snap.Revision})
	return nil
}

// reloadOutcome is a reload's audit entry's After document.
type reloadOutcome struct {
	Outcome  string   `json:"outcome"`
	Changed  []string `json:"changed"`
	Revision string   `json:"revision,omitempty"`
	Errors   int      `json:"errors,omitempty"`
	First    string   `json:"first,omitempty"`
}

// reloadAuditTimeout bounds the write of a reload's audit entry.
const reloadAuditTimeout = 5 * time.Second

// auditReload writes a reload's audit entry in the background: the reload
// never waits on the state store for it. A failed write is logged.
func (s *Server) auditReload(by string, o reloadOutcome) {
	if o.Changed == nil {
		o.Changed = []string{}
	}
	after, _ := json.Marshal(o)
	entry := state.AuditEntry{TS: time.Now(), Actor: by, Action: "config.reload", After: after}
	s.auditMu.Lock()
	if s.auditsClosed {
		s.auditMu.Unlock()
		s.log.Warn("the gateway is closing: a reload's audit entry is not written", "by", by, "outcome", o.Outcome)
		return
	}
	s.audits.Add(1)
	s.auditMu.Unlock()
	go func() {
		defer s.audits.Done()
		ctx, cancel := context.WithTimeout(context.Background(), reloadAuditTimeout)
		defer cancel()
		if err := s.state.Append(ctx, entry); err != nil {
			s.log.Error("state store: a reload's audit entry could not be written", "store", s.state.Where(),
				"by", by, "outcome", o.Outcome, "err", err.Error())
		}
	}()
}

// swapIn is the one way the live configuration changes after start, for a
// reload and a catalog refresh alike: load the directory (with load), take
// the routes from the state store (or, when it does not answer, keep those
// loaded last), swap the result in and apply its live settings — the log
// level, the cache's and the session pins' bounds and time to live — and
// mark the configuration healthy. Nothing changes when it returns
// diagnostics. Callers hold reloadMu and do their own accounting.
func (s *Server) swapIn(load func() (*snapshot.Snapshot, profiles.Diagnostics)) (now, old *snapshot.Snapshot, diags profiles.Diagnostics) {
	snap, diags := load()
	if len(diags) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.state.Ping(ctx); err != nil {
			// The files reload; the routes stay those loaded last until the
			// store answers again.
			s.log.Warn("state store does not answer: the reload keeps the routes loaded last", "store", s.state.Where(), "err", err.Error())
			var probs []profiles.RouteProblem
			if snap, probs = snap.WithRoutes(cloneRoutes(s.snap.Load().Config.Routes)); len(probs) > 0 {
				diags = profiles.Diagnostics{{File: state.File, Code: probs[0].Code, Message: probs[0].Message}}
			}
		} else {
			snap, diags = s.withStoredRoutes(ctx, snap)
		}
		cancel()
	}
	if len(diags) > 0 {
		return nil, nil, diags
	}
	if err := s.upstreams.refresh(snap.Config); err != nil {
		return nil, nil, profiles.Diagnostics{{File: profiles.ConfigFile, Code: profiles.CodeInvalidCAFile, Message: err.Error()}}
	}
	old = s.snap.Swap(snap)
	s.setLogLevel(snap.Config.Server.LogLevel)
	// The cache and the pins keep their entries under the new bounds and
	// time to live.
	s.cache.Configure(snap.Config.Cache.MaxEntries, snap.Config.Cache.TTL.Duration)
	s.seen.Configure(sightingsFor(snap.Config))
	s.sessions.Configure(snap.Config.Sessions.MaxEntries, snap.Config.Sessions.TTL.Duration)
	s.holders.Configure(snap.Config.Responses.MaxEntries, snap.Config.Responses.TTL.Duration)
	// The directory loaded clean: an earlier failed reload is over.
	s.lastErr.Store(nil)
	s.metrics.ConfigHealthy.Set(1)
	return snap, old, nil
}

// setLogLevel sets Options.LogLevel, when there is one, to a [server]
// log_level name ("debug", "info", "warn", "error"; the schema admits no
// other, and anything else leaves the level as it is).
func (s *Server) setLogLevel(name string) {
	if s.opts.LogLevel == nil {
		return
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(name)); err == nil {
		s.opts.LogLevel.Set(l)
	}
}

// Close flushes the request log and the budget ledger within the context's
// deadline and closes the store. Call it after the HTTP server has drained;
// later calls return the first call's result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.stopWatch()
		s.auditMu.Lock()
		s.auditsClosed = true
		s.auditMu.Unlock()
		s.audits.Wait()
		err := errors.Join(s.writer.Close(ctx), s.ledger.Close(ctx), s.state.Close(), s.tracing.Shutdown(ctx))
		if s.holderFile != nil {
			err = errors.Join(err, s.holderFile.Close(ctx))
		}
		if s.fleet != nil {
			err = errors.Join(err, s.fleet.Close())
		}
		if cerr := s.store.Close(); cerr != nil && !errors.Is(cerr, context.Canceled) {
			err = errors.Join(err, cerr)
		}
		// The upstreams' idle connections close now; those in use close
		// when their requests end.
		s.upstreams.closeIdle()
		s.closeErr = err
	})
	return s.closeErr
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeError(w, internalError())
			}
		}()
		s.limit(w, r)
		next.ServeHTTP(w, r)
	})
}
