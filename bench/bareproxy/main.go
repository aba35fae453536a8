// Command bareproxy is the floor of the gateway comparison: a bare
// net/http/httputil.ReverseProxy with a transport tuned like the gateway's
// (keep-alive pool sized for high concurrency, no transparent compression),
// flushing streamed bodies as they arrive. It does no policy work at all, so
// what it costs over a direct call is the cost of the extra hop alone.
//
//	go run ./bench/bareproxy -addr 127.0.0.1:0 -target http://127.0.0.1:9000 -addr-file /tmp/bp.addr
//
// With -debug-addr it also serves, on that separate listener, GET /metrics
// (go_goroutines in the Prometheus text format, as sluice's /metrics has it)
// and Go's runtime profiles under /debug/pprof/, so the open-streams benchmark
// counts its goroutines and profiles its memory the way it does sluice's.
//
// To an https target it offers HTTP/2 and HTTP/1.1 by ALPN (HTTP/2 is what a
// TLS upstream picks), trusting the CAs of -ca-file instead of the system's;
// -buffer sets the size of the buffer each proxied body is copied through
// (httputil's default is 32 KiB; a careful operator relaying small stream
// events gives it 4 KiB from a pool):
//
//	go run ./bench/bareproxy -target https://127.0.0.1:9443 -ca-file /tmp/up-tls/ca.pem -buffer 4096
//
// Both listen addresses and the target must be on loopback.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	target := flag.String("target", "", "upstream base URL (loopback only), e.g. http://127.0.0.1:9000")
	addrFile := flag.String("addr-file", "", "write the bound address to this file once listening")
	debugAddr := flag.String("debug-addr", "", "also serve /metrics (go_goroutines) and /debug/pprof/ here (loopback only); default off")
	debugFile := flag.String("debug-addr-file", "", "write the debug listener's bound address to this file")
	caFile := flag.String("ca-file", "", "PEM file of the CAs that sign an https target's certificate; default: the system roots")
	buffer := flag.Int("buffer", 0, "bytes of the pooled buffer each proxied body is copied through; default 0: httputil's own 32 KiB buffers")
	flag.Parse()
	if err := raiseNoFile(); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy: raising the open-file limit:", err)
	}
	if *debugAddr != "" {
		if err := serveDebug(*debugAddr, *debugFile); err != nil {
			fmt.Fprintln(os.Stderr, "bareproxy:", err)
			os.Exit(1)
		}
	}
	if err := run(*addr, *target, *addrFile, *caFile, *buffer); err != nil {
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

// raiseNoFile raises the soft limit on open files to the hard one: a proxied
// stream holds two connections. (Go's runtime already does this at start
// since Go 1.19; doing it here says so where it matters.)
func raiseNoFile() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= lim.Max {
		return nil
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// debugHandler serves go_goroutines in the Prometheus text format at
// /metrics, and Go's runtime profiles under /debug/pprof/.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines %d\n",
			runtime.NumGoroutine())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}

// serveDebug starts the debug listener on addr (loopback only) in the
// background and writes its bound address to file, if one is named.
func serveDebug(addr, file string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !loopback(host) {
		return fmt.Errorf("-debug-addr %q: loopback only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if file != "" {
		if err := os.WriteFile(file, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	go func() { _ = (&http.Server{Handler: debugHandler(), ReadHeaderTimeout: 10 * time.Second}).Serve(ln) }()
	return nil
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

// bufferPool lends httputil.ReverseProxy copy buffers of one size.
type bufferPool struct{ pool sync.Pool }

func newBufferPool(size int) *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, size); return &b }}}
}

// Get returns a buffer.
func (p *bufferPool) Get() []byte { return *(p.pool.Get().(*[]byte)) }

// Put takes a buffer back.
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

func run(addr, target, addrFile, caFile string, buffer int) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || !loopback(u.Hostname()) || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("-target %q: want an http or https URL on loopback", target)
	}
	var roots *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("-ca-file: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-ca-file %s: no certificate", caFile)
		}
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
			DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			// A custom dialer turns HTTP/2 off unless asked for; an https
			// target then negotiates it by ALPN.
			ForceAttemptHTTP2:   true,
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			WriteBufferSize:     32 << 10,
			ReadBufferSize:      32 << 10,
		},
		FlushInterval: -1, // flush after every write: streams are relayed chunk by chunk
	}
	if buffer > 0 {
		proxy.BufferPool = newBufferPool(buffer)
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
