package ui

import (
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// story tells a row in a few plain sentences: what was asked, which
// provider policy applied (and, from the re-run e when sameRevision, which
// rung of the ladder set it), and who served it or why it was refused.
func story(r requestlog.Row, e *snapshot.Explanation, sameRevision bool) []string {
	var out []string
	// What was asked.
	asked := "Key " + orNone(r.KeyID) + " (team " + orNone(r.Team) + ", project " + orNone(r.Project) + ", org " + orNone(r.Org) + ")"
	api := r.API
	if api == "" {
		api = "chat"
	}
	switch {
	case r.DecidedModel == "":
		asked += " sent a request on the " + api + " API that was refused before its model was read"
	case r.Route != "":
		asked += " asked route " + r.Route + " on the " + api + " API, which decided " + r.DecidedModel
	default:
		asked += " asked for " + r.DecidedModel + " on the " + api + " API"
	}
	var with []string
	if r.Stream {
		with = append(with, "streamed")
	}
	if r.SessionID != "" {
		with = append(with, "in session "+r.SessionID)
	}
	if r.RequestRouting {
		with = append(with, "with its own routing object")
	}
	if len(with) > 0 {
		asked += ", " + sentence(with)
	}
	out = append(out, asked+".")

	// Which policy applied.
	if p := preferenceWords(r); p != "" {
		pol := "Its provider preference: " + p + "."
		if e != nil && sameRevision {
			var rungs []string
			for _, f := range []string{"providers.rank_by", "providers.preferred", "providers.allowed", "providers.denied"} {
				if rung := e.Provenance[f]; rung != "" {
					where := rung
					if file := e.Sources[f]; file != "" {
						where += " (" + file + ")"
					}
					rungs = append(rungs, strings.TrimPrefix(f, "providers.")+" from "+where)
				}
			}
			if len(rungs) > 0 {
				pol += " Set by the ladder: " + sentence(rungs) + "."
			}
		}
		out = append(out, pol)
	}
	if r.DataPolicy != "" {
		out = append(out, "Data restrictions bound it: "+strings.ReplaceAll(r.DataPolicy, ",", ", ")+".")
	}

	// Who served it, or why not.
	switch {
	case r.RefusedCode != "":
		s := fmt.Sprintf("The gateway refused it (status %d, %s)", r.Status, r.RefusedCode)
		if r.RefusedMessage != "" {
			s += ": " + r.RefusedMessage
		}
		out = append(out, strings.TrimSuffix(s, ".")+".")
	case r.CacheHit:
		out = append(out, "It was answered from the response cache with "+orNone(r.ServedModel)+"'s earlier answer; no provider was asked.")
	case r.ServedModel != "":
		s := "Upstream " + r.Upstream + " answered with " + r.ServedModel
		if r.ServedProvider != "" {
			s += " via " + r.ServedProvider
		} else {
			s += " (it did not say which provider served)"
		}
		s += fmt.Sprintf(" (status %d)", r.Status)
		if v := verdictWords(r.PreferenceVerdict); v != "" {
			s += ": " + v
		}
		out = append(out, s+".")
	default:
		out = append(out, fmt.Sprintf("No answer was served (status %d) after %d attempt(s) on upstream %s.", r.Status, r.Attempts, orNone(r.Upstream)))
	}
	if r.RoutingSwitchReason != "" {
		out = append(out, "The served model differs from the decided one ("+r.RoutingSwitchReason+"): "+helpText("routing_switch_reason", r.RoutingSwitchReason))
	}
	if r.UpstreamAttempts != "" {
		out = append(out, "The upstream reported its attempts (model@provider status): "+r.UpstreamAttempts+".")
	} else if r.RoutingSwitchReason == "chain" {
		out = append(out, "The upstream reported no attempts, so what made it leave the decided model is not known.")
	}
	if r.FallbackReason != "" {
		out = append(out, "The gateway failed over to another target after: "+r.FallbackReason+".")
	}
	if len(r.RoutingDegraded) > 0 {
		out = append(out, "Lost on the way ("+strings.Join(r.RoutingDegraded, ", ")+"): "+helpText("routing_degraded", r.RoutingDegraded[0]))
	}
	return out
}

// preferenceWords says a row's provider preference as prose; "" when none.
func preferenceWords(r requestlog.Row) string {
	var parts []string
	if r.PreferenceRankBy != "" {
		parts = append(parts, "ranked by "+r.PreferenceRankBy)
	}
	if len(r.PreferencePreferred) > 0 {
		parts = append(parts, "preferred "+strings.Join(r.PreferencePreferred, " then "))
	}
	if len(r.PreferenceAllowed) > 0 {
		parts = append(parts, "only "+sentence(r.PreferenceAllowed)+" allowed")
	}
	if len(r.PreferenceDenied) > 0 {
		parts = append(parts, sentence(r.PreferenceDenied)+" denied")
	}
	return strings.Join(parts, "; ")
}

// verdictWords says a preference verdict in words.
func verdictWords(v string) string {
	switch v {
	case requestlog.VerdictFirstPreferred:
		return "the first preferred provider, as asked"
	case requestlog.VerdictOtherPreferred:
		return "a later provider of the preferred order, not the first"
	case requestlog.VerdictOutsidePreference:
		return "a provider outside the preference"
	case requestlog.VerdictUnknown:
		return "whether the preference was honoured cannot be told"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
