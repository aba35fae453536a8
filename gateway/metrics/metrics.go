// Package metrics defines the gateway's Prometheus collectors. Each server has
// its own registry, so tests can run several servers in one process.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's collectors.
type Metrics struct {
	// Requests counts answered requests by HTTP status and upstream.
	Requests *prometheus.CounterVec
	// Duration observes the whole request by upstream and stream.
	Duration *prometheus.HistogramVec
	// TTFT observes the time to the first streamed chunk by upstream.
	TTFT *prometheus.HistogramVec
	// Degraded counts requests that lost a preference, by what was lost.
	Degraded *prometheus.CounterVec
	// Refused counts refusals by code.
	Refused *prometheus.CounterVec
	// UpstreamErrors counts failed upstream attempts by upstream and class.
	UpstreamErrors *prometheus.CounterVec
	// Fallbacks counts answers that came from a later attempt, by reason.
	Fallbacks *prometheus.CounterVec
	// Cache counts response-cache lookups by result (hit, miss).
	Cache *prometheus.CounterVec
	// Reloads counts configuration reloads by result (ok, failed).
	Reloads *prometheus.CounterVec
	// ConfigHealthy is 1 while the last reload succeeded, 0 after a failed one.
	ConfigHealthy prometheus.Gauge
	// AuthFailures counts requests refused for a missing or unknown key.
	AuthFailures prometheus.Counter
	// Unmatched counts answers whose reported model id or provider name
	// matched nothing in the catalog (recorded verbatim), by kind (model,
	// provider) and upstream.
	Unmatched *prometheus.CounterVec
	// RealtimeSessions is the realtime sessions open, by upstream.
	RealtimeSessions *prometheus.GaugeVec
	// RealtimeResponses counts realtime responses (response.done), by
	// upstream and whether they were priced.
	RealtimeResponses *prometheus.CounterVec
	// Tokens counts the tokens of answers by served model, provider, team
	// and type (input, output).
	Tokens *prometheus.CounterVec
	// Cost sums answers' cost in USD by served model, provider, team and
	// where it came from (upstream, catalog).
	Cost *prometheus.CounterVec
	// GenAIDuration observes whole requests, named after the GenAI
	// conventions' gen_ai.server.request.duration.
	GenAIDuration *prometheus.HistogramVec
	// GenAITTFT observes streams' time to the first chunk, named after
	// gen_ai.server.time_to_first_token.
	GenAITTFT *prometheus.HistogramVec
	// CatalogRefreshes counts [catalog] refreshes by result (ok, failed).
	CatalogRefreshes *prometheus.CounterVec
	// CatalogRefreshOK is 1 while the last catalog refresh succeeded (or
	// none was tried), 0 after a failed one.
	CatalogRefreshOK prometheus.Gauge
	// CatalogListingTime is when the listing merged into the catalog
	// serving was fetched (Unix seconds; 0 with none).
	CatalogListingTime prometheus.Gauge
	// UpstreamConnections counts the connections open to each upstream
	// (dialing done, in use or idle), by negotiated protocol.
	UpstreamConnections *prometheus.GaugeVec
}

// Build describes the running binary for sluice_build_info.
type Build struct {
	// Version is the module version ("(devel)" when unknown).
	Version string
	// Commit is the VCS revision ("unknown" when not recorded).
	Commit string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// genAILabels are the labels of the GenAI histograms.
var genAILabels = []string{"gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name", "error_type"}

// New creates the collectors and registers them, sluice_build_info among
// them.
func New(reg prometheus.Registerer, build Build) *Metrics {
	m := &Metrics{
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_tokens_total",
			Help: "Tokens of answers, by served model, provider, team and type (input, output; cached, the part of input read from a prompt cache; reasoning, the part of output spent on reasoning)."}, []string{"model", "provider", "team", "type"}),
		Cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_cost_usd_total",
			Help: "Cost of answers in USD, by served model, provider, team and source (upstream: billed; catalog: priced)."}, []string{"model", "provider", "team", "source"}),
		GenAIDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_request_duration_seconds",
			Help:    "Whole-request duration (GenAI semantic conventions: gen_ai.server.request.duration).",
			Buckets: []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}}, genAILabels),
		GenAITTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_to_first_token_seconds",
			Help:    "Time to the first streamed chunk (GenAI semantic conventions: gen_ai.server.time_to_first_token).",
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}}, genAILabels[:3]),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_requests_total",
			Help: "Chat-completion requests answered, by HTTP status and upstream."}, []string{"status", "upstream"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_request_duration_seconds",
			Help: "Whole-request latency.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"upstream", "stream"}),
		TTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_stream_first_chunk_seconds",
			Help: "Time to the first relayed stream chunk.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"upstream"}),
		Degraded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_degraded_total",
			Help: "Requests served without a preference the upstream could not express, by what was lost."}, []string{"item"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_refused_total",
			Help: "Requests refused, by sluice error code."}, []string{"code"}),
		UpstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_upstream_errors_total",
			Help: "Failed upstream attempts, by upstream and failure class."}, []string{"upstream", "class"}),
		Fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_fallbacks_total",
			Help: "Answers that came from an attempt after the first, by the failure that caused it."}, []string{"reason"}),
		Unmatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_unmatched_names_total",
			Help: "Answers whose reported model id or provider name matched nothing in the catalog, by kind and upstream."}, []string{"kind", "upstream"}),
		RealtimeSessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_realtime_sessions",
			Help: "Realtime (GET /v1/realtime) sessions open, by upstream."}, []string{"upstream"}),
		RealtimeResponses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_realtime_responses_total",
			Help: "Responses of realtime sessions (each response.done), by upstream and priced (true, or false when the catalog has no price for the model)."}, []string{"upstream", "priced"}),
		Cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_cache_lookups_total",
			Help: "Response-cache lookups by result."}, []string{"result"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_config_reloads_total",
			Help: "Configuration reloads by result."}, []string{"result"}),
		ConfigHealthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_config_last_reload_ok",
			Help: "1 when the last configuration reload succeeded; 0 while the last good configuration serves after a failed one."}),
		AuthFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_auth_failures_total",
			Help: "Requests refused for a missing or unknown API key."}),
		CatalogRefreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_catalog_refreshes_total",
			Help: "Catalog refreshes from a marketplace listing ([catalog] source), by result."}, []string{"result"}),
		CatalogRefreshOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_catalog_last_refresh_ok",
			Help: "1 when the last catalog refresh succeeded or none was tried; 0 while the last good catalog serves after a failed one."}),
		CatalogListingTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_catalog_listing_timestamp_seconds",
			Help: "When the marketplace listing merged into the catalog serving was fetched, in Unix seconds; 0 when none is."}),
		UpstreamConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_upstream_connections",
			Help: "Connections open to each upstream (dialing done, in use or idle), by negotiated protocol (h2, http/1.1, h2c)."},
			[]string{"upstream", "proto"}),
	}
	reg.MustRegister(m.Requests, m.Duration, m.TTFT, m.Degraded, m.Refused, m.UpstreamErrors, m.Fallbacks, m.Cache, m.Reloads, m.ConfigHealthy, m.AuthFailures, m.Unmatched,
		m.Tokens, m.Cost, m.GenAIDuration, m.GenAITTFT, m.CatalogRefreshes, m.CatalogRefreshOK, m.CatalogListingTime, m.UpstreamConnections,
		m.RealtimeSessions, m.RealtimeResponses)
	m.ConfigHealthy.Set(1)
	m.CatalogRefreshOK.Set(1)
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_build_info",
		Help: "The running binary: 1, labelled with its version, VCS commit and Go version."}, []string{"version", "commit", "goversion"})
	info.WithLabelValues(build.Version, build.Commit, build.GoVersion).Set(1)
	reg.MustRegister(info)
	return m
}
