package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/profiles/access"
)

// MetricsHandler serves the Prometheus metrics with no authentication of
// its own: the binary serves it on [server] metrics_listen, a listener of
// its own (loopback by default), never on the API's.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
}

// publicMetrics serves /metrics on the API's listener as [server]
// public_metrics says: "off" (the default) answers 404 as for any unknown
// path; "admin" wants the admin token; "token" the scrape token
// ([Options.MetricsToken]) or the admin token. The metrics carry every
// team's spend and tokens, so nobody else reads them there.
func (s *Server) publicMetrics(metrics http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		mode := s.snap.Load().Config.Server.PublicMetrics
		if mode != "admin" && mode != "token" {
			writeError(w, notFound(r))
			return
		}
		tok := access.BearerToken(r)
		ok := access.SameSecret(tok, s.opts.AdminToken) || (mode == "token" && access.SameSecret(tok, s.opts.MetricsToken))
		if !ok {
			s.metrics.AuthFailures.Inc()
			writeError(w, apierr.New(apierr.CodeUnauthorized, "/metrics here needs Authorization: Bearer <token> ([server] public_metrics = \""+mode+"\")"))
			return
		}
		metrics.ServeHTTP(w, r)
	}
}
