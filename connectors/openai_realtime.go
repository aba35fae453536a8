package connectors

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/sluicegw/sluice/compiler"
)

// The openai connector's Realtime API: OpenAI's own GET /v1/realtime, a
// WebSocket session the caller's frames pass through unchanged. Only the
// model in the URL is written by sluice (the native model id); the events
// are read, never rewritten, by the gateway's relay.

// realtimeNative is a connector whose upstream speaks the Realtime API over
// a WebSocket. A connector declares it by implementing it; one that does
// not (the marketplaces today) is never dialled by a realtime session, and
// a route's target on it is skipped with api_unsupported.
type realtimeNative interface {
	// realtimeCapabilities declares what the upstream's realtime endpoint
	// can express of sluice's routing knobs.
	realtimeCapabilities() compiler.Capabilities
	// translateRealtime builds the session's native request: its path and
	// query relative to the base URL, and the connector's own headers.
	translateRealtime(plan *compiler.Plan, out *compiler.Outcome) (*Native, error)
}

var _ realtimeNative = (*openAI)(nil)

// realtimeCapabilities implements [realtimeNative]: a direct provider.
func (c *openAI) realtimeCapabilities() compiler.Capabilities { return c.Capabilities() }

// translateRealtime implements [realtimeNative]: /realtime?model=<id>, as
// OpenAI's Realtime API reference documents the WebSocket URL.
func (*openAI) translateRealtime(_ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return &Native{Path: "/realtime?model=" + url.QueryEscape(out.NativeModel), Header: noHeaders}, nil
}

// SpeaksRealtime reports whether a connector's upstream speaks the Realtime
// API over a WebSocket: its connector declares so (OpenAI's and Azure
// OpenAI's do; the marketplaces document no realtime endpoint).
func SpeaksRealtime(c Connector) bool {
	_, ok := c.(realtimeNative)
	return ok
}

// RealtimeURL is the WebSocket URL of a realtime session: the upstream's
// base URL with its scheme as a WebSocket's (http → ws, https → wss) and
// the native request's path appended.
func RealtimeURL(base string, n *Native) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + n.Path)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("base URL %q: scheme %q has no WebSocket form", base, u.Scheme)
	}
	return u.String(), nil
}
