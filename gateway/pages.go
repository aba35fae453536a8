package gateway

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// PagesEnv is what the gateway lends the handler it serves under /ui/
// ([Options.Pages]): the pages read what the gateway writes and log in
// against the configuration it serves, without importing the gateway.
type PagesEnv struct {
	// Store is the request-log store the gateway writes.
	Store requestlog.Store
	// AdminToken is [Options.AdminToken].
	AdminToken string
	// Snapshot returns the configuration serving now (it changes on reload).
	Snapshot func() *snapshot.Snapshot
	// Logger is the gateway's logger.
	Logger *slog.Logger
	// OverTLS reports whether a request came over TLS, believing
	// X-Forwarded-Proto only from [server] trusted_proxies.
	OverTLS func(*http.Request) bool
}

// pagesHandler is the handler mounted at /ui: Options.Pages's, or a 404 for
// every path when there is none.
func (s *Server) pagesHandler() http.Handler {
	if s.opts.Pages == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, notFound(r)) })
	}
	return s.opts.Pages(PagesEnv{
		Store:      s.store,
		AdminToken: s.opts.AdminToken,
		Snapshot:   s.snap.Load,
		Logger:     s.log,
		OverTLS:    s.overTLS,
	})
}

// overTLS reports whether a request came over TLS: on a TLS connection, or
// through a proxy listed in [server] trusted_proxies that says so in
// X-Forwarded-Proto. The header of anyone else is ignored: a client could
// write it.
func (s *Server) overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !strings.EqualFold(strings.TrimSpace(lastValue(r.Header.Get("X-Forwarded-Proto"))), "https") {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	return s.trustedProxy(ap.Addr())
}

// trustedProxy reports whether addr is in [server] trusted_proxies.
func (s *Server) trustedProxy(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range s.snap.Load().Config.Server.TrustedProxies {
		if pfx, err := profiles.ParseProxy(p); err == nil && pfx.Contains(addr) {
			return true
		}
	}
	return false
}

// clientAddress is the address a request came from, for the audit trail:
// the connection's peer; or, when the peer is a trusted proxy ([server]
// trusted_proxies), the nearest hop of X-Forwarded-For that is not one
// (read from its end, which the proxies wrote; what lies before the first
// untrusted hop may be the client's own invention and is not believed).
// A hop that is not an address ends the walk at the last trusted one.
func (s *Server) clientAddress(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return clientAddr(r)
	}
	client := ap.Addr().Unmap()
	if !s.trustedProxy(client) {
		return client.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if h == "" {
			continue
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			break
		}
		client = a.Unmap()
		if !s.trustedProxy(client) {
			break
		}
	}
	return client.String()
}

// lastValue is the last of a comma-separated header value: the one the
// trusted proxy (the hop nearest the gateway) wrote or appended. A value
// before it may come from the client.
func lastValue(v string) string {
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		return v[i+1:]
	}
	return v
}
