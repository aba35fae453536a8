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
	// CatalogRefreshes counts [catalog] refreshes by result (ok, failed).
	CatalogRefreshes *prometheus.CounterVec
	// CatalogRefreshOK is 1 while the last catalog refresh succeeded (or
	// none was tried), 0 after a failed one.
	CatalogRefreshOK prometheus.Gauge
	// CatalogListingTime is when the listing merged into the catalog
	// serving was fetched (Unix seconds; 0 with none).
	CatalogListingTime prometheus.Gauge
}

// New creates the collectors and registers them.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
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
	}
	reg.MustRegister(m.Requests, m.Duration, m.TTFT, m.Degraded, m.Refused, m.UpstreamErrors, m.Fallbacks, m.Cache, m.Reloads, m.ConfigHealthy, m.AuthFailures, m.Unmatched,
		m.CatalogRefreshes, m.CatalogRefreshOK, m.CatalogListingTime)
	m.ConfigHealthy.Set(1)
	m.CatalogRefreshOK.Set(1)
	return m
}
