package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/gateway/access"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/requestlog"
)

// Invocations is the body of GET /api/v1/analytics/invocations.
type Invocations struct {
	Data       []requestlog.Row `json:"data"`
	NextCursor string           `json:"next_cursor"`
}

// analyticsCaller authorises a reader of the request log: the admin token
// sees every row; a key with the analyst role sees its own team's rows only.
// It returns the team to restrict to ("" for all).
func (s *Server) analyticsCaller(r *http.Request) (team string, e *apierr.Error) {
	if access.Admin(r, s.opts.AdminToken) {
		return "", nil
	}
	k := access.Key(s.snap.Load().Config, access.BearerToken(r))
	if k == nil {
		s.metrics.AuthFailures.Inc()
		return "", apierr.New(apierr.CodeUnauthorized, "send the admin token or an analyst key as Authorization: Bearer <token>")
	}
	if !k.HasRole(access.RoleAnalyst) {
		return "", apierr.New(apierr.CodePermissionDenied, "this key has no analyst role")
	}
	return k.Team, nil
}

// ParseFilter reads the analytics filters from a query string: from, to
// (RFC 3339), org, team, project, served_provider, switch_reason,
// fallback_reason, degraded, refused, switched (true/false), limit, cursor.
func ParseFilter(q map[string][]string) (requestlog.Filter, *apierr.Error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var f requestlog.Filter
	var bad []apierr.Detail
	for _, tf := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := get(tf.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil || !requestlog.ValidBound(t) {
				bad = append(bad, apierr.Detail{Pointer: tf.name, Code: "invalid_time", Message: "must be an RFC 3339 time from 1970 on, such as 2026-11-30T00:00:00Z"})
			}
			*tf.dst = t
		}
	}
	f.Org, f.Team, f.Project = get("org"), get("team"), get("project")
	f.ServedProvider, f.SwitchReason, f.FallbackReason = get("served_provider"), get("switch_reason"), get("fallback_reason")
	for _, bf := range []struct {
		name string
		dst  *bool
	}{{"degraded", &f.Degraded}, {"refused", &f.Refused}, {"switched", &f.Switched}} {
		if v := get(bf.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad = append(bad, apierr.Detail{Pointer: bf.name, Code: "invalid_bool", Message: "must be true or false"})
			}
			*bf.dst = b
		}
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > requestlog.MaxLimit {
			bad = append(bad, apierr.Detail{Pointer: "limit", Code: "invalid_limit", Message: "must be an integer from 1 to 1000"})
		}
		f.Limit = n
	}
	f.Cursor = get("cursor")
	if len(bad) > 0 {
		return f, &apierr.Error{Code: apierr.CodeInvalidRequest, Message: "invalid query: " + bad[0].Pointer + " " + bad[0].Message, Param: bad[0].Pointer, Details: bad}
	}
	return f, nil
}

// invocations serves the request-log rows for compliance review.
func (s *Server) invocations(w http.ResponseWriter, r *http.Request) {
	team, aerr := s.analyticsCaller(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	f, ferr := ParseFilter(r.URL.Query())
	if ferr != nil {
		writeError(w, ferr)
		return
	}
	if team != "" {
		if f.Team != "" && f.Team != team {
			writeError(w, apierr.New(apierr.CodePermissionDenied, "an analyst key reads only its own team's rows"))
			return
		}
		f.Team = team
	}
	page, err := s.store.Query(r.Context(), f)
	if err != nil {
		if errors.Is(err, requestlog.ErrOff) {
			writeError(w, apierr.New(apierr.CodeNotFound, `the request log is off ([store] kind = "off"): no rows are recorded`))
			return
		}
		if errors.Is(err, requestlog.ErrBadCursor) {
			writeError(w, &apierr.Error{Code: apierr.CodeInvalidRequest, Param: "cursor", Message: "invalid cursor; pass next_cursor from a previous page"})
			return
		}
		s.log.Error("request-log query failed", "err", err)
		writeError(w, apierr.New(apierr.CodeServiceUnavailable, "the request log cannot be read right now"))
		return
	}
	if page.Rows == nil {
		page.Rows = []requestlog.Row{}
	}
	writeJSON(w, http.StatusOK, Invocations{Data: page.Rows, NextCursor: page.NextCursor})
}
