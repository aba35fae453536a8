//go:build unix

package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
)

// benchFrame is a recorded server event (an audio delta of
// testdata/recorded/realtime/openai-text-in-audio-out.jsonl): the frame a
// voice session relays most.
const benchFrame = `{"content_index":0,"delta":"BQAGAA0AAwD9/wYAAgADAAAABAAHAAMAAwAAAAoABQAE","event_id":"event_Dz2petaZMZ2DHygwKjqGg","item_id":"item_Dz2penlys0DOezWoE35vu","output_index":0,"response_id":"resp_Dz2peMI5aYdp3zc28YMdx","type":"response.output_audio.delta"}`

// echoUpstream is a WebSocket upstream that sends every frame back.
func echoUpstream(b *testing.B) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		for {
			typ, p, err := c.Read(ctx)
			if err != nil {
				return
			}
			if c.Write(ctx, typ, p) != nil {
				return
			}
		}
	}))
	b.Cleanup(ts.Close)
	return ts
}

// bareRelay is the same library's relay with nothing else: accept the
// caller, dial the upstream, copy frames both ways.
func bareRelay(b *testing.B, upstream string) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up, _, err := websocket.Dial(r.Context(), upstream, nil)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ctx := context.Background()
		pump := func(src, dst *websocket.Conn) {
			for {
				typ, p, err := src.Read(ctx)
				if err != nil {
					_ = dst.Close(websocket.StatusNormalClosure, "")
					return
				}
				if dst.Write(ctx, typ, p) != nil {
					return
				}
			}
		}
		go pump(up, c)
		pump(c, up)
	}))
	b.Cleanup(ts.Close)
	return ts
}

// sluiceRealtime is the gateway on loopback, its openai upstream the echo.
func sluiceRealtime(b *testing.B, upstream string) *httptest.Server {
	dir := b.TempDir()
	if err := os.CopyFS(dir, sluice.DemoConfig()); err != nil {
		b.Fatal(err)
	}
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		UpstreamURLs: map[string]string{"openai": upstream}})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return ts
}

func wsURL(ts *httptest.Server, path string) string {
	return "ws" + strings.TrimPrefix(ts.URL, "http") + path
}

// BenchmarkRealtimeRelay relays a recorded audio-delta event to an echoing
// upstream and back, per iteration (two frames relayed), through the
// library's bare relay and through sluice's session (whose relay reads each
// event's type and meters).
func BenchmarkRealtimeRelay(b *testing.B) {
	echo := echoUpstream(b)
	hdr := http.Header{"Authorization": {"Bearer sk-sluice-demo-batch"}}
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"bare", wsURL(bareRelay(b, wsURL(echo, "/")), "/")},
		{"sluice", wsURL(sluiceRealtime(b, echo.URL), "/v1/realtime?model=gpt-realtime")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			c, _, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: hdr})
			if err != nil {
				b.Fatal(err)
			}
			defer c.CloseNow()
			frame := []byte(benchFrame)
			b.SetBytes(int64(2 * len(frame)))
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.Read(ctx); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time (client, relay and echo alike; only the
			// relay differs between the two), which a busy machine's waits
			// do not inflate as they do ns/op.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			_ = c.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// BenchmarkRealtimeConnect opens and closes one session per iteration:
// sluice's whole connect path (authentication, admission, the plan, the
// upstream's handshake before the caller's, the row) beside the bare
// relay's (the two handshakes alone).
func BenchmarkRealtimeConnect(b *testing.B) {
	echo := echoUpstream(b)
	hdr := http.Header{"Authorization": {"Bearer sk-sluice-demo-batch"}}
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"bare", wsURL(bareRelay(b, wsURL(echo, "/")), "/")},
		{"sluice", wsURL(sluiceRealtime(b, echo.URL), "/v1/realtime?model=gpt-realtime")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				c, _, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: hdr})
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Close(websocket.StatusNormalClosure, "")
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkRealtimeIdleSessions opens idleSessions sessions that then stay
// idle, through the bare relay and through sluice, and reports the memory
// (heap in use and goroutine stacks, the whole process's: client, relay and
// upstream alike) each added, per session. b.N is not used: one run opens
// them once.
func BenchmarkRealtimeIdleSessions(b *testing.B) {
	const idleSessions = 2000
	echo := echoUpstream(b)
	hdr := http.Header{"Authorization": {"Bearer sk-sluice-demo-batch"}}
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"bare", wsURL(bareRelay(b, wsURL(echo, "/")), "/")},
		{"sluice", wsURL(sluiceRealtime(b, echo.URL), "/v1/realtime?model=gpt-realtime")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
			}
			ctx := context.Background()
			before := inUse()
			conns := make([]*websocket.Conn, 0, idleSessions)
			for range idleSessions {
				c, _, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: hdr})
				if err != nil {
					b.Fatal(err)
				}
				// One round trip: the session is open end to end.
				if err := c.Write(ctx, websocket.MessageText, []byte(benchFrame)); err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.Read(ctx); err != nil {
					b.Fatal(err)
				}
				conns = append(conns, c)
			}
			b.ReportMetric(float64(inUse()-before)/idleSessions, "B/session")
			for _, c := range conns {
				_ = c.CloseNow()
			}
		})
	}
}

// inUse is the heap in use plus the goroutine stacks, after a collection.
func inUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
