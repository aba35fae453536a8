package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/metrics"
	"github.com/sluicegw/sluice/gateway/telemetry"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/review/diff"
	"github.com/sluicegw/sluice/review/ui"
)

// AdminTokenEnv names the environment variable holding the admin token.
const AdminTokenEnv = "SLUICE_ADMIN_TOKEN"

// MetricsTokenEnv names the environment variable holding the scrape token
// ([server] public_metrics = "token").
const MetricsTokenEnv = "SLUICE_METRICS_TOKEN"

// compliancePages serves the compliance pages (review/ui) under the gateway's
// /ui/, on the request log and configuration the gateway lends them, with
// diff's what-if view.
func compliancePages(e gateway.PagesEnv) http.Handler {
	return ui.New(ui.Options{Store: e.Store, AdminToken: e.AdminToken, Snapshot: e.Snapshot,
		Logger: e.Logger, OverTLS: e.OverTLS, WhatIf: diff.WhatIf})
}

func runServe(env *cliEnv, args []string) int {
	fs := newFlags(env, "serve", "[--config DIR]")
	dir := fs.String("config", ".", "configuration directory")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	// The level follows [server] log_level, live: the gateway sets it at
	// start and after every good reload.
	level := new(slog.LevelVar)
	logger := slog.New(slog.NewJSONHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	v := buildVersion()
	// Traces go out over OTLP when the standard OTEL_* environment asks;
	// otherwise tracing is off and costs nothing.
	tracing, err := telemetry.FromEnv(context.Background(), v.Version)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice serve: %v\n", err)
		return 1
	}
	srv, err := gateway.New(gateway.Options{ConfigDir: *dir, Logger: logger, LogLevel: level, AdminToken: os.Getenv(AdminTokenEnv),
		MetricsToken: os.Getenv(MetricsTokenEnv), Pages: compliancePages, Tracing: tracing, Build: metrics.Build{Version: v.Version, Commit: v.Commit, GoVersion: v.Go}})
	if err != nil {
		_ = tracing.Shutdown(context.Background())
		printLoadError(env, err)
		return 1
	}
	if tracing.Enabled() {
		logger.Info("exporting traces over OTLP", "capture_content", tracing.CaptureContent())
	}
	ln, err := net.Listen("tcp", srv.Snapshot().Config.Server.Listen)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice serve: %v\n", err)
		return 1
	}
	logger.Info("serving", "addr", ln.Addr().String(), "config", *dir, "revision", srv.Snapshot().Revision)
	if addr := srv.Snapshot().Config.Server.DebugListen; addr != "" {
		dln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(env.stderr, "sluice serve: [server] debug_listen: %v\n", err)
			return 1
		}
		defer dln.Close()
		logger.Info("serving runtime profiles", "addr", dln.Addr().String(), "path", "/debug/pprof/")
		go func() { _ = (&http.Server{Handler: debugHandler(), ReadHeaderTimeout: 10 * time.Second}).Serve(dln) }()
	}
	mln, err := listenMetrics(srv, logger)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice serve: [server] metrics_listen: %v\n", err)
		return 1
	}
	if mln != nil {
		defer mln.Close()
	}
	return serveUntilSignal(env, srv, gateway.FramingListener(ln), logger)
}

// listenMetrics serves /metrics on [server] metrics_listen, a listener of
// its own (loopback by default; nil when "off"), so that the API's
// listener need not show every team's spend.
func listenMetrics(srv *gateway.Server, logger *slog.Logger) (net.Listener, error) {
	addr := srv.Snapshot().Config.Server.MetricsListen
	if addr == "off" {
		return nil, nil
	}
	mln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	logger.Info("serving metrics", "addr", mln.Addr().String(), "path", "/metrics")
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", srv.MetricsHandler())
	go func() {
		_ = (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}).Serve(mln)
	}()
	return mln, nil
}

// withLimits sets the API server's deadlines from [server]: reading
// headers, and a kept-alive connection's idle wait. The body's read
// deadline and each write's are the gateway's, per request, so that a
// stream is never cut by a whole-request deadline.
func withLimits(hs *http.Server, sc profiles.Server) *http.Server {
	hs.ReadHeaderTimeout = sc.ReadHeaderTimeout.Duration
	hs.IdleTimeout = sc.IdleTimeout.Duration
	return hs
}

// debugHandler serves Go's runtime profiles under /debug/pprof/, on the
// separate listener [server] debug_listen names (never on the API's).
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveUntilSignal serves until SIGINT/SIGTERM, reloading on SIGHUP and on
// file changes. The first signal stops accepting connections and drains
// in-flight requests (streams included) within [server] shutdown_timeout,
// then flushes the request log; a second signal exits at once.
func serveUntilSignal(env *cliEnv, srv *gateway.Server, ln net.Listener, logger *slog.Logger) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := withLimits(newHTTPServer(srv.Handler(), ctx), srv.Snapshot().Config.Server)
	go func() {
		if err := srv.Watch(ctx); err != nil {
			logger.Warn("config watcher stopped", "err", err.Error())
		}
	}()
	// [catalog] source: the listing is refreshed in the background (the
	// loop idles while the setting is off, and follows reloads).
	go srv.RefreshCatalogLoop(ctx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-errc:
			logger.Error("server stopped", "err", err.Error())
			return 1
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if diags := srv.ReloadBy(gateway.ReloadSIGHUP); len(diags) > 0 {
					fmt.Fprintln(env.stderr, diags.Error())
				}
				continue
			}
			return shutdown(srv, hs, sigs, logger)
		}
	}
}

// maxHeaderBytes bounds a request's headers; larger ones get 431.
const maxHeaderBytes = 64 << 10

// newHTTPServer returns the API's HTTP server with its limits: header size,
// a deadline for reading headers (slow-loris), and no request cancelled by
// shutdown itself (base outlives the drain; it is cancelled after).
func newHTTPServer(h http.Handler, base context.Context) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: maxHeaderBytes,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return base }}
}

func shutdown(srv *gateway.Server, hs *http.Server, sigs <-chan os.Signal, logger *slog.Logger) int {
	timeout := srv.Snapshot().Config.Server.ShutdownTimeout.Duration
	logger.Info("shutting down: draining in-flight requests", "timeout", timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code := 0
		err := hs.Shutdown(ctx)
		if err == nil {
			// The connections the handler took over (WebSocket
			// sessions), which Shutdown does not wait for.
			err = srv.Drain(ctx)
		}
		if err != nil {
			cutInFlight(srv, hs, logger)
		}
		flushCtx, cancelFlush := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancelFlush()
		if err := srv.Close(flushCtx); err != nil {
			logger.Error("request log flush failed", "err", err.Error())
			code = 1
		}
		done <- code
	}()
	for {
		select {
		case code := <-done:
			logger.Info("stopped", "code", code)
			return code
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				// A reload request (config management) is not a second
				// stop: the drain goes on.
				logger.Info("SIGHUP while draining: ignored")
				continue
			}
			logger.Warn("second signal: exiting without draining")
			return 1
		}
	}
}

// Bounds of cutting the requests a timed-out drain left: how long their
// handlers have to tell their callers and record once cut, and how long
// after their connections are closed (a handler may be stuck writing to a
// caller that does not read).
const (
	cutWait   = 5 * time.Second
	closeWait = 5 * time.Second
)

// cutInFlight ends the requests the drain left running: the gateway cuts
// them (a stream ends with an in-band error, a request waiting for its
// answer answers 503 server_shutdown) and waits for their handlers to
// record, then the connections are closed. It runs before the request log
// is closed, so their rows are flushed with the rest; a handler that
// records later still has its row spooled for the next start.
func cutInFlight(srv *gateway.Server, hs *http.Server, logger *slog.Logger) {
	logger.Warn("drain timed out; cutting the requests still in flight", "requests", srv.InFlight())
	ctx, cancel := context.WithTimeout(context.Background(), cutWait)
	left := srv.Cut(ctx)
	cancel()
	_ = hs.Close()
	if left == 0 {
		return
	}
	ctx, cancel = context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if left = srv.Cut(ctx); left > 0 {
		logger.Warn("requests still running after their connections closed; their rows go to the spool", "requests", left)
	}
}

// printLoadError prints configuration diagnostics one a line, or the error.
func printLoadError(env *cliEnv, err error) {
	var diags profiles.Diagnostics
	if errors.As(err, &diags) {
		fmt.Fprintln(env.stderr, diags.Error())
		return
	}
	fmt.Fprintf(env.stderr, "sluice: %v\n", err)
}
