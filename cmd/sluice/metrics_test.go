package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address nothing listens on (for a listener
// the child process opens).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func getStatus(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsListen: /metrics is served on [server] metrics_listen, and the
// API's listener answers 404 for it by default (per-team spend is not
// public); the real binary, its real listeners.
func TestMetricsListen(t *testing.T) {
	maddr := freeAddr(t)
	sv := serveSubprocess(t, slowSim(t, 0), fmt.Sprintf("metrics_listen = %q", maddr))

	code, body := getStatus(t, "http://"+maddr+"/metrics", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "sluice_build_info")

	code, body = getStatus(t, "http://"+sv.addr+"/metrics", "")
	require.Equal(t, http.StatusNotFound, code, body)
	require.NotContains(t, body, "sluice_build_info")
}

// TestAmbiguousFramingRefused: a request with both Content-Length and
// Transfer-Encoding gets 400 ambiguous_framing and its connection is
// closed (net/http alone would drop the Content-Length and keep the
// connection alive for whatever the two framings disagree about). A plain
// chunked request on the same server is served.
func TestAmbiguousFramingRefused(t *testing.T) {
	sv := serveSubprocess(t, slowSim(t, 0))
	cases := []struct {
		name     string
		headers  string
		body     string
		want     int
		closed   bool
		wantCode string
	}{
		{name: "both", headers: "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", body: "0\r\n\r\n", want: 400, closed: true, wantCode: "ambiguous_framing"},
		{name: "both, other order and case", headers: "transfer-encoding: chunked\r\ncontent-length: 5\r\n", body: "0\r\n\r\n", want: 400, closed: true, wantCode: "ambiguous_framing"},
		{name: "chunked only", headers: "Transfer-Encoding: chunked\r\n", body: "2\r\n{}\r\n0\r\n\r\n", want: 401},
		{name: "length only", headers: "Content-Length: 2\r\n", body: "{}", want: 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", sv.addr)
			require.NoError(t, err)
			defer conn.Close()
			// A first, well-framed request on the connection: the check
			// follows framing across requests.
			_, err = fmt.Fprint(conn, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")
			require.NoError(t, err)
			rd := bufio.NewReader(conn)
			resp, err := http.ReadResponse(rd, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n%s", c.headers, c.body)
			require.NoError(t, err)
			resp, err = http.ReadResponse(rd, nil)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, c.want, resp.StatusCode, string(b))
			if c.wantCode != "" {
				require.Contains(t, string(b), `"code":"`+c.wantCode+`"`)
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
			_, err = fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if err == nil {
				_, err = http.ReadResponse(rd, nil)
			}
			if c.closed {
				require.Error(t, err, "the connection must be closed")
			} else {
				require.NoError(t, err, "a well-framed request keeps its connection")
			}
		})
	}
}
