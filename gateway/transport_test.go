package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// The upstream transport's tests: a real gateway on loopback in front of a
// real upstream (TLS with HTTP/2 by ALPN, or h2c, or HTTP/1.1), each with
// the gateway's own per-upstream transport (no Options.Transport).

const transportSecret = "sk-transport-test"

// transportGateway writes a configuration of one openai-connector upstream
// at baseURL (extra is added to its [[upstreams]] entry), starts the gateway
// on it behind a loopback server (on ln when not nil) and returns both.
func transportGateway(t *testing.T, baseURL, extra string, ln net.Listener) (*gateway.Server, *httptest.Server) {
	t.Helper()
	srv, err := gateway.New(gateway.Options{ConfigDir: transportConfig(t, baseURL, extra), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "the gateway starts")
	ts := httptest.NewUnstartedServer(srv.Handler())
	if ln != nil {
		ts.Listener.Close()
		ts.Listener = ln
	}
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close(context.Background())
	})
	return srv, ts
}

// transportConfig writes the configuration directory of transportGateway.
func transportConfig(t *testing.T, baseURL, extra string) string {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(transportSecret))
	conf := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"

[store]
kind = "off"
data_dir = "data"

[[upstreams]]
name = "up"
connector = "openai"
base_url = %q
first_byte_timeout = "20s"
timeout = "60s"
%s

[[keys]]
id = "k-transport"
sha256 = %q
org = "o"
team = "t"
project = "p"
`, baseURL, extra, hex.EncodeToString(sum[:]))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(conf), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"models": [
  {"slug": "openai/gpt-4o-mini", "context_window": 128000,
   "native": {"openai": "gpt-4o-mini"},
   "endpoints": [{"provider": "openai", "price_in": 0.15, "price_out": 0.6}]}
]}`), 0o644))
	return dir
}

// TestUpstreamTransportSettingsChecked: a ca_file without a certificate and
// h2c on an https base_url are configuration errors, with their codes.
func TestUpstreamTransportSettingsChecked(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644))
	for _, c := range []struct{ base, extra, code string }{
		{"https://127.0.0.1:9/v1", fmt.Sprintf("ca_file = %q", notPEM), "invalid_ca_file"},
		{"https://127.0.0.1:9/v1", fmt.Sprintf("ca_file = %q", filepath.Join(t.TempDir(), "missing.pem")), "invalid_ca_file"},
		{"https://127.0.0.1:9/v1", "h2c = true", "missing_setting"},
	} {
		_, err := gateway.New(gateway.Options{ConfigDir: transportConfig(t, c.base, c.extra), Logger: slog.New(slog.DiscardHandler)})
		require.Error(t, err, c.extra)
		require.Contains(t, err.Error(), c.code, c.extra)
	}
}

// writeCA writes the PEM of a TLS test server's certificate (its own CA)
// into a temporary file and returns the file's path.
func writeCA(t *testing.T, up *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstream-ca.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644))
	return path
}

// fakeChat answers chat completions as an OpenAI upstream does: a JSON
// completion, or a stream of chunks events (each flushed, gap apart) and
// [DONE]. It counts the requests by HTTP major version.
type fakeChat struct {
	chunks int
	gap    time.Duration
	h1, h2 atomic.Int64
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		f.h2.Add(1)
	} else {
		f.h1.Add(1)
	}
	body, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range f.chunks {
		if i > 0 && f.gap > 0 {
			select {
			case <-time.After(f.gap):
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
		fl.Flush()
	}
	_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\ndata: [DONE]\n\n")
	fl.Flush()
}

// ask sends one chat completion through the gateway and returns the status
// and the whole body.
func ask(t *testing.T, client *http.Client, gw string, stream bool) (int, string, error) {
	t.Helper()
	body := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true}`, false: `}`}[stream]
	req, err := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+transportSecret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// upstreamConns reads sluice_upstream_connections{upstream="up",proto}.
func upstreamConns(t *testing.T, reg *prometheus.Registry, proto string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "sluice_upstream_connections" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["upstream"] == "up" && labels["proto"] == proto {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// TestUpstreamTLSNegotiatesHTTP2: to an https upstream that offers h2 by
// ALPN, the gateway's own transport (its TLS dial, its ca_file) speaks
// HTTP/2, for answers and streams alike, on one shared connection, counted
// by sluice_upstream_connections{proto="h2"}. Without ca_file the
// upstream's private CA is not trusted.
func TestUpstreamTLSNegotiatesHTTP2(t *testing.T) {
	fake := &fakeChat{chunks: 3}
	up := httptest.NewUnstartedServer(fake)
	up.EnableHTTP2 = true
	up.StartTLS()
	t.Cleanup(up.Close)

	srv, gw := transportGateway(t, up.URL+"/v1", fmt.Sprintf("ca_file = %q", writeCA(t, up)), nil)
	for _, stream := range []bool{false, true, false, true} {
		status, body, err := ask(t, gw.Client(), gw.URL, stream)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, body)
		if stream {
			require.Contains(t, body, "data: [DONE]")
		}
	}
	require.EqualValues(t, 4, fake.h2.Load(), "every upstream request went over HTTP/2")
	require.Zero(t, fake.h1.Load(), "no upstream request fell back to HTTP/1.1")
	require.EqualValues(t, 1, upstreamConns(t, srv.Registry(), "h2"), "one HTTP/2 connection carried them all")
	require.Zero(t, upstreamConns(t, srv.Registry(), "http/1.1"))

	_, untrusted := transportGateway(t, up.URL+"/v1", "", nil)
	status, body, err := ask(t, untrusted.Client(), untrusted.URL, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadGateway, status, "the system roots do not sign the test server's certificate: %s", body)
}

// TestUpstreamH2C: with h2c = true a plain upstream that serves HTTP/2 in
// the clear is spoken to in HTTP/2; without it, HTTP/1.1.
func TestUpstreamH2C(t *testing.T) {
	fake := &fakeChat{chunks: 2}
	up := httptest.NewUnstartedServer(fake)
	up.Config.Protocols = new(http.Protocols)
	up.Config.Protocols.SetHTTP1(true)
	up.Config.Protocols.SetUnencryptedHTTP2(true)
	up.Start()
	t.Cleanup(up.Close)

	srv, gw := transportGateway(t, up.URL+"/v1", "h2c = true", nil)
	for _, stream := range []bool{false, true} {
		status, body, err := ask(t, gw.Client(), gw.URL, stream)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, body)
	}
	require.EqualValues(t, 2, fake.h2.Load(), "h2c: HTTP/2 without TLS")
	require.Zero(t, fake.h1.Load())
	require.EqualValues(t, 1, upstreamConns(t, srv.Registry(), "h2c"))

	_, plain := transportGateway(t, up.URL+"/v1", "", nil)
	status, body, err := ask(t, plain.Client(), plain.URL, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	require.EqualValues(t, 1, fake.h1.Load(), "without h2c a plain upstream is sent HTTP/1.1")
}

// handoffListener lets two servers take turns on one listener: the first
// serves until it is shut down (Close makes its Accept return), then the
// second takes the connections that come after.
type handoffListener struct {
	net.Listener
	conns <-chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c, ok := <-l.conns:
		if !ok {
			return nil, net.ErrClosed
		}
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

// TestUpstreamGoawayMidLoad: the upstream shuts its HTTP/2 connection down
// gracefully (a GOAWAY) while the gateway is relaying streams on it and
// more requests keep coming. Every request answers 200 in full: the streams
// the old connection was serving finish on it, and the requests it had not
// taken are sent again on a new connection.
func TestUpstreamGoawayMidLoad(t *testing.T) {
	tmp := httptest.NewUnstartedServer(http.NotFoundHandler())
	tmp.StartTLS() // for its certificate, which the servers below present
	cert := tmp.TLS.Certificates
	caFile := writeCA(t, tmp)
	tmp.Close()

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	conns := make(chan net.Conn)
	go func() {
		defer close(conns)
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	var inFirst, doneFirst, servedSecond atomic.Int64
	var shuttingDown atomic.Bool
	var finishedAfterGoaway atomic.Int64
	const chunks = 8
	fake := &fakeChat{chunks: chunks, gap: 5 * time.Millisecond}
	mk := func(first bool) (*http.Server, *handoffListener) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first {
				inFirst.Add(1)
				defer func() {
					doneFirst.Add(1)
					if shuttingDown.Load() {
						finishedAfterGoaway.Add(1)
					}
				}()
			} else {
				servedSecond.Add(1)
			}
			fake.ServeHTTP(w, r)
		})
		s := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: cert, NextProtos: []string{"h2", "http/1.1"}}}
		l := &handoffListener{Listener: raw, conns: conns, done: make(chan struct{})}
		return s, l
	}
	first, firstLn := mk(true)
	second, secondLn := mk(false)
	go func() { _ = first.ServeTLS(firstLn, "", "") }()
	t.Cleanup(func() { _ = second.Close(); _ = first.Close() })

	_, gw := transportGateway(t, "https://"+raw.Addr().String()+"/v1", fmt.Sprintf("ca_file = %q", caFile), nil)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(client.CloseIdleConnections)

	const total, parallel = 120, 16
	deadline := time.Now().Add(40 * time.Second)
	var next atomic.Int64
	var failures []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	goaway := make(chan struct{})
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > total || time.Now().After(deadline) {
					return
				}
				stream := i%4 != 0
				status, body, err := ask(t, client, gw.URL, stream)
				ok := err == nil && status == http.StatusOK
				if ok && stream {
					ok = strings.Count(body, "tok") == chunks && strings.HasSuffix(body, "data: [DONE]\n\n")
				}
				if !ok {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("request %d (stream %v): status %d, err %v, body %.200q", i, stream, status, err, body))
					mu.Unlock()
				}
				if i == total/3 {
					close(goaway)
				}
			}
		}()
	}
	// A third of the way in, with streams relaying on the first server's
	// connection, it says GOAWAY and finishes what it has.
	select {
	case <-goaway:
	case <-time.After(30 * time.Second):
		t.Fatal("the load did not get a third of the way in")
	}
	go func() { _ = second.ServeTLS(secondLn, "", "") }()
	shuttingDown.Store(true)
	inflight := inFirst.Load() - doneFirst.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, first.Shutdown(ctx), "the first server's streams finished")
	wg.Wait()

	require.Empty(t, failures, "every request answered in full across the GOAWAY")
	require.EqualValues(t, total, next.Load()-parallel, "the load ran to its count, not its deadline")
	require.Positive(t, inflight, "streams were in flight on the connection told GOAWAY")
	require.Positive(t, finishedAfterGoaway.Load(), "streams in flight at the GOAWAY finished on the old connection")
	require.Positive(t, servedSecond.Load(), "requests after the GOAWAY went to a new connection")
	require.EqualValues(t, total, inFirst.Load()+servedSecond.Load(), "each request reached the upstream once")
}

// TestUpstreamStalledCallerIsBounded: a caller that stops reading a stream
// stops its HTTP/2 upstream stream after a bounded amount (the stream's
// window, H2StreamWindow, and a few buffers), instead of the gateway reading
// the upstream into memory; when the caller goes, the upstream stream ends.
func TestUpstreamStalledCallerIsBounded(t *testing.T) {
	var written atomic.Int64
	handlerDone := make(chan error, 1)
	event := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
		strings.Repeat("x", 900) + "\"},\"finish_reason\":null}]}\n\n"
	const most = 64 << 20 // what the upstream would send if nothing pushed back
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		var err error
		for written.Load() < most {
			var n int
			if n, err = io.WriteString(w, event); err != nil {
				break
			}
			fl.Flush()
			written.Add(int64(n))
		}
		handlerDone <- err
	}))
	up.EnableHTTP2 = true
	up.StartTLS()
	t.Cleanup(up.Close)

	// The gateway's side of the caller's connection gets a small send
	// buffer, so the kernel's buffers do not hide what the gateway holds.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, gw := transportGateway(t, up.URL+"/v1", fmt.Sprintf("ca_file = %q", writeCA(t, up)), smallSendBuffers{ln})

	conn, err := net.Dial("tcp", gw.Listener.Addr().String())
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4<<10))
	body := `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		transportSecret, len(body), body)
	require.NoError(t, err)
	// The answer's head, then nothing more is read.
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Wait (bounded) until the upstream's writes stop moving: 1 s without
	// progress, at most 20 s.
	last, still := int64(-1), 0
	for end := time.Now().Add(20 * time.Second); still < 10 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	require.Equal(t, 10, still, "the upstream's writes came to a stop (wrote %d bytes)", last)
	// The stream's window, the gateway's relay and server buffers, and the
	// kernel's buffers of the two loopback connections.
	const bound = gateway.H2StreamWindow + 512<<10
	require.Less(t, last, int64(bound), "a stalled caller let the upstream send %d bytes into the gateway", last)
	require.Positive(t, last, "the stream started")
	t.Logf("the upstream wrote %d bytes before the stalled caller stopped it", last)

	conn.Close()
	select {
	case err := <-handlerDone:
		require.Error(t, err, "the upstream stream was reset once the caller went")
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream stream stayed open after the caller went")
	}
}

// smallSendBuffers gives each accepted connection a 16 KiB send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(16 << 10)
	}
	return c, err
}

// TestUpstreamConnectionsBounded: max_connections bounds the connections
// to a plain HTTP/1.1 upstream, where each request in flight holds one: of
// six requests held at the upstream, two are there at once and the rest
// wait for a connection; sluice_upstream_connections shows the two; all
// six answer once the upstream lets go.
func TestUpstreamConnectionsBounded(t *testing.T) {
	var at, most atomic.Int64
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	fake := &fakeChat{chunks: 1}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := at.Add(1)
		defer at.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	srv, gw := transportGateway(t, up.URL+"/v1", "max_connections = 2", nil)

	const n = 6
	results := make(chan error, n)
	client := &http.Client{Timeout: 30 * time.Second}
	for range n {
		go func() {
			status, body, err := ask(t, client, gw.URL, true)
			if err == nil && status != http.StatusOK {
				err = errors.New("status " + strconv.Itoa(status) + ": " + body)
			}
			results <- err
		}()
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("the first two requests did not reach the upstream")
		}
	}
	// The other four are waiting for a connection, not at the upstream.
	select {
	case <-arrived:
		t.Fatal("a third request reached the upstream while two held both connections")
	case <-time.After(300 * time.Millisecond):
	}
	require.EqualValues(t, 2, upstreamConns(t, srv.Registry(), "http/1.1"), "the gauge shows the two connections")
	close(release)
	for range n {
		select {
		case err := <-results:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("a request did not finish")
		}
	}
	require.EqualValues(t, 2, most.Load(), "never more than max_connections at the upstream at once")
	require.LessOrEqual(t, upstreamConns(t, srv.Registry(), "http/1.1"), 2.0)
}
