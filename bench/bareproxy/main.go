// Command bareproxy is the floor of the gateway comparison: a bare
// net/http/httputil.ReverseProxy with a transport tuned like the gateway's
// (keep-alive pool sized for high concurrency, no transparent compression),
// flushing streamed bodies as they arrive. It does no policy work at all, so
// what it costs over a direct call is the cost of the extra hop alone.
//
//	go run ./bench/bareproxy -addr 127.0.0.1:0 -target http://127.0.0.1:9000 -addr-file /tmp/bp.addr
//
// Both the listen address and the target must be on loopback.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	target := flag.String("target", "", "upstream base URL (loopback only), e.g. http://127.0.0.1:9000")
	addrFile := flag.String("addr-file", "", "write the bound address to this file once listening")
	flag.Parse()
	if err := run(*addr, *target, *addrFile); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxBody bounds a buffered request body, like the gateway's max_body_bytes.
const maxBody = 10 << 20

// bufferBody reads the request body whole before proxying, as any gateway
// must to look at the request. Without it the transport would still be
// reading the inbound body (to see its EOF) while a streamed answer's headers
// are flushed, and Go's HTTP/1 server may then refuse that read, which kills
// the upstream connection mid-stream (a few percent of streams at c=1).
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}

func run(addr, target, addrFile string) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || !loopback(u.Hostname()) {
		return fmt.Errorf("-target %q: want an http URL on loopback", target)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !loopback(host) {
		return fmt.Errorf("-addr %q: loopback only", addr)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = u.Host
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			WriteBufferSize:     32 << 10,
			ReadBufferSize:      32 << 10,
		},
		FlushInterval: -1, // flush after every write: streams are relayed chunk by chunk
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Println("bareproxy listening on", ln.Addr(), "->", u)
	srv := &http.Server{Handler: bufferBody(proxy), ReadHeaderTimeout: 10 * time.Second}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sigs; _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
