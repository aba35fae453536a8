package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// The upstream transport's HTTP/2 settings (docs/configuration.md,
// "Upstream connections").
const (
	// H2StreamWindow is the most an HTTP/2 upstream may send on one
	// stream before the gateway has relayed it: a caller that stops
	// reading stops its upstream stream after this much, instead of the
	// 4 MiB Go's transport allows by default.
	H2StreamWindow = 256 << 10
	// h2ConnWindow is the connection's window, left large so that streams
	// whose callers stall (each holding up to H2StreamWindow of it) do not
	// stop the other streams sharing the connection.
	h2ConnWindow = 1 << 30
	// h2PingAfter sends a PING on an HTTP/2 connection that received
	// nothing for this long, and h2PingTimeout closes it (and fails its
	// streams, retried where they can be) when the PING goes unanswered.
	h2PingAfter   = 30 * time.Second
	h2PingTimeout = 15 * time.Second
)

// TransportOptions are one upstream's connection settings.
type TransportOptions struct {
	// RootCAs verify an https upstream's certificate. Default nil: the
	// system roots.
	RootCAs *x509.CertPool
	// H2C speaks HTTP/2 without TLS (prior knowledge) to http:// URLs.
	// Default false: HTTP/1.1 to them.
	H2C bool
	// MaxConns bounds the connections open to one host (dialing, in use
	// and idle). Default 0: profiles.DefaultMaxConnections.
	MaxConns int
	// Conns, when not nil, counts the open connections by protocol ("h2",
	// "http/1.1" or "h2c"): sluice_upstream_connections of one upstream.
	Conns *prometheus.GaugeVec
	// Upstream is the upstream label of Conns.
	Upstream string
}

// NewUpstreamTransport returns the transport of one upstream: keep-alive
// connections reused across requests, no transparent compression (bodies
// pass through as sent), HTTP/2 negotiated by ALPN on TLS (or spoken in the
// clear with H2C) with a per-stream window of H2StreamWindow, and at most
// MaxConns connections. An HTTP/1.1 connection's read and write buffers are
// 4 KiB: a plain upstream holds a connection per open stream for the
// stream's whole life, and a stream's chunks are a few hundred bytes.
//
// TLS is dialed here rather than by the transport so that each connection
// is counted by its negotiated protocol; the dial returns the *tls.Conn
// itself, which is what keeps HTTP/2 on (a dial returning anything else
// would silently fall back to HTTP/1.1).
func NewUpstreamTransport(o TransportOptions) *http.Transport {
	if o.MaxConns <= 0 {
		o.MaxConns = profiles.DefaultMaxConnections
	}
	var protos http.Protocols
	protos.SetHTTP2(true)
	if o.H2C {
		// Without HTTP/1 in the set, http:// URLs are sent as h2c.
		protos.SetUnencryptedHTTP2(true)
	} else {
		protos.SetHTTP1(true)
	}
	tlsConf := &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	gauge := func(proto string) prometheus.Gauge {
		if o.Conns == nil {
			return nil
		}
		return o.Conns.WithLabelValues(o.Upstream, proto)
	}
	plainProto := "http/1.1"
	if o.H2C {
		plainProto = "h2c"
	}
	t := &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		ForceAttemptHTTP2: true,
		Protocols:         &protos,
		TLSClientConfig:   tlsConf, // through an HTTP proxy's tunnel
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countConn(c, gauge(plainProto)), nil
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				raw.Close()
				return nil, err
			}
			conf := tlsConf.Clone()
			conf.ServerName = host
			conf.NextProtos = []string{"h2", "http/1.1"}
			if o.H2C {
				conf.NextProtos = []string{"h2"}
			}
			// Counted once the protocol is known; the *tls.Conn's Close
			// closes the counted connection under it.
			cc := &countedConn{Conn: raw}
			tc := tls.Client(cc, conf)
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := tc.HandshakeContext(hctx); err != nil {
				raw.Close()
				return nil, err
			}
			proto := tc.ConnectionState().NegotiatedProtocol
			if proto == "" {
				proto = "http/1.1"
			}
			if cc.gauge = gauge(proto); cc.gauge != nil {
				cc.gauge.Inc()
			}
			return tc, nil
		},
		MaxConnsPerHost:     o.MaxConns,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     4 << 10,
		ReadBufferSize:      4 << 10,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream:     H2StreamWindow,
			MaxReceiveBufferPerConnection: h2ConnWindow,
			SendPingTimeout:               h2PingAfter,
			PingTimeout:                   h2PingTimeout,
		},
	}
	return t
}

// countedConn keeps a gauge of open connections: one more while it is open.
type countedConn struct {
	net.Conn
	gauge  prometheus.Gauge
	closed atomic.Bool
}

func countConn(c net.Conn, g prometheus.Gauge) net.Conn {
	if g == nil {
		return c
	}
	g.Inc()
	return &countedConn{Conn: c, gauge: g}
}

// Close closes the connection and, the first time, counts it gone.
func (c *countedConn) Close() error {
	if c.gauge != nil && c.closed.CompareAndSwap(false, true) {
		c.gauge.Dec()
	}
	return c.Conn.Close()
}

// upstreamClients holds one HTTP client per upstream, each with its own
// transport (its CAs, h2c, its connection bound and pool), rebuilt when an
// upstream's connection settings change and kept across reloads otherwise.
type upstreamClients struct {
	mu     sync.Mutex // serialises refresh
	byName atomic.Pointer[map[string]*upstreamClient]
	conns  *prometheus.GaugeVec
}

type upstreamClient struct {
	client    *http.Client
	transport *http.Transport
	key       transportKey
}

// transportKey is what an upstream's transport is made of.
type transportKey struct {
	ca       [32]byte // the CA file's SHA-256; zero for the system roots
	caFile   string
	h2c      bool
	maxConns int
}

func newUpstreamClients(conns *prometheus.GaugeVec) *upstreamClients {
	u := &upstreamClients{conns: conns}
	empty := map[string]*upstreamClient{}
	u.byName.Store(&empty)
	return u
}

// refresh makes the clients of cfg's upstreams, keeping those whose
// settings did not change; the transports of upstreams gone or changed
// close their idle connections (those in use finish first).
func (u *upstreamClients) refresh(cfg *profiles.Config) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := *u.byName.Load()
	next := make(map[string]*upstreamClient, len(cfg.Upstreams))
	for i := range cfg.Upstreams {
		up := &cfg.Upstreams[i]
		k := transportKey{caFile: up.CAFile, h2c: up.H2C, maxConns: up.MaxConnections}
		var pool *x509.CertPool
		if up.CAFile != "" {
			var err error
			if pool, k.ca, err = profiles.ReadCAsHashed(up.CAFile); err != nil {
				return fmt.Errorf("upstream %q: ca_file: %w", up.Name, err)
			}
		}
		if c := old[up.Name]; c != nil && c.key == k {
			next[up.Name] = c
			continue
		}
		t := NewUpstreamTransport(TransportOptions{RootCAs: pool, H2C: up.H2C, MaxConns: up.MaxConnections, Conns: u.conns, Upstream: up.Name})
		next[up.Name] = &upstreamClient{client: newClient(t), transport: t, key: k}
	}
	u.byName.Store(&next)
	for name, c := range old {
		if next[name] != c {
			c.transport.CloseIdleConnections()
		}
	}
	return nil
}

// closeIdle closes every upstream's idle connections.
func (u *upstreamClients) closeIdle() {
	for _, c := range *u.byName.Load() {
		c.transport.CloseIdleConnections()
	}
}

// get returns the client of the upstream named, or nil.
func (u *upstreamClients) get(name string) *http.Client {
	if c := (*u.byName.Load())[name]; c != nil {
		return c.client
	}
	return nil
}

// newClient is the gateway's HTTP client over t: redirects are answers,
// not followed.
func newClient(t http.RoundTripper) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// clientFor returns the HTTP client that sends to up: its own, or the
// Options.Transport every upstream shares when one is given.
func (s *Server) clientFor(up *snapshot.Upstream) *http.Client {
	if s.opts.Transport == nil {
		if c := s.upstreams.get(up.Config.Name); c != nil {
			return c
		}
	}
	return s.client
}
