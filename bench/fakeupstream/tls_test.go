package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestThrowawayTLSServesHTTP2: the configuration -tls-dir makes is trusted
// through the CA it writes, negotiates HTTP/2 by ALPN, and /stats counts
// the HTTP/2 request; a client without the CA is refused.
func TestThrowawayTLSServesHTTP2(t *testing.T) {
	dir := t.TempDir()
	conf, err := throwawayTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("ca.pem holds no certificate")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &Upstream{Chunks: 2, TLS: conf}
	srv := &http.Server{Handler: up.Handler(), TLSConfig: conf, ReadHeaderTimeout: 5 * time.Second, ConnState: up.connState}
	go func() { _ = srv.Serve(tls.NewListener(ln, conf)) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "https://" + ln.Addr().String()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("negotiated %s, want HTTP/2", resp.Proto)
	}
	resp, err = client.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Served != 1 || st.ServedH2 != 1 || st.Conns < 1 {
		t.Fatalf("stats %+v (err %v), want one request served over HTTP/2 on an open connection", st, err)
	}

	untrusting := &http.Client{Timeout: 10 * time.Second}
	if resp, err := untrusting.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the throwaway CA trusted the server")
	}
}
