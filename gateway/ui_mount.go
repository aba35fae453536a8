package gateway

import (
	"net/http"

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
	})
}
