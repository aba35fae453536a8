package connectors

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
)

// vertexGemini speaks to Vertex AI's Gemini models: Google's generateContent
// API (streamGenerateContent?alt=sse for a stream) of the project's google
// publisher models. The vertex connector hands a request for a Gemini model
// to it ([vertex.dialect]); it is built once with the upstream. It speaks
// none of the inbound APIs: a chat request is translated
// (translate_chat_gemini.go), a Messages or Responses request goes through
// chat first (inbound.go). Credentials (the bearer token) and capabilities
// stay the vertex connector's.
type vertexGemini struct {
	// models is the path of the project's Google publisher models,
	// "/v1/projects/{project}/locations/{region}/publishers/google/models/".
	models string
	now    func() time.Time
	// caps are the upstream's capabilities (the vertex connector's).
	caps compiler.Capabilities
}

var _ Connector = (*vertexGemini)(nil)

// newVertexGemini is the Gemini dialect of a vertex connector whose
// Anthropic models are under anthropicModels.
func newVertexGemini(anthropicModels string, caps compiler.Capabilities) *vertexGemini {
	return &vertexGemini{
		models: strings.Replace(anthropicModels, "/publishers/anthropic/models/", "/publishers/google/models/", 1),
		now:    time.Now, caps: caps,
	}
}

// dialect implements [dialects]: a Gemini model (its native id starts with
// "gemini") is spoken to in generateContent; every other model (Claude)
// by the vertex connector itself.
func (v *vertex) dialect(nativeModel string) Connector {
	if v.gemini != nil && strings.HasPrefix(nativeModel, "gemini") {
		return v.gemini
	}
	return nil
}

// Kind implements [Connector.Kind]: the upstream's kind.
func (*vertexGemini) Kind() string { return "vertex" }

// Capabilities implements [Connector.Capabilities]: the upstream's.
func (g *vertexGemini) Capabilities() compiler.Capabilities { return g.caps }

// Authorize implements [Connector.Authorize]: nothing; the vertex
// connector signs the request.
func (*vertexGemini) Authorize(http.Header, string) {}

// foreignAPI implements foreignAPI: requests are translated into
// generateContent from chat.
func (*vertexGemini) foreignAPI() string { return "generateContent" }

// path is the model's generateContent or streamGenerateContent endpoint;
// a stream asks for server-sent events (alt=sse), not a JSON array.
func (g *vertexGemini) path(model string, stream bool) string {
	if stream {
		return g.models + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
	}
	return g.models + url.PathEscape(model) + ":generateContent"
}
