package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDebugListen: [server] debug_listen serves the runtime profiles on its
// own listener, and the API's listener never does.
func TestDebugListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	debugAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	sv := serveSubprocess(t, slowSim(t, 0), fmt.Sprintf("debug_listen = %q", debugAddr))

	resp, err := http.Get("http://" + debugAddr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), "serve")

	resp, err = http.Get("http://" + debugAddr + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(string(b), "heap profile:"), string(b[:min(len(b), 80)]))

	resp, err = http.Get("http://" + sv.addr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusOK, resp.StatusCode, "the API listener must not serve profiles")
}
