// Package requestlog records one row per gateway request for compliance
// review, in SQLite (single node) or ClickHouse (fleet), without ever making
// the request path wait on the database: the gateway calls [Writer.Enqueue],
// which batches rows in memory and spools them to disk while the store is down.
package requestlog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Row is one request as recorded in the log. Its JSON names are the column
// names of both backends.
type Row struct {
	// TS is when the request arrived, in UTC. Stores keep millisecond precision.
	TS time.Time `json:"ts"`
	// RequestID identifies the request; stores keep at most one row per ID.
	RequestID string `json:"request_id"`
	// Org, Team and Project are the principal's tenancy path.
	Org     string `json:"org"`
	Team    string `json:"team"`
	Project string `json:"project"`
	// KeyID identifies the API key used; SessionID the client session, if any.
	KeyID     string `json:"key_id"`
	SessionID string `json:"session_id"`
	// Route is the route alias the client asked for, "" if none.
	Route string `json:"route"`
	// Upstream names the upstream the request was sent through.
	Upstream string `json:"upstream"`
	// DecidedModel is the model routing chose first; Chain is the full
	// ordered candidate list.
	DecidedModel string   `json:"decided_model"`
	Chain        []string `json:"chain"`
	// ServedModel and ServedProvider answered the request ("" if none did).
	ServedModel    string `json:"served_model"`
	ServedProvider string `json:"served_provider"`
	// RoutingSwitchReason says why routing moved off the decided model.
	RoutingSwitchReason string `json:"routing_switch_reason"`
	// RoutingDegraded lists what routing had to give up, sorted; stores return
	// an empty (non-nil) slice when nothing was lost.
	RoutingDegraded []string `json:"routing_degraded"`
	// RefusedCode is the gateway's refusal code, "" if the request was not refused.
	RefusedCode string `json:"refused_code"`
	// FallbackReason says why a fallback upstream or model was used.
	FallbackReason string `json:"fallback_reason"`
	// Attempts counts upstream attempts; Status is the HTTP status returned.
	Attempts int `json:"attempts"`
	Status   int `json:"status"`
	// Stream is true for streamed responses; CacheHit when served from cache.
	Stream   bool `json:"stream"`
	CacheHit bool `json:"cache_hit"`
	// RepresentationBreak is true when the served upstream could not keep the
	// request's representation intact.
	RepresentationBreak bool `json:"representation_break"`
	// CacheDiscountApplied is true exactly when cached prompt tokens were
	// priced at the cache price: at the catalog's price_cache_read, or by
	// the upstream's own bill when it reported the cost and cached tokens.
	// False when nothing was reported cached, the catalog has no cache-read
	// price, or a representation break priced from the catalog was denied
	// it. A session or its pin plays no part (docs/sessions.md).
	CacheDiscountApplied bool `json:"cache_discount_applied"`
	// PromptTokens and CompletionTokens are the usage billed.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CostUSD is the request's cost in US dollars.
	CostUSD float64 `json:"cost_usd"`
	// CostSource says where CostUSD came from: "upstream" (the cost the
	// upstream billed and reported), "catalog" (the catalog's prices for the
	// served endpoint), or "" (no cost known).
	CostSource string `json:"cost_source"`
	// LatencyMS is the total latency and TTFTMS the time to first token, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	TTFTMS    float64 `json:"ttft_ms"`
	// RequestRouting is true when the request carried its own routing
	// object (the request rung of the ladder): its plan then depended on
	// more than the key's configuration, which `sluice diff --traffic`
	// reports. Rows recorded before the column existed read false.
	RequestRouting bool `json:"request_routing"`
	// ConfigRevision is the revision of the configuration that served the
	// request (the snapshot's: sluice.toml, profiles, catalog, guardrails
	// and the stored routes), so a reviewer can tie the row to the change
	// that caused it; "" for rows written before it was recorded.
	ConfigRevision string `json:"config_revision"`
	// API is the API the request came in on: "chat" (POST
	// /v1/chat/completions), "messages" (POST /v1/messages) or
	// "embeddings" (POST /v1/embeddings). Rows recorded before the column
	// existed read "" (they were all chat).
	API string `json:"api"`
	// SessionKey is the request header SessionID was read from (one of
	// [sessions] headers, as configured: "X-Session-Id",
	// "x-claude-code-session-id", "session-id"), "" without a session.
	SessionKey string `json:"session_key"`
	// SessionAffinity says how the session was kept on one model and
	// provider: "pin" (sluice's own pin alone), "pin+session_id"
	// (OpenRouter's sticky routing asked with session_id as well),
	// "pin+prompt_cache_key" (OpenAI's prompt_cache_key sent as well), or ""
	// without a session or when no upstream was asked (a response-cache
	// hit, a refusal before dispatch). An OpenRouter request with a provider order reads
	// "pin": OpenRouter uses no sticky routing then, so none is claimed.
	SessionAffinity string `json:"session_affinity"`
	// CachedTokens is the part of PromptTokens the upstream reported read
	// from its prompt cache (0 when it reported none), and ReasoningTokens
	// the part of CompletionTokens it reported spent on reasoning (the
	// Responses API's output_tokens_details; 0 when not reported). Rows
	// recorded before the columns existed read 0.
	CachedTokens    int64 `json:"cached_tokens"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	// DataPolicy names the data restrictions that bound the request,
	// comma-separated in a fixed order ("zero_retention,no_training",
	// "quantizations", "max_price", "regions"); "" when none did. DataPolicyVia says
	// how each was held on the upstream the request was sent to
	// ("zero_retention=native,max_price=allow_list"; native: the
	// upstream's own knob, allow_list: reduced to the providers whose
	// catalog endpoints satisfy it, local: decided by sluice on a direct
	// upstream), "" when it was sent nowhere (refused, or a cache hit).
	// Rows recorded before the columns existed read "".
	DataPolicy    string `json:"data_policy"`
	DataPolicyVia string `json:"data_policy_via"`
	// PreferenceRankBy, PreferencePreferred, PreferenceAllowed and
	// PreferenceDenied are the provider preference the request was sent
	// with, as merged down the ladder (with a guardrail's lists, the
	// Anthropic first-party default and a session's pinned provider): the
	// ranking ("cost", "latency", "throughput" or ""), the preferred order,
	// and the allow and deny lists, lower-case catalog slugs. Stores return
	// empty (non-nil) lists when none was set; an empty allow list reads as
	// no restriction. Rows recorded before the columns existed read empty.
	PreferenceRankBy    string   `json:"preference_rank_by"`
	PreferencePreferred []string `json:"preference_preferred"`
	PreferenceAllowed   []string `json:"preference_allowed"`
	PreferenceDenied    []string `json:"preference_denied"`
	// PreferenceVerdict says whether the served provider honoured the
	// preference: one of [PreferenceVerdicts] (docs/request-log.md), ""
	// for rows recorded before the column existed.
	PreferenceVerdict string `json:"preference_verdict"`
	// RefusedMessage is the refusal's message, beside RefusedCode; "" when
	// the request was not refused.
	RefusedMessage string `json:"refused_message"`
	// UpstreamAttempts is what the upstream reported of its own attempts
	// when one before the serving one failed (a chain switch, or another
	// provider of the same model): "model@provider status" entries, in
	// order, comma-separated. "" when the upstream reported none, or only
	// the attempt that served.
	UpstreamAttempts string `json:"upstream_attempts"`
	// RoutingObject is the request's own routing object (the request rung)
	// as compact JSON, so that its plan can be replayed; "" without one,
	// or when it was longer than [MaxRoutingObject] bytes.
	RoutingObject string `json:"routing_object"`
	// ServedRegion is where the upstream that served processes: a direct
	// upstream's declared region in its cloud's spelling ("eu-west-1",
	// "swedencentral"), or the geography of an Amazon Bedrock inference
	// profile its model id names ("eu", "global"); "" on a marketplace, on
	// an upstream that declares none, and when nothing was served. Rows
	// recorded before the column existed read "".
	ServedRegion string `json:"served_region"`
	// Responses counts the responses of a realtime session (API
	// "realtime"): every response.done the upstream sent, cancelled and
	// failed ones included; 0 for every other request.
	Responses int `json:"responses"`
	// CloseCode is the WebSocket close code that ended a realtime session
	// (1000 normal, 1008 policy, 1014 upstream gone, ...; 1005 when the
	// closing side sent none), and ClosedBy who ended it: "caller",
	// "upstream" or "sluice" (an idle or duration limit, a budget, a
	// shutdown). 0 and "" for every other request.
	CloseCode int    `json:"close_code"`
	ClosedBy  string `json:"closed_by"`
}

// MaxRoutingObject bounds the routing object a row keeps, in bytes.
const MaxRoutingObject = 4096

// Preference verdicts recorded in preference_verdict.
const (
	// VerdictFirstPreferred: the first provider of the preferred order served.
	VerdictFirstPreferred = "first_preferred"
	// VerdictOtherPreferred: a later provider of the preferred order served.
	VerdictOtherPreferred = "other_preferred"
	// VerdictOutsidePreference: a provider outside the preferred order
	// served, or, without an order, one the allow or deny list excludes.
	VerdictOutsidePreference = "outside_preference"
	// VerdictUnknown: a marketplace upstream answered without naming the
	// provider that served, so the preference cannot be checked.
	VerdictUnknown = "unknown"
	// VerdictNotApplicable: there was nothing to check: no provider was
	// asked (refused, failed, a cache hit), a direct upstream (one
	// provider), or no preferred order and no allow or deny list.
	VerdictNotApplicable = "not_applicable"
)

// PreferenceVerdicts are the values of preference_verdict, in the order
// the pages list them.
var PreferenceVerdicts = []string{VerdictFirstPreferred, VerdictOtherPreferred, VerdictOutsidePreference, VerdictUnknown, VerdictNotApplicable}

// normalized returns r as stores keep it: TS in UTC truncated to the
// millisecond (now if zero), RoutingDegraded sorted and Chain and
// RoutingDegraded non-nil. It never shares slices with r.
func (r Row) normalized() Row {
	r.normalize()
	return r
}

// normalizedToRead is [Row.normalized] for a caller that only reads the
// row (a store binding its columns): its slices are r's, but for
// RoutingDegraded when it needs sorting, which sorts a copy.
func (r Row) normalizedToRead() Row {
	r.normalizeScalars()
	if r.Chain == nil {
		r.Chain = []string{}
	}
	for _, l := range []*[]string{&r.PreferencePreferred, &r.PreferenceAllowed, &r.PreferenceDenied} {
		if *l == nil {
			*l = []string{}
		}
	}
	switch {
	case r.RoutingDegraded == nil:
		r.RoutingDegraded = []string{}
	case !slices.IsSorted(r.RoutingDegraded):
		r.RoutingDegraded = slices.Sorted(slices.Values(r.RoutingDegraded))
	}
	return r
}

// normalize makes r what [Row.normalized] returns, in place.
func (r *Row) normalize() {
	r.normalizeScalars()
	r.Chain = append(make([]string, 0, len(r.Chain)), r.Chain...)
	r.RoutingDegraded = append(make([]string, 0, len(r.RoutingDegraded)), r.RoutingDegraded...)
	slices.Sort(r.RoutingDegraded)
	for _, l := range []*[]string{&r.PreferencePreferred, &r.PreferenceAllowed, &r.PreferenceDenied} {
		*l = append(make([]string, 0, len(*l)), *l...)
	}
}

// normalizeScalars does what both [Row.normalize] and
// [Row.normalizedToRead] do to the fields that are not slices: TS in UTC
// truncated to the millisecond (now if zero), the floats finite.
func (r *Row) normalizeScalars() {
	if r.TS.IsZero() {
		r.TS = time.Now()
	}
	r.TS = r.TS.UTC().Truncate(time.Millisecond)
	// NaN and infinities have no JSON form and no value in a NOT NULL
	// column: a row holding one could not be spooled, served by the
	// analytics API, or stored the same way by both backends.
	r.CostUSD, r.LatencyMS, r.TTFTMS = finite(r.CostUSD), finite(r.LatencyMS), finite(r.TTFTMS)
}

// finite returns v, or 0 for NaN and the infinities.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Store persists rows. Implementations are safe for concurrent use.
type Store interface {
	// Insert stores rows. It is idempotent by request_id: a row whose
	// request_id is already stored (or repeated within rows) is skipped.
	// Rows with a zero TS get the current time, so a retry must carry the
	// TS of the first attempt (the writer fixes it at Enqueue): ClickHouse
	// looks for stored ids within the batch's time range only. Insert
	// keeps neither rows nor anything they point to after it returns: the
	// writer reuses the slice for its next batch.
	Insert(ctx context.Context, rows []Row) error
	// Query returns one page of rows matching f, newest first
	// (ts desc, request_id desc). A malformed f.Cursor yields ErrBadCursor.
	Query(ctx context.Context, f Filter) (Page, error)
	// Traffic counts the rows matching f per combination (key, team,
	// decided model, upstream, route, request_routing), in one grouped
	// query in the database, never by reading rows one by one; ordered by
	// those fields. `sluice diff --traffic` weighs a change with it.
	Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error)
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}

// Page limits.
const (
	// DefaultLimit is the page size used when Filter.Limit is zero or negative.
	DefaultLimit = 100
	// MaxLimit caps Filter.Limit.
	MaxLimit = 1000
)

// Filter selects rows for [Store.Query]. Zero values mean "no constraint".
type Filter struct {
	// From and To bound ts: From <= ts < To. A zero time leaves that side open.
	From, To time.Time
	// Org, Team, Project, ServedProvider, SwitchReason (routing_switch_reason)
	// and FallbackReason match exactly; "" matches anything.
	Org, Team, Project, ServedProvider, SwitchReason, FallbackReason string
	// SessionID matches session_id exactly: one session's turns. Default ""
	// (any row).
	SessionID string
	// Degraded keeps only rows whose routing_degraded is non-empty.
	Degraded bool
	// Refused keeps only rows with a refused_code.
	Refused bool
	// Switched keeps only rows where a model other than the decided one
	// served the request (served_model != "" and != decided_model).
	Switched bool
	// AnyFlag combines Degraded, Refused and Switched with OR: a row is
	// kept when it has any of the flags set. Default false: with AND, a
	// row must have all of them.
	AnyFlag bool
	// PreferenceVerdict matches preference_verdict exactly (one of
	// [PreferenceVerdicts]). Default "" (every row).
	PreferenceVerdict string
	// DataPolicy keeps only rows whose data_policy names this restriction
	// (zero_retention, no_training, quantizations, max_price), or, with
	// [DataPolicyAny] or [DataPolicyNone], rows with any or with none.
	// Default "" (every row).
	DataPolicy string
	// Limit is the page size: default DefaultLimit, at most MaxLimit.
	Limit int
	// Cursor continues from a previous Page.NextCursor; "" starts at the newest row.
	Cursor string
}

// Page is one page of query results.
type Page struct {
	// Rows are newest first.
	Rows []Row
	// NextCursor fetches the next (older) page; "" when there is none.
	NextCursor string
}

// ErrBadCursor is returned (wrapped) by Query when Filter.Cursor was not
// produced by a previous Query.
var ErrBadCursor = errors.New("requestlog: invalid cursor")

// cursor is the position after the last row of a page. Paging by key rather
// than offset keeps pages stable while rows are inserted concurrently.
type cursor struct {
	TSMillis  int64  `json:"t"`
	RequestID string `json:"id"`
}

const cursorPrefix = "v1."

func encodeCursor(r Row) string {
	b, _ := json.Marshal(cursor{TSMillis: r.TS.UnixMilli(), RequestID: r.RequestID})
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: unknown version", ErrBadCursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	var c cursor
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	if c.RequestID == "" {
		return nil, fmt.Errorf("%w: missing request_id", ErrBadCursor)
	}
	return &c, nil
}

// limit returns the effective page size of f.
func (f Filter) limit() int {
	switch {
	case f.Limit <= 0:
		return DefaultLimit
	case f.Limit > MaxLimit:
		return MaxLimit
	}
	return f.Limit
}

// page trims rows (fetched with limit+1) to limit and sets the cursor.
func page(rows []Row, limit int) Page {
	if len(rows) > limit {
		rows = rows[:limit]
		return Page{Rows: rows, NextCursor: encodeCursor(rows[len(rows)-1])}
	}
	if rows == nil {
		rows = []Row{}
	}
	return Page{Rows: rows}
}

// dedupe normalizes rows and drops repeated request_ids, keeping the first.
func dedupe(rows []Row) []Row {
	seen := make(map[string]struct{}, len(rows))
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		if _, dup := seen[r.RequestID]; dup {
			continue
		}
		seen[r.RequestID] = struct{}{}
		out = append(out, r.normalized())
	}
	return out
}

// where accumulates SQL conditions with '?' placeholders; both backends share
// it and differ only in how array emptiness is tested.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// ValidBound reports whether t may be a Filter's From or To. The zero time
// means "no bound", so a parsed year-1 time would silently drop the bound;
// rows are never older than 1970, so earlier times are refused as a whole.
func ValidBound(t time.Time) bool { return t.Year() >= 1970 }

// ceilMilli is t in Unix milliseconds, rounded up.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// filterWhere builds the conditions of f. degradedCond tests that
// routing_degraded is non-empty in the backend's dialect.
// dialect is what the two backends spell differently in a filter.
type dialect struct {
	// degraded tests that routing_degraded is not empty.
	degraded string
	// listHas tests, with one LIKE argument, that the comma-separated
	// data_policy holds an entry.
	listHas string // session tests, with one argument, that session_id is it; SQLite's
	// session index is partial (rows with a session), and the planner
	// uses it only for a query that repeats the index's condition.
	session string
	// exceptional, when set, is the condition of SQLite's partial index
	// requests_exceptional, added to a filter that only such rows meet
	// (a flag, a fallback or switch reason), so that the planner may use
	// it: it takes a query term that is the index's condition itself.
	exceptional string
}

var (
	sqliteDialect = dialect{degraded: "routing_degraded != '[]'", listHas: "(',' || data_policy || ',') LIKE ?",
		session: "session_id = ? AND session_id != ''", exceptional: sqliteExceptional}
	clickhouseDialect = dialect{degraded: "length(routing_degraded) > 0", listHas: "concat(',', data_policy, ',') LIKE ?",
		session: "session_id = ?"}
)

// Values of [Filter.DataPolicy] besides a restriction's name.
const (
	// DataPolicyAny keeps rows bound by some data restriction.
	DataPolicyAny = "any"
	// DataPolicyNone keeps rows bound by none.
	DataPolicyNone = "none"
)

// DataPolicyValues are the values [ParseFilter] accepts for data_policy.
var DataPolicyValues = []string{"zero_retention", "no_training", "quantizations", "max_price", "regions", DataPolicyAny, DataPolicyNone}

func filterWhere(f Filter, c *cursor, d dialect) *where {
	w := &where{}
	// Rows are kept to the millisecond: ts >= From and ts < To hold for a
	// millisecond exactly when it is at or after From's, rounded up.
	if !f.From.IsZero() {
		w.add("ts_ms >= ?", ceilMilli(f.From))
	}
	if !f.To.IsZero() {
		w.add("ts_ms < ?", ceilMilli(f.To))
	}
	exceptional := d.exceptional != "" && (f.Degraded || f.Refused || f.Switched || f.FallbackReason != "" || f.SwitchReason != "")
	for _, eq := range []struct {
		col, val string
		indexed  bool // the column has an index of its own in SQLite
	}{
		{"org", f.Org, true}, {"team", f.Team, true}, {"project", f.Project, true},
		{"served_provider", f.ServedProvider, true}, {"routing_switch_reason", f.SwitchReason, false},
		{"fallback_reason", f.FallbackReason, false},
	} {
		if eq.val == "" {
			continue
		}
		col := eq.col
		if exceptional && eq.indexed {
			// With a flag or a reason, the partial index of the
			// exceptional rows serves the filter (SQLite tests the
			// flags in it and reads a row only when it meets them); a
			// unary + keeps the planner from the column's own index,
			// whose walk reads every row of the value in the window.
			col = "+" + col
		}
		w.add(col+" = ?", eq.val)
	}
	if f.SessionID != "" {
		w.add(d.session, f.SessionID)
	}
	var flags []string
	if f.Degraded {
		flags = append(flags, d.degraded)
	}
	if f.Refused {
		flags = append(flags, "refused_code != ''")
	}
	if f.Switched {
		flags = append(flags, "(served_model != '' AND served_model != decided_model)")
	}
	switch {
	case len(flags) > 1 && f.AnyFlag:
		w.add("(" + strings.Join(flags, " OR ") + ")")
	default:
		for _, c := range flags {
			w.add(c)
		}
	}
	if exceptional {
		w.add(d.exceptional)
	}
	if f.PreferenceVerdict != "" {
		w.add("preference_verdict = ?", f.PreferenceVerdict)
	}
	switch f.DataPolicy {
	case "":
	case DataPolicyAny:
		w.add("data_policy != ''")
	case DataPolicyNone:
		w.add("data_policy = ''")
	default:
		w.add(d.listHas, "%,"+f.DataPolicy+",%")
	}
	if c != nil {
		// The redundant "ts_ms <= ?" lets both backends range-scan the ts index.
		w.add("ts_ms <= ? AND (ts_ms < ? OR request_id < ?)", c.TSMillis, c.TSMillis, c.RequestID)
	}
	return w
}
