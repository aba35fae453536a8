package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeaderSizeLimit: the API's server refuses oversized headers with 431
// before any handler runs.
func TestHeaderSizeLimit(t *testing.T) {
	called := false
	hs := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }), context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/healthz", nil)
	req.Header.Set("X-Padding", strings.Repeat("a", maxHeaderBytes+8192))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	require.False(t, called)
	req.Header.Set("X-Padding", "small")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.True(t, called)
}
