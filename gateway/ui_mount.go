package gateway

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicegw/sluice/profiles"

	"github.com/sluicegw/sluice/gateway/ui"
	"github.com/sluicegw/sluice/snapshot"
)

// uiHandler serves the compliance pages under /ui/ (package ui): the admin
// token and analyst keys of the configuration currently serving log in.
func (s *Server) uiHandler() http.Handler {
	return ui.New(ui.Options{
		Store:      s.store,
		AdminToken: s.opts.AdminToken,
		Snapshot:   func() *snapshot.Snapshot { return s.snap.Load() },
		Logger:     s.log,
		WhatIf:     s.opts.WhatIf,
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
	addr := ap.Addr().Unmap()
	for _, p := range s.snap.Load().Config.Server.TrustedProxies {
		if pfx, err := profiles.ParseProxy(p); err == nil && pfx.Contains(addr) {
			return true
		}
	}
	return false
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
