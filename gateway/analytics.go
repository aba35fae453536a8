package gateway

import (
	"errors"
	"net/http"

	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles/access"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Invocations is the body of GET /api/v1/analytics/invocations.
type Invocations struct {
	Data       []requestlog.Row `json:"data"`
	NextCursor string           `json:"next_cursor"`
}

// analyticsCaller authorises a reader of the request log: the admin token
// sees every row; a key with the analyst role sees its own team's rows only.
// A team is named within its org (two orgs may both have a team "ml"), so
// the scope is the pair; it is nil for the admin (every row).
func (s *Server) analyticsCaller(r *http.Request) (scope *teamScope, e *apierr.Error) {
	if access.Admin(r, s.opts.AdminToken) {
		return nil, nil
	}
	k := access.Key(s.snap.Load().Config, access.BearerToken(r))
	if k == nil {
		s.metrics.AuthFailures.Inc()
		return nil, apierr.New(apierr.CodeUnauthorized, "send the admin token or an analyst key as Authorization: Bearer <token>")
	}
	if !k.HasRole(access.RoleAnalyst) {
		return nil, apierr.New(apierr.CodePermissionDenied, "this key has no analyst role")
	}
	return &teamScope{org: k.Org, team: k.Team}, nil
}

// teamScope is an analyst's view of the request log: one team of one org.
type teamScope struct{ org, team string }

// apply restricts the filter to the scope; false when the filter asks for
// another org or team.
func (sc *teamScope) apply(f *requestlog.Filter) bool {
	if sc == nil {
		return true
	}
	if (f.Org != "" && f.Org != sc.org) || (f.Team != "" && f.Team != sc.team) {
		return false
	}
	f.Org, f.Team = sc.org, sc.team
	return true
}

// filterError is the analytics API's answer to invalid filters: every bad
// parameter in details, the first named in the message.
func filterError(problems []requestlog.FilterProblem) *apierr.Error {
	details := make([]apierr.Detail, len(problems))
	for i, p := range problems {
		details[i] = apierr.Detail{Pointer: p.Param, Code: p.Code, Message: p.Message}
	}
	return &apierr.Error{Code: apierr.CodeInvalidRequest, Message: "invalid query: " + problems[0].Param + " " + problems[0].Message,
		Param: problems[0].Param, Details: details}
}

// invocations serves the request-log rows for compliance review.
func (s *Server) invocations(w http.ResponseWriter, r *http.Request) {
	scope, aerr := s.analyticsCaller(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	f, problems := requestlog.ParseFilter(r.URL.Query(), requestlog.ParseOptions{})
	if len(problems) > 0 {
		writeError(w, filterError(problems))
		return
	}
	if !scope.apply(&f) {
		writeError(w, apierr.New(apierr.CodePermissionDenied, "an analyst key reads only its own team's rows (its org's team of that name)"))
		return
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
