package profiles

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"golang.org/x/net/http/httpguts"

	"github.com/sluicegw/sluice/schemas"
)

// ConfigFile is the name of the main configuration file inside a config directory.
const ConfigFile = "sluice.toml"

// Config is a validated sluice.toml together with the routing profiles of the
// same configuration directory. It is immutable once loaded: a reload builds a
// new Config and swaps it in whole.
type Config struct {
	// Dir is the absolute path of the configuration directory.
	Dir string `toml:"-" json:"-"`

	Server    Server     `toml:"server" json:"server"`
	Store     Store      `toml:"store" json:"store"`
	State     State      `toml:"state" json:"state"`
	Shared    Shared     `toml:"shared" json:"shared"`
	Cache     Cache      `toml:"cache" json:"cache"`
	Sessions  Sessions   `toml:"sessions" json:"sessions"`
	Responses Responses  `toml:"responses" json:"responses"`
	Realtime  Realtime   `toml:"realtime" json:"realtime"`
	Retry     Retry      `toml:"retry" json:"retry"`
	Catalog   Catalog    `toml:"catalog" json:"catalog"`
	Upstreams []Upstream `toml:"upstreams" json:"upstreams"`
	Keys      []Key      `toml:"keys" json:"keys"`
	Routes    []Route    `toml:"routes" json:"routes"`
	Teams     []Team     `toml:"teams" json:"teams"`

	// UI configures the compliance pages' sign-in. Default: the admin
	// token and analyst keys only.
	UI UI `toml:"ui" json:"ui"`

	// Profiles holds every profile file of the directory, by rung.
	Profiles *ProfileSet `toml:"-" json:"-"`

	keysByID   map[string]*Key
	keysByHash map[string]*Key
	upstreams  map[string]*Upstream
	revision   string
}

// Revision identifies the bytes the configuration was loaded from: a hash
// of sluice.toml and of each profile file with its path below the
// configuration directory (not the directory's own path, so that replicas of
// one configuration agree), computed from the bytes as they were read.
func (c *Config) Revision() string { return c.revision }

// Server configures the OpenAI-compatible API listener.
type Server struct {
	// Listen is the address to listen on. Default "127.0.0.1:8080".
	Listen string `toml:"listen" json:"listen"`
	// DefaultUpstream serves requests whose model names no route and whose key
	// names no upstream. Default: the first [[upstreams]] entry.
	DefaultUpstream string `toml:"default_upstream" json:"default_upstream"`
	// MaxBodyBytes bounds a request body; a larger one gets 413. Default 10 MiB.
	MaxBodyBytes int64 `toml:"max_body_bytes" json:"max_body_bytes"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight requests. Default 30s.
	ShutdownTimeout Duration `toml:"shutdown_timeout" json:"shutdown_timeout"`
	// ForwardHeaders lists request headers copied onto upstream requests. Default none.
	ForwardHeaders []string `toml:"forward_headers" json:"forward_headers"`
	// DebugListen is the address of a separate listener serving Go's
	// runtime profiles under /debug/pprof/ (CPU, heap, goroutines) for
	// performance work. It has no authentication: bind it to loopback.
	// Default "" (off).
	DebugListen string `toml:"debug_listen" json:"debug_listen"`
	// MetricsListen is the address of a separate listener serving the
	// Prometheus metrics at /metrics (per-team spend and tokens among
	// them), without authentication: keep it on loopback or a network only
	// the scrape reaches. "off" serves no such listener. Default
	// "127.0.0.1:9464".
	MetricsListen string `toml:"metrics_listen" json:"metrics_listen"`
	// PublicMetrics says whether the API's own listener also serves
	// /metrics: "off" (404), "admin" (behind the admin token) or "token"
	// (behind the scrape token of the SLUICE_METRICS_TOKEN environment
	// variable, or the admin token). Default "off".
	PublicMetrics string `toml:"public_metrics" json:"public_metrics"`
	// ReadHeaderTimeout bounds reading a request's headers. Default 10s.
	ReadHeaderTimeout Duration `toml:"read_header_timeout" json:"read_header_timeout"`
	// BodyReadTimeout bounds reading a request's body, from the end of its
	// headers (a caller trickling its body is cut past it). It does not
	// bound the answer: a stream lasts as long as it needs. Default 30s.
	BodyReadTimeout Duration `toml:"body_read_timeout" json:"body_read_timeout"`
	// IdleTimeout bounds how long a kept-alive connection waits for its
	// next request. Default 2m.
	IdleTimeout Duration `toml:"idle_timeout" json:"idle_timeout"`
	// WriteTimeout bounds each write of an answer to the caller (renewed
	// for every write, so a long stream is not cut while the caller
	// reads): a caller that stops reading is cut past it, and its row
	// recorded. Default 30s.
	WriteTimeout Duration `toml:"write_timeout" json:"write_timeout"`
	// LogRequests chooses which requests get a structured log line: "errors"
	// (those that did not end 2xx: refusals, upstream failures, cancelled
	// clients), "all", or "off". Every request has its request-log row
	// whatever this says. Default "errors".
	LogRequests string `toml:"log_requests" json:"log_requests"`
	// LogLevel is the least severe level the gateway logs: "debug", "info",
	// "warn" or "error". The per-request lines of LogRequests are "info", so
	// "warn" or "error" silences them. It reloads live. Default "info".
	LogLevel string `toml:"log_level" json:"log_level"`
	// TrustedProxies lists the addresses (IPs or CIDR prefixes) of the
	// TLS-terminating proxies in front of the gateway: only a request from
	// one of them is believed when its X-Forwarded-Proto says "https"
	// (which makes the compliance pages' cookies Secure). Default none:
	// X-Forwarded-Proto is ignored and only a TLS connection counts.
	TrustedProxies []string `toml:"trusted_proxies" json:"trusted_proxies"`
}

// DefaultMetricsListen is [Server.MetricsListen]'s default: loopback only.
const DefaultMetricsListen = "127.0.0.1:9464"

// Store configures the request log.
type Store struct {
	// Kind is "sqlite" (embedded, the default), "clickhouse", or "off" (no
	// request log: rows are dropped and reads answer that the log is off; for
	// measuring the gateway without its log and for throwaway setups).
	Kind string `toml:"kind" json:"kind"`
	// DataDir holds the SQLite files and the spool; relative paths are resolved
	// against the config directory. Default "data".
	DataDir string `toml:"data_dir" json:"data_dir"`
	// ClickHouseAddr is the native-protocol address. Default
	// "127.0.0.1:9000", or "127.0.0.1:9440" (the secure native port) with
	// clickhouse_tls.
	ClickHouseAddr string `toml:"clickhouse_addr" json:"clickhouse_addr"`
	// ClickHouseDatabase is the database name. Default "sluice".
	ClickHouseDatabase string `toml:"clickhouse_database" json:"clickhouse_database"`
	// BatchSize is the most rows per write. Default 1000 for SQLite and
	// 3000 for ClickHouse, which spends most of an insert's cost per insert
	// rather than per row (measured: at ~6k req/s, 3000-row batches halved
	// the server's CPU against 1000-row ones).
	BatchSize int `toml:"batch_size" json:"batch_size"`
	// FlushInterval is the longest a row waits to be written. Default 1s.
	FlushInterval Duration `toml:"flush_interval" json:"flush_interval"`
	// SpoolMaxBytes bounds the on-disk spool. Default 256 MiB.
	SpoolMaxBytes int64 `toml:"spool_max_bytes" json:"spool_max_bytes"`
	// ClickHouseUser is the ClickHouse user. Default "default".
	ClickHouseUser string `toml:"clickhouse_user" json:"clickhouse_user"`
	// ClickHousePasswordEnv names the environment variable holding the
	// user's password (read at start; never logged). With kind
	// "clickhouse", a variable that is not set (or is empty) is a
	// configuration error. Default none: no password.
	ClickHousePasswordEnv string `toml:"clickhouse_password_env" json:"clickhouse_password_env"`
	// ClickHouseTLS speaks TLS to ClickHouse, on the secure native port
	// (tcp_port_secure, 9440 by convention), verifying the server's
	// certificate and its name against the host of clickhouse_addr.
	// Default false.
	ClickHouseTLS bool `toml:"clickhouse_tls" json:"clickhouse_tls"`
	// ClickHouseCAFile is a PEM file of the CAs that sign the server's
	// certificate, relative to the config directory, read at start (and
	// checked at every load: unreadable, or without a certificate, it is a
	// configuration error). It needs clickhouse_tls = true. Default "": the
	// system's roots.
	ClickHouseCAFile string `toml:"clickhouse_ca_file" json:"clickhouse_ca_file"`
}

// State configures the state store: the routes edited through the admin
// API and their audit trail.
type State struct {
	// Kind is "sqlite" (data_dir/state.db, one per replica; the default)
	// or "postgres" (one database for every replica: a route change on
	// any replica serves on all of them within a second).
	Kind string `toml:"kind" json:"kind"`
	// PostgresURL is the PostgreSQL connection URL
	// ("postgres://user@host:5432/db?sslmode=require"), without its
	// password. Required with kind "postgres".
	PostgresURL string `toml:"postgres_url" json:"postgres_url"`
	// PostgresPasswordEnv names the environment variable holding the
	// password (read at start; never logged). With kind "postgres", a
	// variable that is not set (or is empty) is a configuration error.
	// Default none: no password.
	PostgresPasswordEnv string `toml:"postgres_password_env" json:"postgres_password_env"`
}

// Shared configures the hot state a fleet of gateways shares.
type Shared struct {
	// RedisURL is a Redis 7 URL ("redis://host:6379/0", "rediss://" for
	// TLS), without its password. Set, budgets, session pins, the response
	// cache, targets' health and rate limits are shared by every replica
	// through it. Default "": all of them stay in process.
	RedisURL string `toml:"redis_url" json:"redis_url"`
	// RedisPasswordEnv names the environment variable holding the Redis
	// password (read at start; never logged). With redis_url set, a
	// variable that is not set (or is empty) is a configuration error.
	// Default none: no password.
	RedisPasswordEnv string `toml:"redis_password_env" json:"redis_password_env"`
	// KeyPrefix starts every Redis key sluice writes, so that several
	// fleets can share one Redis. Default "sluice:".
	KeyPrefix string `toml:"key_prefix" json:"key_prefix"`
	// Timeout bounds one Redis round trip; past it the request goes on
	// with local state. Default 250ms.
	Timeout Duration `toml:"timeout" json:"timeout"`
}

// RateLimit bounds a key's or a team's traffic. Zero fields do not limit.
type RateLimit struct {
	// RPM is requests per minute. Default 0: no limit.
	RPM int `toml:"rpm" json:"rpm,omitempty"`
	// TPM is tokens per minute: the prompt's estimate plus the requested
	// completion cap at admission, corrected to the answer's usage after
	// it. Default 0: no limit.
	TPM int `toml:"tpm" json:"tpm,omitempty"`
	// MaxParallel is how many requests may be in flight at once. Default
	// 0: no limit.
	MaxParallel int `toml:"max_parallel" json:"max_parallel,omitempty"`
}

// Set reports whether any limit is set.
func (r *RateLimit) Set() bool { return r != nil && (r.RPM > 0 || r.TPM > 0 || r.MaxParallel > 0) }

// Cache configures the response cache.
type Cache struct {
	// Enabled turns the response cache on. Default false.
	Enabled bool `toml:"enabled" json:"enabled"`
	// TTL is how long an answer is served from the cache. Default 5m.
	TTL Duration `toml:"ttl" json:"ttl"`
	// MaxEntries bounds the in-process cache. Default 10000.
	MaxEntries int `toml:"max_entries" json:"max_entries"`
	// MaxBytes bounds the shared cache (with [shared] redis_url): the
	// oldest answers are evicted past it. Default 64 MiB.
	MaxBytes int64 `toml:"max_bytes" json:"max_bytes"`
	// MaxAnswerBytes: an answer whose body is larger is not stored (it is
	// served, not kept). Default 262144 (256 KiB).
	MaxAnswerBytes int64 `toml:"max_answer_bytes" json:"max_answer_bytes"`
	// StoreAfter is the sighting of a request's key at which its answer
	// is stored: 1 stores every answer (an exact-repeat workload's first
	// repeat is a hit); 2 stores an answer only when its key was seen
	// before (the first miss records the key in a small bounded set of
	// keys seen once, counted fleet-wide on Redis), so a miss-heavy
	// workload whose requests never repeat stores nothing, at the price
	// of one more upstream call for each request that does. Default 2.
	StoreAfter int `toml:"store_after" json:"store_after"`
}

// Sessions configures session pins.
type Sessions struct {
	// TTL is how long a pin outlives its session's last turn. Default 1h.
	TTL Duration `toml:"ttl" json:"ttl"`
	// MaxEntries bounds the pin table. Default 100000.
	MaxEntries int `toml:"max_entries" json:"max_entries"`
	// Headers are the request headers a session's key is read from, in
	// order: the first one present (and non-empty) names the session, and
	// the row records which it was (session_key). Names are HTTP tokens,
	// unique regardless of case. Unset: [DefaultSessionHeaders] — sluice's
	// own X-Session-Id, then the ids coding agents already send
	// (x-claude-code-session-id, session-id). Set to [] to read no session
	// key at all (no pins).
	Headers []string `toml:"headers" json:"headers"`
	// keys is Headers as http.Header keys them (canonical form), set with
	// the defaults, so that the request path looks them up without
	// allocating.
	keys []string
}

// Responses configures the table of stored Responses API responses: which
// upstream stored each response id, so that a continuation
// (previous_response_id) and GET or DELETE of the id go to that upstream
// and nowhere else.
type Responses struct {
	// TTL is how long sluice remembers where a response is stored.
	// Default 720h (30 days, as long as OpenAI keeps a stored response).
	TTL Duration `toml:"ttl" json:"ttl"`
	// MaxEntries bounds the table in each replica's memory; the record
	// itself is kept for TTL in the fleet's Redis with [shared] redis_url,
	// else in data_dir's state file. Default 100000.
	MaxEntries int `toml:"max_entries" json:"max_entries"`
}

// Realtime bounds the WebSocket sessions of GET /v1/realtime.
type Realtime struct {
	// IdleTimeout closes a session when no frame has passed either way for
	// this long. Default 10m.
	IdleTimeout Duration `toml:"idle_timeout" json:"idle_timeout"`
	// MaxDuration closes a session this long after it was accepted,
	// whatever it is doing. Default 1h.
	MaxDuration Duration `toml:"max_duration" json:"max_duration"`
	// MaxFrameBytes is the largest frame sluice relays either way; a
	// larger one closes the session (1009). Each direction holds at most
	// one frame at a time. Default 16777216 (16 MiB).
	MaxFrameBytes int64 `toml:"max_frame_bytes" json:"max_frame_bytes"`
	// MaxOutputTokens is the cap sluice sets on a response.create that
	// sets none (or "inf"), so that a budget can cover the response before
	// it is sent; a lower cap of the caller's stands. Default 4096.
	MaxOutputTokens int64 `toml:"max_output_tokens" json:"max_output_tokens"`
}

// defaultSessionKeys is DefaultSessionHeaders in canonical form.
var defaultSessionKeys = canonicalKeys(DefaultSessionHeaders)

// canonicalKeys returns header names as http.Header keys them.
func canonicalKeys(names []string) []string {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = textproto.CanonicalMIMEHeaderKey(n)
	}
	return keys
}

// Lookup returns the first of the session headers (Headers; unset:
// [DefaultSessionHeaders]) that a request carries with a non-empty value:
// its name as configured, and the value; "" and "" without one.
func (s *Sessions) Lookup(h http.Header) (name, value string) {
	names, keys := s.Headers, s.keys
	if names == nil {
		names, keys = DefaultSessionHeaders, defaultSessionKeys
	}
	for i, n := range names {
		k := n
		if i < len(keys) {
			k = keys[i]
		} else {
			k = textproto.CanonicalMIMEHeaderKey(n) // a Config built without the loader's defaults
		}
		if v := h[k]; len(v) > 0 && v[0] != "" {
			return n, v[0]
		}
	}
	return "", ""
}

// DefaultSessionHeaders is [Sessions.Headers] when unset: sluice's own
// header first, then Claude Code's and Codex's session headers (their
// names as shipped, see testdata/sessions/README.md).
var DefaultSessionHeaders = []string{"X-Session-Id", "x-claude-code-session-id", "session-id"}

// Catalog configures the live refresh of the model catalog from a
// marketplace's listing. Off by default.
type Catalog struct {
	// Source is the listing refreshed from: "openrouter", or "" (off:
	// catalog.json alone). Default "".
	Source string `toml:"source" json:"source,omitempty"`
	// Refresh is how often the listing is fetched; at least a minute.
	// Default 1h.
	Refresh Duration `toml:"refresh" json:"refresh"`
	// Upstream names the [[upstreams]] entry whose base_url and api_key_env
	// the refresh uses. Default: the first upstream whose connector is the
	// source; with none, the public API without a key.
	Upstream string `toml:"upstream" json:"upstream,omitempty"`
	// Only limits the refresh to the models these patterns match (guardrail
	// pattern syntax). Default none: every model.
	Only []string `toml:"only" json:"only,omitempty"`
}

// MinCatalogRefresh is the shortest [catalog] refresh accepted.
const MinCatalogRefresh = time.Minute

// Retry configures gateway-side failover across route targets.
type Retry struct {
	// MaxRetries is the number of retries a request may spend. Default 2.
	MaxRetries *int `toml:"max_retries" json:"max_retries"`
}

// Upstream is one LLM API sluice sends to.
type Upstream struct {
	// Name is unique and referenced by routes, keys and explain.
	Name string `toml:"name" json:"name"`
	// Connector is "openrouter", "vercel", "openai", "anthropic", "vertex"
	// (Google Vertex AI: needs region and project), "azure" or "bedrock"
	// (Amazon Bedrock, built from Region and the AWS credential chain, or a
	// Bedrock API key in APIKeyEnv).
	Connector string `toml:"connector" json:"connector"`
	// BaseURL is the API base. Default: the connector's public endpoint
	// (vertex: the region's, see [VertexBaseURL]). For "azure" it is
	// required: the resource's endpoint (https://{resource}.openai.azure.com),
	// to which the OpenAI v1 surface's path /openai/v1 is appended unless it
	// already ends so (see [AzureBaseURL]).
	BaseURL string `toml:"base_url" json:"base_url"`
	// APIKeyEnv names the environment variable holding the platform key. Default none.
	APIKeyEnv string `toml:"api_key_env" json:"api_key_env"`
	// Region is where the upstream processes requests, in its cloud's own
	// spelling ("us-east-1", "europe-west4", "swedencentral"): a cloud
	// connector builds its endpoint and signs for it, and the data policy's
	// regions are held against it. Default "": none declared.
	Region string `toml:"region" json:"region,omitempty"`
	// Project is the cloud project requests are billed to (Google Vertex
	// AI's project id). Default "": none.
	Project string `toml:"project" json:"project,omitempty"`
	// Deployments maps catalog slugs to the names of the deployments that
	// serve them on an Azure OpenAI resource (connector "azure"): the
	// deployment name is sent as the request's model. Default none: a
	// model is sent under the catalog's native id for azure.
	Deployments map[string]string `toml:"deployments" json:"deployments,omitempty"`
	// ContentFilters names the content filters this upstream runs. Default none.
	ContentFilters []string `toml:"content_filters" json:"content_filters"`
	// ZeroRetention declares that the account behind this direct upstream
	// has a zero-retention agreement with its provider: a data policy's
	// zero_retention is then met on it (for platform-key requests; a
	// caller's own key is not the account that signed). Default false.
	ZeroRetention bool `toml:"zero_retention" json:"zero_retention,omitempty"`
	// NoTraining declares the same of an agreement that the provider
	// neither trains on nor collects the account's prompts. Default false.
	NoTraining bool `toml:"no_training" json:"no_training,omitempty"`
	// Timeout is the total deadline of one attempt. Default 120s.
	Timeout Duration `toml:"timeout" json:"timeout"`
	// FirstByteTimeout is the deadline for response headers. Default 30s.
	FirstByteTimeout Duration `toml:"first_byte_timeout" json:"first_byte_timeout"`
	// CAFile is a PEM file of the CAs that sign an https base_url's
	// certificate, relative to the config directory (a private CA in front
	// of an upstream, a throwaway one in a benchmark). Default "": the
	// system roots.
	CAFile string `toml:"ca_file" json:"ca_file,omitempty"`
	// H2C sends HTTP/2 without TLS (prior knowledge) to an http:// base_url
	// that serves it; an https base_url negotiates HTTP/2 by ALPN without
	// it. Default false: HTTP/1.1 to a plain upstream.
	H2C bool `toml:"h2c" json:"h2c,omitempty"`
	// MaxConnections bounds the connections open to this upstream at once
	// (dialing, in use and idle); a request past it waits for one, within
	// first_byte_timeout. Default 8192.
	MaxConnections int `toml:"max_connections" json:"max_connections,omitempty"`
}

// DefaultMaxConnections is an upstream's max_connections when unset.
const DefaultMaxConnections = 8192

// DefaultBaseURLs are the public endpoints of each connector, used when an
// upstream sets no base_url.
var DefaultBaseURLs = map[string]string{
	"openrouter": "https://openrouter.ai/api/v1",
	"vercel":     "https://ai-gateway.vercel.sh/v1",
	"openai":     "https://api.openai.com/v1",
	"anthropic":  "https://api.anthropic.com/v1",
}

// VertexBaseURL is Google Vertex AI's endpoint for a region: the region's
// own host, https://{region}-aiplatform.googleapis.com, and the global
// host https://aiplatform.googleapis.com for region "global".
func VertexBaseURL(region string) string {
	if region == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + region + "-aiplatform.googleapis.com"
}

// AzureV1Path is the path of Azure OpenAI's OpenAI v1 surface on a
// resource's endpoint.
const AzureV1Path = "/openai/v1"

// AzureBaseURL is the base URL an azure upstream is sent to: the
// resource's endpoint with [AzureV1Path] appended, unless it already ends
// with it; "" stays "" (a missing base_url, which the connector reports).
func AzureBaseURL(endpoint string) string {
	if endpoint == "" || strings.HasSuffix(endpoint, AzureV1Path) {
		return endpoint
	}
	return endpoint + AzureV1Path
}

// Key is one API key: the hash of its secret and the principal it stands for.
type Key struct {
	// ID is unique and names the rung key:<id>.
	ID string `toml:"id" json:"id"`
	// SHA256 is the hex SHA-256 of the secret; the secret is never stored.
	SHA256 string `toml:"sha256" json:"-"`
	// Org, Team and Project place the key on the ladder.
	Org     string `toml:"org" json:"org"`
	Team    string `toml:"team" json:"team"`
	Project string `toml:"project" json:"project"`
	// Upstream serves this key's requests whose model names no route.
	// Default: server.default_upstream.
	Upstream string `toml:"upstream" json:"upstream,omitempty"`
	// Roles grants extra access; "analyst" reads its own team's request log.
	Roles []string `toml:"roles" json:"roles,omitempty"`
	// BYOK names, per upstream ("<upstream>_env"), the environment variable
	// holding the caller's own key for it. Default none.
	BYOK map[string]string `toml:"byok" json:"-"`
	// SafetyNet retries a retryable caller-key failure on the platform key.
	// Default false.
	SafetyNet bool `toml:"safety_net" json:"safety_net,omitempty"`
	// Plan is "free" (default) or "pro".
	Plan string `toml:"plan" json:"plan,omitempty"`
	// CreditUSD is prepaid credit. Default 0.
	CreditUSD float64 `toml:"credit_usd" json:"credit_usd,omitempty"`
	// MonthlyBudgetUSD caps the key's platform-key spend per UTC month.
	// Default 0: no cap.
	MonthlyBudgetUSD float64 `toml:"monthly_budget_usd" json:"monthly_budget_usd,omitempty"`
	// RateLimit bounds the key's traffic (rpm, tpm, max_parallel), across
	// the fleet with [shared] redis_url. Default none.
	RateLimit *RateLimit `toml:"rate_limit" json:"rate_limit,omitempty"`
}

// CallerKeyEnv returns the environment variable holding the caller's own
// key for an upstream, or "".
func (k *Key) CallerKeyEnv(upstream string) string { return k.BYOK[upstream+"_env"] }

// Team holds per-team settings.
type Team struct {
	// Name is the team, as in [[keys]] team.
	Name string `toml:"name" json:"name"`
	// Org is the org whose team this is: team names are not global. Default
	// "": the team of that name in every org (an entry that names the org
	// wins over one that does not).
	Org string `toml:"org" json:"org,omitempty"`
	// MonthlyBudgetUSD caps the team's platform-key spend per UTC month
	// (each org's team of the name separately). Default 0: no cap.
	MonthlyBudgetUSD float64 `toml:"monthly_budget_usd" json:"monthly_budget_usd,omitempty"`
	// RateLimit bounds the team's traffic, every key of it together.
	// Default none.
	RateLimit *RateLimit `toml:"rate_limit" json:"rate_limit,omitempty"`
}

// Principal returns the ladder position of the key.
func (k *Key) Principal() Principal {
	return Principal{Org: k.Org, Team: k.Team, Project: k.Project, Key: k.ID}
}

// HasRole reports whether the key carries the role.
func (k *Key) HasRole(role string) bool {
	for _, r := range k.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// Route maps a public model alias onto an ordered set of targets.
type Route struct {
	// Model is the alias clients send as "model".
	Model string `toml:"model" json:"model"`
	// Strategy orders ordinary targets: "priority" (default), "round_robin",
	// "weighted" or "fastest".
	Strategy string `toml:"strategy" json:"strategy"`
	// Limits overrides [retry] for this route.
	Limits *RouteLimits `toml:"limits" json:"limits,omitempty"`
	// ForbidClasses lists target classes this route may never dial.
	ForbidClasses []string `toml:"forbid_classes" json:"forbid_classes,omitempty"`
	// Targets are the route's members, in written order.
	Targets []Target `toml:"targets" json:"targets"`
	// Then is the guarded tail of a fastest pool. Default none.
	Then *Tail `toml:"then" json:"then,omitempty"`
}

// RouteLimits holds per-route overrides.
type RouteLimits struct {
	// Retries overrides [retry] max_retries.
	Retries *int `toml:"retries" json:"retries,omitempty"`
}

// Target is one place a route can send a request.
type Target struct {
	// ID identifies the target within its route (the admin API addresses
	// targets by it). Default: assigned when the route is stored ("t1", ...).
	ID string `toml:"id" json:"id,omitempty"`
	// Upstream names the upstream.
	Upstream string `toml:"upstream" json:"upstream"`
	// Model is the slug sent. Default: the route's model.
	Model string `toml:"model" json:"model"`
	// Weight is the share on a weighted route. Default 1.
	Weight int `toml:"weight" json:"weight"`
	// Class is the cost class ("paid", "free", ...). Default none.
	Class string `toml:"class" json:"class,omitempty"`
	// TakesOver lists the failure classes this target is reserved for; a target
	// with any is restricted. Default none (ordinary).
	TakesOver []string `toml:"takes_over" json:"takes_over"`
}

// Restricted reports whether the target only takes over specific failures.
func (t *Target) Restricted() bool { return len(t.TakesOver) > 0 }

// Tail is the guarded tail of a fastest pool.
type Tail struct {
	// Targets are tried in written order after the pool members.
	Targets []Target `toml:"targets" json:"targets"`
	// On lists the last member's failure classes that reach the tail.
	// Default ["overflow"].
	On []string `toml:"on" json:"on"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", b, err)
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Team returns the settings of the team of an org: the entry naming both,
// else the entry naming the team for every org, else nil.
func (c *Config) Team(org, name string) *Team {
	var any *Team
	for i := range c.Teams {
		t := &c.Teams[i]
		switch {
		case t.Name != name:
		case t.Org == org:
			return t
		case t.Org == "" && any == nil:
			any = t
		}
	}
	return any
}

// KeyByID returns the key with the id, or nil.
func (c *Config) KeyByID(id string) *Key { return c.keysByID[id] }

// KeyByHash returns the key whose secret hashes to the lower-case hex digest, or nil.
func (c *Config) KeyByHash(hexDigest string) *Key { return c.keysByHash[hexDigest] }

// Upstream returns the upstream with the name, or nil.
func (c *Config) Upstream(name string) *Upstream { return c.upstreams[name] }

// UpstreamFor returns the name of the upstream serving the key's unrouted requests.
func (c *Config) UpstreamFor(k *Key) string {
	if k != nil && k.Upstream != "" {
		return k.Upstream
	}
	return c.Server.DefaultUpstream
}

// RetryBudget returns the retries a request on the route may spend.
func (c *Config) RetryBudget(r *Route) int {
	if r != nil && r.Limits != nil && r.Limits.Retries != nil {
		return *r.Limits.Retries
	}
	return *c.Retry.MaxRetries
}

// Route returns the route whose alias is model (compared case-insensitively,
// as model slugs are), or nil.
func (c *Config) Route(model string) *Route {
	for i := range c.Routes {
		if strings.EqualFold(c.Routes[i].Model, model) {
			return &c.Routes[i]
		}
	}
	return nil
}

// Load reads and validates DIR/sluice.toml and every profile file under
// DIR/profiles. It returns every problem found, sorted and located; the Config
// is nil whenever any diagnostic is returned.
func Load(dir string) (*Config, Diagnostics) {
	cfg, diags := LoadAll(dir)
	if len(diags) > 0 {
		return nil, diags
	}
	return cfg, nil
}

// LoadAll is [Load] for a reader of every mistake at once (sluice check): it
// goes on past schema violations, checking what still decodes, and returns
// the best-effort Config beside the diagnostics. The Config is nil only when
// sluice.toml cannot be read or decoded at all; with diagnostics it must not
// be served.
func LoadAll(dir string) (*Config, Diagnostics) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Diagnostics{{File: dir, Code: CodeReadError, Message: err.Error()}}
	}
	var diags Diagnostics
	h := sha256.New()
	cfg := loadMain(abs, &diags, h)
	set := loadProfiles(abs, &diags, h)
	if cfg != nil {
		cfg.Profiles = set
		cfg.revision = hex.EncodeToString(h.Sum(nil))
		for _, rung := range set.keyRungs() {
			if cfg.keysByID[rung.name] == nil {
				diags = append(diags, Diagnostic{File: rung.file, Code: CodeUnknownKey,
					Message: fmt.Sprintf("profile for key %q, but sluice.toml defines no key with that id", rung.name)})
			}
		}
		diags = append(diags, set.checkTightening(cfg.Keys)...)
	}
	diags.Sort()
	return cfg, diags
}

// loadMain reads, validates and decodes sluice.toml, writing its bytes to h.
// Schema violations do not stop it: when the document still decodes, the
// cross-references are checked too (a problem on a line the schema already
// reported is left to the schema's message). It returns nil only when the
// file cannot be read or decoded.
func loadMain(dir string, diags *Diagnostics, h io.Writer) *Config {
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		*diags = append(*diags, Diagnostic{File: ConfigFile, Code: CodeReadError, Message: err.Error()})
		return nil
	}
	_, _ = h.Write(data)
	doc, pos, syn := decodeTOML(ConfigFile, data)
	if syn != nil {
		*diags = append(*diags, *syn)
		return nil
	}
	schemaLines := map[int]bool{}
	vs := schemas.Validate(schemas.Sluice, doc)
	for _, v := range vs {
		line := pos.schemaLine(v)
		schemaLines[line] = true
		*diags = append(*diags, Diagnostic{File: ConfigFile, Line: line, Pointer: v.Pointer, Code: CodeSchema, Message: v.Message})
	}
	cfg := &Config{Dir: dir}
	if err := toml.Unmarshal(data, cfg); err != nil {
		if len(vs) == 0 {
			// The schema admitted something the typed decoder cannot hold: a
			// bug in the schema, reported rather than hidden.
			*diags = append(*diags, Diagnostic{File: ConfigFile, Code: CodeSchema, Message: err.Error()})
		}
		return nil
	}
	cfg.applyDefaults()
	var cross Diagnostics
	cfg.crossCheck(pos, &cross)
	for _, d := range cross {
		if len(vs) == 0 || !schemaLines[d.Line] {
			*diags = append(*diags, d)
		}
	}
	return cfg
}

func (c *Config) applyDefaults() {
	s := &c.Server
	if s.Listen == "" {
		s.Listen = "127.0.0.1:8080"
	}
	if s.DefaultUpstream == "" && len(c.Upstreams) > 0 {
		s.DefaultUpstream = c.Upstreams[0].Name
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = 10 << 20
	}
	if s.LogRequests == "" {
		s.LogRequests = "errors"
	}
	if s.LogLevel == "" {
		s.LogLevel = "info"
	}
	if s.ShutdownTimeout.Duration == 0 {
		s.ShutdownTimeout.Duration = 30 * time.Second
	}
	if s.MetricsListen == "" {
		s.MetricsListen = DefaultMetricsListen
	}
	if s.PublicMetrics == "" {
		s.PublicMetrics = "off"
	}
	for _, d := range []struct {
		v   *Duration
		def time.Duration
	}{{&s.ReadHeaderTimeout, 10 * time.Second}, {&s.BodyReadTimeout, 30 * time.Second},
		{&s.IdleTimeout, 2 * time.Minute}, {&s.WriteTimeout, 30 * time.Second}} {
		if d.v.Duration == 0 {
			d.v.Duration = d.def
		}
	}
	st := &c.Store
	if st.Kind == "" {
		st.Kind = "sqlite"
	}
	if st.DataDir == "" {
		st.DataDir = "data"
	}
	if !filepath.IsAbs(st.DataDir) {
		st.DataDir = filepath.Join(c.Dir, st.DataDir)
	}
	if st.ClickHouseAddr == "" {
		st.ClickHouseAddr = "127.0.0.1:9000"
		if st.ClickHouseTLS {
			st.ClickHouseAddr = "127.0.0.1:9440"
		}
	}
	if st.ClickHouseDatabase == "" {
		st.ClickHouseDatabase = "sluice"
	}
	if st.BatchSize == 0 {
		st.BatchSize = 1000
		if st.Kind == "clickhouse" {
			st.BatchSize = 3000
		}
	}
	if st.FlushInterval.Duration == 0 {
		st.FlushInterval.Duration = time.Second
	}
	if st.SpoolMaxBytes == 0 {
		st.SpoolMaxBytes = 256 << 20
	}
	if c.Cache.TTL.Duration == 0 {
		c.Cache.TTL.Duration = 5 * time.Minute
	}
	if c.Cache.MaxEntries == 0 {
		c.Cache.MaxEntries = 10000
	}
	if c.Cache.MaxBytes == 0 {
		c.Cache.MaxBytes = 64 << 20
	}
	if c.Cache.MaxAnswerBytes == 0 {
		c.Cache.MaxAnswerBytes = 256 << 10
	}
	if c.Cache.StoreAfter == 0 {
		c.Cache.StoreAfter = 2
	}
	if c.State.Kind == "" {
		c.State.Kind = "sqlite"
	}
	if c.Shared.KeyPrefix == "" {
		c.Shared.KeyPrefix = "sluice:"
	}
	if c.Shared.Timeout.Duration == 0 {
		c.Shared.Timeout.Duration = 250 * time.Millisecond
	}
	if st.ClickHouseUser == "" {
		st.ClickHouseUser = "default"
	}
	if st.ClickHouseCAFile != "" && !filepath.IsAbs(st.ClickHouseCAFile) {
		st.ClickHouseCAFile = filepath.Join(c.Dir, st.ClickHouseCAFile)
	}
	if c.Sessions.TTL.Duration == 0 {
		c.Sessions.TTL.Duration = time.Hour
	}
	if c.Sessions.MaxEntries == 0 {
		c.Sessions.MaxEntries = 100000
	}
	if c.Responses.TTL.Duration == 0 {
		c.Responses.TTL.Duration = 720 * time.Hour
	}
	if c.Realtime.IdleTimeout.Duration == 0 {
		c.Realtime.IdleTimeout.Duration = 10 * time.Minute
	}
	if c.Realtime.MaxDuration.Duration == 0 {
		c.Realtime.MaxDuration.Duration = time.Hour
	}
	if c.Realtime.MaxFrameBytes == 0 {
		c.Realtime.MaxFrameBytes = 16 << 20
	}
	if c.Realtime.MaxOutputTokens == 0 {
		c.Realtime.MaxOutputTokens = 4096
	}
	if c.Responses.MaxEntries == 0 {
		c.Responses.MaxEntries = 100000
	}
	if c.Sessions.Headers == nil { // unset; [] reads no session key
		c.Sessions.Headers = append([]string(nil), DefaultSessionHeaders...)
	}
	c.Sessions.keys = canonicalKeys(c.Sessions.Headers)
	if c.Catalog.Refresh.Duration == 0 {
		c.Catalog.Refresh.Duration = time.Hour
	}
	if c.Catalog.Source != "" && c.Catalog.Upstream == "" {
		for _, u := range c.Upstreams {
			if u.Connector == c.Catalog.Source {
				c.Catalog.Upstream = u.Name
				break
			}
		}
	}
	if o := c.UI.OIDC; o != nil {
		if o.GroupsClaim == "" {
			o.GroupsClaim = "groups"
		}
		if o.Scopes == nil {
			o.Scopes = []string{"profile", "email", "groups"}
		}
	}
	if c.Retry.MaxRetries == nil {
		two := 2
		c.Retry.MaxRetries = &two
	}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.BaseURL == "" {
			u.BaseURL = DefaultBaseURLs[u.Connector]
		}
		if u.BaseURL == "" && u.Connector == "vertex" && u.Region != "" {
			u.BaseURL = VertexBaseURL(u.Region)
		}
		u.BaseURL = strings.TrimRight(u.BaseURL, "/")
		if u.Connector == "azure" {
			u.BaseURL = AzureBaseURL(u.BaseURL)
		}
		if u.Timeout.Duration == 0 {
			u.Timeout.Duration = 120 * time.Second
		}
		if u.FirstByteTimeout.Duration == 0 {
			u.FirstByteTimeout.Duration = 30 * time.Second
		}
		if u.MaxConnections == 0 {
			u.MaxConnections = DefaultMaxConnections
		}
		if u.CAFile != "" && !filepath.IsAbs(u.CAFile) {
			u.CAFile = filepath.Join(c.Dir, u.CAFile)
		}
	}
	for i := range c.Keys {
		c.Keys[i].SHA256 = strings.ToLower(c.Keys[i].SHA256)
		if c.Keys[i].Plan == "" {
			c.Keys[i].Plan = "free"
		}
	}
	for i := range c.Routes {
		c.Routes[i].ApplyDefaults()
	}
}

// ApplyDefaults fills a route's unset fields: strategy "priority", each
// target's model (the route's), weight 1, takes_over [], the tail's guard
// ["overflow"], and an id for every target that has none ("t1", "t2", ...,
// skipping ids already taken). Model slugs and the alias are lower-cased:
// requests name models case-insensitively.
func (r *Route) ApplyDefaults() {
	r.Model = strings.ToLower(r.Model)
	if r.Strategy == "" {
		r.Strategy = "priority"
	}
	defaultTargets(r.Targets, r.Model)
	if r.Then != nil {
		defaultTargets(r.Then.Targets, r.Model)
		if r.Then.On == nil {
			r.Then.On = []string{"overflow"}
		}
	}
	taken := map[string]bool{}
	all := r.AllTargets()
	for _, t := range all {
		taken[t.ID] = true
	}
	n := 0
	for _, t := range all {
		for t.ID == "" {
			n++
			if id := fmt.Sprintf("t%d", n); !taken[id] {
				t.ID, taken[id] = id, true
			}
		}
	}
}

// Forbids returns the route's forbid_classes entry that names one of
// classes (as written in the route), and whether there is one. Classes compare as [SameClass] does;
// empty classes are never forbidden. sluice.toml, the state store, the admin
// API, the catalog check and request planning all decide with it.
func (r *Route) Forbids(classes ...string) (string, bool) {
	for _, c := range classes {
		for _, fc := range r.ForbidClasses {
			if SameClass(fc, c) {
				return fc, true
			}
		}
	}
	return "", false
}

// SameClass reports whether two cost classes are the same class: compared
// without case and surrounding space ("PAID" and "paid " are one class). An
// empty class matches nothing.
func SameClass(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	return a != "" && strings.EqualFold(a, b)
}

// AllTargets returns pointers to the route's targets, members first, then
// the tail's.
func (r *Route) AllTargets() []*Target {
	out := make([]*Target, 0, len(r.Targets))
	for i := range r.Targets {
		out = append(out, &r.Targets[i])
	}
	if r.Then != nil {
		for i := range r.Then.Targets {
			out = append(out, &r.Then.Targets[i])
		}
	}
	return out
}

func defaultTargets(ts []Target, model string) {
	for i := range ts {
		t := &ts[i]
		if t.Model == "" {
			t.Model = model
		}
		t.Model = strings.ToLower(t.Model)
		if t.Weight == 0 {
			t.Weight = 1
		}
		if t.TakesOver == nil {
			t.TakesOver = []string{}
		}
	}
}

// crossCheck finds what the schema cannot: duplicate ids and dangling references.
func (c *Config) crossCheck(pos positions, diags *Diagnostics) {
	at := func(code string, tokens []string, format string, args ...any) {
		*diags = append(*diags, Diagnostic{File: ConfigFile, Line: pos.line(schemas.Pointer(tokens...)), Code: code, Message: fmt.Sprintf(format, args...)})
	}
	c.upstreams = map[string]*Upstream{}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if prev := c.upstreams[u.Name]; prev != nil {
			at(CodeDuplicateUpstream, []string{"upstreams", itoa(i), "name"}, "upstream %q is defined twice", u.Name)
			continue
		}
		c.upstreams[u.Name] = u
		if (u.ZeroRetention || u.NoTraining) && (u.Connector == "openrouter" || u.Connector == "vercel") {
			field := "zero_retention"
			if !u.ZeroRetention {
				field = "no_training"
			}
			at(CodeMarketplaceAgreement, []string{"upstreams", itoa(i), field},
				"upstream %q is a marketplace (%s): an account agreement is declared only for a direct upstream; a marketplace expresses the data policy per request, endpoint by endpoint", u.Name, u.Connector)
		}
		if u.CAFile != "" {
			if _, err := readCAs(u.CAFile); err != nil {
				at(CodeInvalidCAFile, []string{"upstreams", itoa(i), "ca_file"}, "upstream %q: ca_file %q: %v", u.Name, c.inDir(u.CAFile), err)
			}
		}
		if u.H2C && !strings.HasPrefix(u.BaseURL, "http://") {
			at(CodeMissingSetting, []string{"upstreams", itoa(i), "h2c"}, "upstream %q: h2c is for an http:// base_url (an https one negotiates HTTP/2 by itself)", u.Name)
		}
	}
	known := func(name string, tokens []string, what string) {
		if c.upstreams[name] == nil {
			at(CodeUnknownUpstream, tokens, "%s names upstream %q, which is not defined in [[upstreams]]", what, name)
		}
	}
	if c.Server.DefaultUpstream != "" {
		known(c.Server.DefaultUpstream, []string{"server", "default_upstream"}, "server.default_upstream")
	}
	c.keysByID = map[string]*Key{}
	c.keysByHash = map[string]*Key{}
	for i := range c.Keys {
		k := &c.Keys[i]
		if c.keysByID[k.ID] != nil {
			at(CodeDuplicateKeyID, []string{"keys", itoa(i), "id"}, "key id %q is defined twice", k.ID)
		} else {
			c.keysByID[k.ID] = k
		}
		if prev := c.keysByHash[k.SHA256]; prev != nil {
			at(CodeDuplicateKeyHash, []string{"keys", itoa(i), "sha256"}, "key %q has the same secret hash as key %q", k.ID, prev.ID)
		} else {
			c.keysByHash[k.SHA256] = k
		}
		if k.Upstream != "" {
			known(k.Upstream, []string{"keys", itoa(i), "upstream"}, fmt.Sprintf("key %q", k.ID))
		}
		for envKey := range k.BYOK {
			known(strings.TrimSuffix(envKey, "_env"), []string{"keys", itoa(i), "byok", envKey}, fmt.Sprintf("key %q byok", k.ID))
		}
	}
	if cat := c.Catalog; cat.Source != "" {
		if cat.Refresh.Duration < MinCatalogRefresh {
			at(CodeCatalogRefresh, []string{"catalog", "refresh"}, "catalog.refresh is %s; the listing is fetched at most once a minute", cat.Refresh.Duration)
		}
		if u := c.upstreams[cat.Upstream]; cat.Upstream != "" && u == nil {
			known(cat.Upstream, []string{"catalog", "upstream"}, "catalog.upstream")
		} else if u != nil && u.Connector != cat.Source {
			at(CodeCatalogRefresh, []string{"catalog", "upstream"}, "catalog.upstream %q has connector %q; the %s listing is read through an upstream with connector %q", u.Name, u.Connector, cat.Source, cat.Source)
		}
	}
	teams := map[string]bool{}
	for i, tm := range c.Teams {
		if teams[tm.Org+"/"+tm.Name] {
			at(CodeDuplicateTeam, []string{"teams", itoa(i), "name"}, "team %q is configured twice", tm.Name)
		}
		teams[tm.Org+"/"+tm.Name] = true
	}
	for i, p := range c.Server.TrustedProxies {
		if _, err := ParseProxy(p); err != nil {
			at(CodeInvalidProxy, []string{"server", "trusted_proxies", itoa(i)}, "%v", err)
		}
	}
	if c.State.Kind == "postgres" && c.State.PostgresURL == "" {
		at(CodeMissingSetting, []string{"state", "kind"}, `[state] kind = "postgres" needs postgres_url`)
	}
	c.checkStore(at)
	seen := map[string]bool{}
	for i, h := range c.Sessions.Headers {
		tokens := []string{"sessions", "headers", itoa(i)}
		switch lower := strings.ToLower(h); {
		case !httpguts.ValidHeaderFieldName(h):
			at(CodeInvalidSessionHeader, tokens, "sessions.headers[%d] is %q, not a header name (an HTTP token: letters, digits and !#$%%&'*+-.^_`|~)", i, h)
		case seen[lower]:
			at(CodeInvalidSessionHeader, tokens, "sessions.headers names %q twice (header names are compared regardless of case)", h)
		default:
			seen[lower] = true
		}
	}
	for i, h := range c.Server.ForwardHeaders {
		if IsCredentialHeader(h) {
			at(CodeCredentialHeader, []string{"server", "forward_headers", itoa(i)},
				"server.forward_headers[%d] is %q, a header that carries a credential: an upstream must never receive the caller's secret, cookie or key", i, h)
		}
	}
	for _, p := range CheckRoutes(c.Routes, func(name string) bool { return c.upstreams[name] != nil }) {
		at(p.Code, p.Tokens, "%s", p.Message)
	}
}

// RouteProblem is one problem CheckRoutes found, located by the JSON pointer
// tokens of the offending value relative to the routes list
// (["0", "targets", "1", "upstream"]).
type RouteProblem struct {
	Tokens  []string
	Code    string
	Message string
}

// CheckRoutes finds what the schema cannot in a list of routes: duplicate
// aliases, unknown upstreams, a route whose every target is restricted, a
// tail on a non-fastest route, a target of a forbidden class. sluice.toml,
// the state store and the admin API all validate routes with it.
func CheckRoutes(routes []Route, upstreamKnown func(string) bool) []RouteProblem {
	var out []RouteProblem
	add := func(code string, tokens []string, format string, args ...any) {
		out = append(out, RouteProblem{Tokens: append([]string{"routes"}, tokens...), Code: code, Message: fmt.Sprintf(format, args...)})
	}
	aliases := map[string]bool{}
	for i := range routes {
		r := &routes[i]
		ri := itoa(i)
		alias := strings.ToLower(r.Model)
		if why := checkAlias(r.Model); why != "" {
			add(CodeInvalidAlias, []string{ri, "model"}, "%s", why)
		}
		if aliases[alias] {
			add(CodeDuplicateRoute, []string{ri, "model"}, "route %q is defined twice", r.Model)
		}
		aliases[alias] = true
		targetIDs := map[string]bool{}
		checkTarget := func(t *Target, tokens []string, what string) {
			if t.Weight > MaxWeight {
				add(CodeWeightRange, append(tokens, "weight"), "route %q %s has weight %d; the most is %d", r.Model, what, t.Weight, MaxWeight)
			}
			if !upstreamKnown(t.Upstream) {
				add(CodeUnknownUpstream, append(tokens, "upstream"), "route %q %s names upstream %q, which is not defined in [[upstreams]]", r.Model, what, t.Upstream)
			}
			if c, ok := r.Forbids(t.Class); ok {
				add(CodeForbiddenClass, append(tokens, "class"), "route %q forbids class %q, but target %s/%s has it", r.Model, c, t.Upstream, t.Model)
			}
			if t.ID != "" {
				if targetIDs[t.ID] {
					add(CodeDuplicateTarget, append(tokens, "id"), "route %q has two targets with id %q", r.Model, t.ID)
				}
				targetIDs[t.ID] = true
			}
		}
		ordinary := 0
		for j := range r.Targets {
			checkTarget(&r.Targets[j], []string{ri, "targets", itoa(j)}, fmt.Sprintf("target %d", j))
			if !r.Targets[j].Restricted() {
				ordinary++
			}
		}
		if ordinary == 0 {
			add(CodeAllTargetsRestricted, []string{ri, "targets"},
				"route %q: every target sets takes_over, so no request could ever be dialled; give it at least one ordinary target", r.Model)
		}
		if r.Then != nil {
			if r.Strategy != "fastest" {
				add(CodeThenNotOnPool, []string{ri, "then"}, "route %q: then (a guarded tail) exists only on strategy \"fastest\", not %q", r.Model, r.Strategy)
			}
			for j := range r.Then.Targets {
				checkTarget(&r.Then.Targets[j], []string{ri, "then", "targets", itoa(j)}, fmt.Sprintf("tail target %d", j))
			}
		}
	}
	return out
}

func itoa(i int) string { return fmt.Sprint(i) }

// ParseProxy parses one [server] trusted_proxies entry: an IP address or a
// CIDR prefix.
func ParseProxy(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q is neither an IP address nor a CIDR prefix", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// UI configures the compliance pages.
type UI struct {
	// OIDC, when set, lets reviewers sign in to the pages through the
	// company's OpenID Connect identity provider. Default: unset (no
	// single sign-on).
	OIDC *OIDC `toml:"oidc" json:"oidc,omitempty"`
}

// OIDC is the pages' OpenID Connect relying party: the authorization-code
// flow with PKCE, the groups claim mapped to a role and a scope.
type OIDC struct {
	// Issuer is the identity provider's issuer URL (its discovery document
	// is Issuer + "/.well-known/openid-configuration"). Required.
	Issuer string `toml:"issuer" json:"issuer"`
	// ClientID is the pages' client id at the provider. Required.
	ClientID string `toml:"client_id" json:"client_id"`
	// ClientSecretEnv names the environment variable holding the client
	// secret. Default "": a public client, authenticated by PKCE alone.
	ClientSecretEnv string `toml:"client_secret_env" json:"client_secret_env,omitempty"`
	// RedirectURL is the callback registered at the provider: the pages'
	// /ui/oidc/callback under the gateway's external URL. Required.
	RedirectURL string `toml:"redirect_url" json:"redirect_url"`
	// GroupsClaim is the claim (of the ID token, else of the userinfo
	// answer) listing the user's groups. Default "groups".
	GroupsClaim string `toml:"groups_claim" json:"groups_claim,omitempty"`
	// Scopes are the scopes asked for beside "openid". Default ["profile",
	// "email", "groups"].
	Scopes []string `toml:"scopes" json:"scopes,omitempty"`
	// Groups map the provider's groups to a role and a scope; the first
	// entry naming one of the user's groups applies. A user in none is
	// refused. Default none (nobody signs in).
	Groups []OIDCGroup `toml:"groups" json:"groups,omitempty"`
}

// OIDCGroup maps one identity-provider group to a role on the pages.
type OIDCGroup struct {
	// Group is the group's name as the groups claim spells it. Required.
	Group string `toml:"group" json:"group"`
	// Role is "reviewer": reads the request log's rows and pages of its
	// scope, and holds no API key (it cannot call the model APIs).
	// Required.
	Role string `toml:"role" json:"role"`
	// Org is the organisation whose rows the role reads. Required.
	Org string `toml:"org" json:"org"`
	// Team narrows the scope to one team of Org. Default "": every team
	// of Org.
	Team string `toml:"team" json:"team,omitempty"`
}
