package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicegw/sluice/profiles/access"
)

// What every WebSocket session of the gateway shares, whatever API it
// speaks: the key read before the upgrade, the caller accepted, frames
// relayed one at a time each way, and how the session ended, which its
// request-log row records (responses, close_code, closed_by). A session goes
// begin → parse → admit → plan → connect → accept → relay → record, calling
// the same step methods serve calls; realtime.go holds what only the
// Realtime API does (its URL, its events' metering, its budget).

// insecureKeyProtocol prefixes the subprotocol a browser sends its key in
// (a browser's WebSocket cannot set headers): "openai-insecure-api-key.<key>".
const insecureKeyProtocol = "openai-insecure-api-key."

// Who ended a session, as the row's closed_by records it.
const (
	ClosedByCaller   = "caller"
	ClosedByUpstream = "upstream"
	ClosedBySluice   = "sluice"
)

// sessionSecret is the key a WebSocket upgrade authenticates with:
// x-api-key, else Authorization: Bearer, else the browser's subprotocol.
func sessionSecret(r *http.Request) string {
	if k := access.APIKey(r); k != "" {
		return k
	}
	for _, p := range subprotocols(r) {
		if k, ok := strings.CutPrefix(p, insecureKeyProtocol); ok {
			return strings.TrimSpace(k)
		}
	}
	return ""
}

// subprotocols lists the subprotocols the caller offered, in order.
func subprotocols(r *http.Request) []string {
	var out []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// acceptSession accepts the caller's upgrade. Of the subprotocols the
// caller offered, only one of the names in protos is chosen: the one
// carrying the caller's key is never echoed back. Origins are not checked:
// a session authenticates with a key, never with a cookie, so another
// site's page gains nothing from opening one. Compression is not
// negotiated, and one frame is at most limit bytes.
func acceptSession(w http.ResponseWriter, r *http.Request, protos []string, limit int64) (*websocket.Conn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: protos, InsecureSkipVerify: true,
		CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(limit)
	return c, nil
}

// wsEnd is how a session ended: who closed it, with which code and reason.
type wsEnd struct {
	by     string
	code   websocket.StatusCode
	reason string
}

// wsSession is one open WebSocket session between a caller and an
// upstream: two relays, one per direction, each holding at most one frame
// (a caller that stops reading stops the upstream's relay, and the
// upstream's socket buffers fill: backpressure, not memory).
type wsSession struct {
	caller, up *websocket.Conn
	// last is when the last frame passed either way (Unix nanoseconds).
	last atomic.Int64
	once sync.Once
	end  wsEnd
	done chan struct{}
	// responses counts the upstream's responses (realtime.go).
	responses int
}

// newWSSession pairs an accepted caller with its upstream.
func newWSSession(caller, up *websocket.Conn) *wsSession {
	ws := &wsSession{caller: caller, up: up, done: make(chan struct{})}
	ws.last.Store(time.Now().UnixNano())
	return ws
}

// finish records how the session ended; the first call wins.
func (ws *wsSession) finish(e wsEnd) {
	ws.once.Do(func() {
		ws.end = e
		close(ws.done)
	})
}

// frameFilter sees a frame before it is relayed: it returns the frame to
// write (the same or a rewritten one) and false to drop it.
type frameFilter func(typ websocket.MessageType, b []byte) ([]byte, bool)

// pump relays src's frames to dst, one at a time, until either side fails;
// each frame passes filter first (nil: relayed as it is). from names src
// for the session's end.
func (ws *wsSession) pump(src, dst *websocket.Conn, from string, filter frameFilter) {
	ctx := context.Background() // reads and writes end with the sockets, not a context: a cancelled context would close without a close frame
	for {
		typ, b, err := src.Read(ctx)
		if err != nil {
			ws.finish(readEnd(from, err))
			return
		}
		ws.last.Store(time.Now().UnixNano())
		if filter != nil {
			var ok bool
			if b, ok = filter(typ, b); !ok {
				continue
			}
		}
		if err := dst.Write(ctx, typ, b); err != nil {
			other := ClosedByUpstream
			if from == ClosedByUpstream {
				other = ClosedByCaller
			}
			ws.finish(readEnd(other, err))
			return
		}
	}
}

// readEnd is the end a failed read or write of side's socket says: the
// close frame side sent, or 1006 (abnormal closure) when the connection
// dropped without one, or 1009 for a frame over the read limit.
func readEnd(side string, err error) wsEnd {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return wsEnd{by: side, code: ce.Code, reason: ce.Reason}
	}
	if strings.Contains(err.Error(), "read limited at") {
		return wsEnd{by: ClosedBySluice, code: websocket.StatusMessageTooBig, reason: "frame larger than [realtime] max_frame_bytes"}
	}
	return wsEnd{by: side, code: websocket.StatusAbnormalClosure, reason: "connection lost"}
}

// wait runs until the session ends: a side closes, the context ends (the
// server cut it at shutdown, or the maximum duration passed: limit says
// which), or no frame passed for idle.
func (ws *wsSession) wait(ctx context.Context, idle time.Duration, limit func() wsEnd) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-ws.done:
			return
		case <-ctx.Done():
			ws.finish(limit())
			return
		case <-t.C:
			since := time.Since(time.Unix(0, ws.last.Load()))
			if since >= idle {
				ws.finish(wsEnd{by: ClosedBySluice, code: websocket.StatusNormalClosure, reason: "idle timeout ([realtime] idle_timeout)"})
				return
			}
			t.Reset(idle - since)
		}
	}
}

// close ends both sockets as the session's end says: the side that closed
// has had its close frame answered already; the other gets a close frame
// carrying the reason (a code that may not be sent, such as 1006, becomes
// toCaller's for the caller and 1000 for the upstream). Both closes run at
// once, each bounded by the library's close handshake timeout.
func (ws *wsSession) close(toCaller websocket.StatusCode, callerReason string) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = ws.up.Close(websocket.StatusNormalClosure, "")
	}()
	go func() {
		defer wg.Done()
		_ = ws.caller.Close(toCaller, closeReason(callerReason))
	}()
	wg.Wait()
}

// closeReason bounds a close frame's reason to the 123 bytes a control
// frame may carry.
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	s = s[:123]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}

// sendable reports whether a close code may be sent in a close frame.
func sendable(c websocket.StatusCode) bool {
	switch {
	case c == websocket.StatusNoStatusRcvd, c == websocket.StatusAbnormalClosure, c == websocket.StatusTLSHandshake:
		return false
	case c >= 1000 && c <= 1014, c >= 3000 && c <= 4999:
		return true
	}
	return false
}

// writeFrame writes one text frame within timeout ([server]
// write_timeout): a caller that stops reading is cut past it (the
// connection is closed), so the gateway never holds more than the frame
// being written for it.
func writeFrame(conn *websocket.Conn, timeout time.Duration, b []byte) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, b)
}
