package requestlog

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Formats accepted by WriteRows.
const (
	FormatTable = "table"
	FormatCSV   = "csv"
	FormatJSON  = "json"
)

// ErrUnknownFormat is returned (wrapped) by WriteRows for a format other
// than FormatTable, FormatCSV or FormatJSON.
var ErrUnknownFormat = errors.New("requestlog: unknown format")

// WriteRows writes rows to w as "table" (aligned columns for reading:
// ts, request_id, team, decided→served model, served_provider, switch reason,
// degraded, refused_code, fallback_reason, status), "csv" (every column, a
// header row of column names, arrays as JSON) or "json" (one JSON array).
// It is what `sluice rows` prints.
func WriteRows(w io.Writer, rows []Row, format string) error {
	switch format {
	case FormatTable:
		return writeTable(w, rows)
	case FormatCSV:
		return writeCSV(w, rows)
	case FormatJSON:
		out := make([]Row, len(rows))
		for i, r := range rows {
			out[i] = r.normalized()
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("requestlog: write json: %w", err)
		}
		return nil
	}
	return fmt.Errorf("%w %q (want %s, %s or %s)", ErrUnknownFormat, format, FormatTable, FormatCSV, FormatJSON)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TS\tREQUEST_ID\tTEAM\tMODEL\tPROVIDER\tREGION\tSWITCH\tDEGRADED\tREFUSED\tFALLBACK\tCACHE\tDATA\tSTATUS")
	for _, r := range rows {
		r = r.normalized()
		model := r.DecidedModel
		if r.ServedModel != "" && r.ServedModel != r.DecidedModel {
			model += "→" + r.ServedModel
		}
		cache := "-"
		if r.CacheHit {
			cache = "hit"
		}
		// DATA is how each data restriction was held (or, refused, which
		// bound the request).
		data := r.DataPolicyVia
		if data == "" {
			data = r.DataPolicy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
			r.TS.Format("2006-01-02T15:04:05.000Z"), sanitize(r.RequestID), orDash(sanitize(r.Team)),
			orDash(sanitize(model)), orDash(sanitize(r.ServedProvider)), orDash(sanitize(r.ServedRegion)), orDash(sanitize(r.RoutingSwitchReason)),
			orDash(sanitize(strings.Join(r.RoutingDegraded, ","))), orDash(sanitize(r.RefusedCode)),
			orDash(sanitize(r.FallbackReason)), cache, orDash(data), r.Status)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("requestlog: write table: %w", err)
	}
	return nil
}

// sanitize keeps tabs and newlines in values from breaking the table.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// csvHeader is every column, in Row order.
var csvHeader = []string{
	"ts", "request_id", "org", "team", "project", "key_id", "session_id", "route",
	"upstream", "decided_model", "chain", "served_model", "served_provider",
	"routing_switch_reason", "routing_degraded", "refused_code", "fallback_reason",
	"attempts", "status", "stream", "cache_hit", "representation_break",
	"cache_discount_applied", "prompt_tokens", "completion_tokens", "cost_usd",
	"cost_source", "latency_ms", "ttft_ms", "request_routing", "config_revision", "api",
	"session_key", "session_affinity", "cached_tokens", "reasoning_tokens",
	"data_policy", "data_policy_via",
	"preference_rank_by", "preference_preferred", "preference_allowed", "preference_denied",
	"preference_verdict", "refused_message", "upstream_attempts", "routing_object",
	"served_region",
	"responses", "close_code", "closed_by",
}

// csvText guards a text cell against formula injection: a spreadsheet
// opening the export runs a cell that starts with = + - or @ (or a tab or
// carriage return before one) as a formula, and callers choose some of these
// values (the session id, the model they ask for). Such a cell gets a
// leading apostrophe, which spreadsheets show as text; every other cell is
// exact. The JSON format is always exact.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func writeCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range rows {
		r = r.normalized()
		chain, _ := json.Marshal(r.Chain)
		degraded, _ := json.Marshal(r.RoutingDegraded)
		preferred, _ := json.Marshal(r.PreferencePreferred)
		allowed, _ := json.Marshal(r.PreferenceAllowed)
		denied, _ := json.Marshal(r.PreferenceDenied)
		c := csvText
		_ = cw.Write([]string{
			r.TS.Format(time.RFC3339Nano), c(r.RequestID), c(r.Org), c(r.Team), c(r.Project), c(r.KeyID), c(r.SessionID), c(r.Route),
			c(r.Upstream), c(r.DecidedModel), string(chain), c(r.ServedModel), c(r.ServedProvider),
			c(r.RoutingSwitchReason), string(degraded), c(r.RefusedCode), c(r.FallbackReason),
			strconv.Itoa(r.Attempts), strconv.Itoa(r.Status), strconv.FormatBool(r.Stream),
			strconv.FormatBool(r.CacheHit), strconv.FormatBool(r.RepresentationBreak),
			strconv.FormatBool(r.CacheDiscountApplied), strconv.FormatInt(r.PromptTokens, 10),
			strconv.FormatInt(r.CompletionTokens, 10), f(r.CostUSD), r.CostSource, f(r.LatencyMS), f(r.TTFTMS),
			strconv.FormatBool(r.RequestRouting), c(r.ConfigRevision), c(r.API),
			c(r.SessionKey), c(r.SessionAffinity),
			strconv.FormatInt(r.CachedTokens, 10), strconv.FormatInt(r.ReasoningTokens, 10),
			r.DataPolicy, r.DataPolicyVia,
			r.PreferenceRankBy, string(preferred), string(allowed), string(denied),
			r.PreferenceVerdict, c(r.RefusedMessage), c(r.UpstreamAttempts), c(r.RoutingObject),
			c(r.ServedRegion),
			strconv.Itoa(r.Responses), strconv.Itoa(r.CloseCode), r.ClosedBy,
		})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("requestlog: write csv: %w", err)
	}
	return nil
}
