package gateway

import (
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/store/requestlog"
)

// preferenceVerdict says whether the provider that served honoured the
// provider preference ps the request was sent with (docs/request-log.md,
// "Was the preference honoured?"). served is the served provider's
// catalog slug ("" when the upstream did not name it); direct is true on
// an upstream that serves one provider, where there is nothing to choose.
// The caller handles requests no provider answered (not applicable).
func preferenceVerdict(ps compiler.Providers, served string, direct bool) string {
	switch {
	case direct, len(ps.Preferred) == 0 && len(ps.Allowed) == 0 && len(ps.Denied) == 0:
		// A ranking alone is not judged: which endpoint was cheapest or
		// fastest at the time is not on the row.
		return requestlog.VerdictNotApplicable
	case served == "":
		return requestlog.VerdictUnknown
	}
	served = strings.ToLower(served)
	for i, p := range ps.Preferred {
		if sameProvider(p, served) {
			if i == 0 {
				return requestlog.VerdictFirstPreferred
			}
			return requestlog.VerdictOtherPreferred
		}
	}
	if len(ps.Preferred) > 0 || !listsPermit(ps, served) {
		return requestlog.VerdictOutsidePreference
	}
	return requestlog.VerdictNotApplicable
}

// sameProvider reports whether a preference entry ("provider" or
// "provider/tag") names the served provider: the row records the provider,
// not the endpoint, so an entry for one of its endpoints counts.
func sameProvider(entry, served string) bool {
	base, _, _ := strings.Cut(entry, "/")
	return entry == served || base == served
}

// listsPermit reports whether the allow and deny lists let served serve:
// an allow list naming it (or one of its endpoints), and no deny entry
// naming the whole provider (an endpoint's deny cannot be checked against
// a provider).
func listsPermit(ps compiler.Providers, served string) bool {
	if len(ps.Allowed) > 0 {
		ok := false
		for _, a := range ps.Allowed {
			if sameProvider(a, served) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, d := range ps.Denied {
		if d == served {
			return false
		}
	}
	return true
}

// maxAttemptsKept bounds the upstream attempts a row lists.
const maxAttemptsKept = 8

// upstreamAttempts is the row's upstream_attempts: what the upstream
// reported of its own attempts ("model@provider status", in order), when
// more than the serving one was made; "" otherwise. Upstreams report a
// status per attempt, not the failure's message.
func upstreamAttempts(as []connectors.Attempt) string {
	if len(as) < 2 {
		return ""
	}
	var b strings.Builder
	for i, a := range as {
		if i == maxAttemptsKept {
			b.WriteString(", … " + strconv.Itoa(len(as)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Model)
		b.WriteByte('@')
		b.WriteString(a.Provider)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(a.Status))
	}
	return b.String()
}

// setPreference records the provider preference ps on r (its slices are
// shared, never changed).
func setPreference(r *requestlog.Row, ps compiler.Providers) {
	r.PreferenceRankBy, r.PreferencePreferred, r.PreferenceAllowed, r.PreferenceDenied = ps.RankBy, ps.Preferred, ps.Allowed, ps.Denied
}
