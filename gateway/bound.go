package gateway

import (
	"strconv"
	"unicode/utf8"

	"github.com/sluicegw/sluice/snapshot"
)

// What a caller writes is bounded before it is recorded: a model name (or
// a fallback) can be as long as the body, and anything that becomes a
// metric label is kept until the process ends.

// OtherModel is the metric label of a model that is no route alias,
// catalog slug or id the catalog knows a model by: the row, the log line
// and the span keep its name (capped), the metrics do not, so that callers
// cannot grow /metrics and the label set without bound.
const OtherModel = "other"

// MaxRecorded bounds a caller-supplied name in the row, the log line and
// the span, in bytes before the marker.
const MaxRecorded = 256

// recorded returns s when it fits MaxRecorded, else its first MaxRecorded
// bytes (cut at a character's start) and a marker with its whole length:
// "…(1048576 bytes)".
func recorded(s string) string {
	if len(s) <= MaxRecorded {
		return s
	}
	cut := MaxRecorded
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// recordedList is recorded for each name of a list; the list itself when
// every name fits (no copy).
func recordedList(l []string) []string {
	for i, s := range l {
		if len(s) > MaxRecorded {
			out := append([]string(nil), l...)
			for j := i; j < len(out); j++ {
				out[j] = recorded(out[j])
			}
			return out
		}
	}
	return l
}

// modelLabel is a model's metric label: the name of a route alias or a
// catalog slug as it is, the catalog slug of an id the catalog knows a
// model by (an alias, an upstream's or a provider's own id), else
// OtherModel. The label set is thus bounded by the configuration and the
// catalog.
func modelLabel(snap *snapshot.Snapshot, model string) string {
	if model == "" || snap == nil {
		return model
	}
	if snap.Config.Route(model) != nil {
		return model
	}
	cat := snap.Catalog
	if cat == nil {
		return OtherModel
	}
	if m, ok := cat.Model(model); ok {
		return m.Slug
	}
	if slug, ok := cat.ReportedModel("", "", model); ok {
		return slug
	}
	for _, u := range snap.Upstreams {
		if slug, ok := cat.ReportedModel(u.Config.Connector, u.Check.Capabilities.DirectProvider, model); ok {
			return slug
		}
	}
	return OtherModel
}
