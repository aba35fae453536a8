package gateway

import "net/http"

// uiHandler serves the compliance pages under /ui/. (Being built: until then
// /ui/ answers 404 like any unknown path.)
func (s *Server) uiHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, notFound(r)) })
}
