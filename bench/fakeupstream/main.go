// Command fakeupstream is a fast fake OpenAI-compatible upstream for load
// tests on loopback. POST /v1/chat/completions (and /chat/completions) answers
// a fixed completion whose model echoes the request's, usage included; with
// "stream": true it answers an SSE stream of -chunks chunks, each flushed,
// ending with "data: [DONE]". There is no artificial delay unless -delay,
// -first-token or -interval says.
//
//	go run ./bench/fakeupstream -addr 127.0.0.1:0 -addr-file /tmp/up.addr
//
// The shape of a real model's stream, held open for seconds (the open-streams
// benchmark): the headers at once, the first event 300 ms later, then 20
// content chunks 250 ms apart, about 5.3 s a stream:
//
//	go run ./bench/fakeupstream -first-token 300ms -chunks 20 -interval 250ms
//
// and its token-rate variant, 100 chunks 25 ms apart:
//
//	go run ./bench/fakeupstream -first-token 300ms -chunks 100 -interval 25ms
//
// With -tls-dir DIR it serves TLS on -addr instead, with a throwaway CA it
// makes at start (its certificate written to DIR/ca.pem for the clients to
// trust), offering HTTP/2 and HTTP/1.1 by ALPN as the public upstreams do;
// -plain-addr-file then names a second, plain-HTTP listener on the same
// handler (for a client that talks to the upstream directly, and /stats):
//
//	go run ./bench/fakeupstream -tls-dir /tmp/up-tls -addr-file /tmp/up.addr -plain-addr-file /tmp/up.plain
//
// It listens on loopback only: any other address is refused at start.
package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	addrFile := flag.String("addr-file", "", "write the bound address to this file once listening")
	chunks := flag.Int("chunks", 20, "content chunks per stream")
	delay := flag.Duration("delay", 0, "artificial delay before answering (and between stream chunks)")
	first := flag.Duration("first-token", 0, "streams: after the headers, wait this long before the first event")
	interval := flag.Duration("interval", 0, "streams: wait this long before each content chunk (added to -delay)")
	tlsDir := flag.String("tls-dir", "", "serve TLS (HTTP/2 and HTTP/1.1 by ALPN) with a throwaway CA written to DIR/ca.pem; default off (plain HTTP/1.1)")
	plainFile := flag.String("plain-addr-file", "", "with -tls-dir: also listen in plain HTTP on 127.0.0.1 and write that address here")
	flag.Parse()
	if err := raiseNoFile(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream: raising the open-file limit:", err)
	}
	up := &Upstream{Chunks: *chunks, Delay: *delay, FirstToken: *first, Interval: *interval}
	if *tlsDir != "" {
		conf, err := throwawayTLS(*tlsDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeupstream: -tls-dir:", err)
			os.Exit(1)
		}
		up.TLS = conf
		up.PlainAddrFile = *plainFile
	}
	if err := run(*addr, *addrFile, up); err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream:", err)
		os.Exit(1)
	}
}

func run(addr, addrFile string, up *Upstream) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !loopbackHost(host) {
		return fmt.Errorf("refusing to listen on %q: loopback only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	bound := ln.Addr().String()
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(bound+"\n"), 0o644); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: up.Handler(), ReadHeaderTimeout: 10 * time.Second, ConnState: up.connState}
	var plain *http.Server
	if up.TLS != nil {
		fmt.Println("fakeupstream listening on", bound, "(TLS: h2, http/1.1)")
		srv.TLSConfig = up.TLS
		ln = tls.NewListener(ln, up.TLS)
		if up.PlainAddrFile != "" {
			pln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				return err
			}
			if err := os.WriteFile(up.PlainAddrFile, []byte(pln.Addr().String()+"\n"), 0o644); err != nil {
				return err
			}
			fmt.Println("fakeupstream listening on", pln.Addr(), "(plain HTTP/1.1)")
			plain = &http.Server{Handler: up.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = plain.Serve(pln) }()
		}
	} else {
		fmt.Println("fakeupstream listening on", bound)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		_ = srv.Close()
		if plain != nil {
			_ = plain.Close()
		}
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("fakeupstream served", up.Served.Load(), "requests")
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// raiseNoFile raises the soft limit on open files to the hard one: a stream
// held open costs this process a connection, and the open-streams benchmark
// holds thousands. (Go's runtime already does this at start since Go 1.19;
// doing it here says so where it matters.)
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

// Upstream answers chat completions.
type Upstream struct {
	Chunks int           // content chunks per stream (before the finish and usage chunk)
	Delay  time.Duration // artificial delay before answering and before each content chunk; 0 = none
	// FirstToken is how long a stream waits, after its headers are flushed,
	// before its first event (the role chunk): the model's time to first
	// token. 0 = none.
	FirstToken time.Duration
	// Interval is how long a stream waits before each content chunk, on top
	// of Delay: the model's time per token. 0 = none.
	Interval time.Duration
	// TLS, when not nil, is served on the main listener (-tls-dir), and
	// PlainAddrFile names the file of the plain listener beside it.
	TLS           *tls.Config
	PlainAddrFile string
	Served        atomic.Int64 // requests answered
	Open          atomic.Int64 // streams being written now
	ServedH2      atomic.Int64 // requests answered over HTTP/2
	Conns         atomic.Int64 // connections open now
	MostConns     atomic.Int64 // the most connections open at once
}

// connState counts open connections (http.Server.ConnState).
func (u *Upstream) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		n := u.Conns.Add(1)
		for m := u.MostConns.Load(); n > m && !u.MostConns.CompareAndSwap(m, n); m = u.MostConns.Load() {
		}
	case http.StateClosed, http.StateHijacked:
		u.Conns.Add(-1)
	}
}

// Handler returns the HTTP handler.
func (u *Upstream) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", u.chat)
	mux.HandleFunc("POST /chat/completions", u.chat)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /stats", u.stats)
	return mux
}

// Stats is the body of GET /stats: what the upstream has served and how
// many streams it is writing now, so a benchmark can check from the far side
// of a gateway that its streams are really open end to end.
type Stats struct {
	Served int64 `json:"served"`
	Open   int64 `json:"open"`
	// ServedH2 is how many of Served came over HTTP/2; Conns the
	// connections open now and MostConns the most open at once.
	ServedH2  int64 `json:"served_h2"`
	Conns     int64 `json:"conns"`
	MostConns int64 `json:"most_conns"`
}

func (u *Upstream) stats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Stats{Served: u.Served.Load(), Open: u.Open.Load(),
		ServedH2: u.ServedH2.Load(), Conns: u.Conns.Load(), MostConns: u.MostConns.Load()})
}

type chatRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

const (
	fixedID      = "chatcmpl-fake0000000000000000000001"
	fixedCreated = 1767225600
	fixedContent = "The quick brown fox jumps over the lazy dog."
)

func (u *Upstream) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"invalid JSON body","type":"invalid_request_error","code":"invalid_json"}}`, http.StatusBadRequest)
		return
	}
	if req.Model == "" {
		http.Error(w, `{"error":{"message":"model is required","type":"invalid_request_error","code":"invalid_request"}}`, http.StatusBadRequest)
		return
	}
	u.Served.Add(1)
	if r.ProtoMajor == 2 {
		u.ServedH2.Add(1)
	}
	if u.Delay > 0 {
		time.Sleep(u.Delay)
	}
	model := strconv.Quote(req.Model)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		body := completion(model)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		return
	}
	u.stream(w, r, model)
}

// completion is the fixed non-streaming answer; model is already quoted.
func completion(model string) []byte {
	return []byte(`{"id":"` + fixedID + `","object":"chat.completion","created":` + strconv.Itoa(fixedCreated) +
		`,"model":` + model + `,"choices":[{"index":0,"message":{"role":"assistant","content":"` + fixedContent +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22}}` + "\n")
}

// stream writes the SSE answer: the headers, FirstToken later a role chunk,
// Chunks content chunks each Delay+Interval after the one before, a finish
// chunk with usage, then [DONE]; every event is flushed on its own. A client
// that goes away ends the stream at its next write (or at once, while it
// waits).
func (u *Upstream) stream(w http.ResponseWriter, r *http.Request, model string) {
	u.Open.Add(1)
	defer u.Open.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil && u.FirstToken > 0 {
		fl.Flush() // the headers now, the first token later, as a model does
	}
	// One timer per stream, reset for every wait: a stream costs no garbage
	// per chunk, so the upstream stays cheap beside the gateway it feeds.
	var timer *time.Timer
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
			return true
		case <-r.Context().Done():
			timer.Stop()
			return false
		}
	}
	if !wait(u.FirstToken) {
		return
	}
	head := `data: {"id":"` + fixedID + `","object":"chat.completion.chunk","created":` + strconv.Itoa(fixedCreated) +
		`,"model":` + model + `,"choices":[{"index":0,"delta":`
	buf := make([]byte, 0, 512)
	send := func(tail string) bool {
		buf = append(buf[:0], head...)
		buf = append(buf, tail...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if !send(`{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n") {
		return
	}
	for i := range u.Chunks {
		if !wait(u.Delay + u.Interval) {
			return
		}
		if !send(`{"content":"tok` + strconv.Itoa(i) + ` "},"finish_reason":null}]}` + "\n\n") {
			return
		}
	}
	if !send(`{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":` + strconv.Itoa(u.Chunks) +
		`,"total_tokens":` + strconv.Itoa(12+u.Chunks) + `}}` + "\n\n") {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}
