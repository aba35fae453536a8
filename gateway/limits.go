package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/gateway/apierr"
)

// limit applies what every request gets before its handler runs: its
// answer says nosniff (an upstream's error body or a page is never sniffed
// into something else), and its body must arrive within [server]
// body_read_timeout of its headers. The deadline is the connection's read
// deadline, set through the ResponseController; net/http clears it when
// the body has been read to its end (before its own read that notices a
// caller leaving), so it never bounds a stream's answer, as the server's
// ReadTimeout would. The recoverer calls it: a middleware of its own would
// be one more frame under every stream (stack_test.go).
//
//go:noinline
func (s *Server) limit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if d := s.snap.Load().Config.Server.BodyReadTimeout.Duration; d > 0 && r.Body != nil && r.Body != http.NoBody {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	}
}

// renewWriteDeadline moves the caller connection's write deadline to
// [server] write_timeout from now, unless the one set last is still at
// least three quarters away (a deadline is a runtime timer; a stream's
// chunks come far faster than it needs moving). A write that would block
// past it fails: a caller that stopped reading is cut, and its row says so.
//
//go:noinline
func (sa *streamAnswer) renewWriteDeadline() {
	if sa.writeTimeout <= 0 {
		return
	}
	now := time.Now()
	if sa.deadline.Sub(now) > sa.writeTimeout*3/4 {
		return
	}
	sa.deadline = now.Add(sa.writeTimeout)
	_ = sa.rc.SetWriteDeadline(sa.deadline)
}

// FramingListener wraps a listener so that a request declaring both
// Content-Length and Transfer-Encoding (ambiguous framing, the shape of a
// request-smuggling attempt: net/http would drop the Content-Length and
// keep the connection) is answered 400 ambiguous_framing and its
// connection closed before any handler sees it.
func FramingListener(ln net.Listener) net.Listener { return framingListener{ln} }

type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConn follows HTTP/1.1 framing over the bytes the server reads:
// each request's header block, then its body (a Content-Length's bytes, or
// chunks), then the next request.
type framingConn struct {
	net.Conn
	line []byte // the header or chunk-size line being read
	// state: in a header block; in a body of remaining bytes; reading a
	// chunk-size line; in a chunk's data (remaining, then its CRLF); in
	// the trailer after the last chunk.
	state     int
	remaining int64
	cl, te    bool
	chunked   bool
	inBlock   bool // a line of the header block was read
	failed    bool
}

const (
	fHeaders = iota
	fBody
	fChunkSize
	fChunkData
	fTrailer
)

// maxFramingLine bounds a line the framing check buffers; longer header
// lines are net/http's to refuse (431).
const maxFramingLine = 8 << 10

func (c *framingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.failed || n == 0 {
		return n, err
	}
	if c.scan(p[:n]) {
		c.failed = true
		e := apierr.New(apierr.CodeAmbiguousFraming, "the request has both Content-Length and Transfer-Encoding; send one")
		body := e.Body()
		_ = c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = fmt.Fprintf(c.Conn, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
			e.Status(), http.StatusText(e.Status()), len(body), body)
		_ = c.Conn.Close()
		return 0, errAmbiguousFraming
	}
	return n, err
}

var errAmbiguousFraming = errors.New("ambiguous request framing")

// scan advances the framing over b; it reports a header block that ended
// with both Content-Length and Transfer-Encoding.
func (c *framingConn) scan(b []byte) bool {
	for len(b) > 0 {
		switch c.state {
		case fBody, fChunkData:
			if c.remaining > 0 {
				k := min(int64(len(b)), c.remaining)
				c.remaining -= k
				b = b[k:]
				continue
			}
			if c.state == fBody {
				c.state = fHeaders
				continue
			}
			// A chunk's data ends with CRLF: read it as an (empty) line.
			c.state = fChunkSize
			c.remaining = -1 // the next line is that CRLF, not a size
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(c.line) < maxFramingLine {
				c.line = append(c.line, b[:min(len(b), maxFramingLine-len(c.line))]...)
			}
			return false
		}
		if len(c.line) < maxFramingLine {
			c.line = append(c.line, b[:min(i, maxFramingLine-len(c.line))]...)
		}
		b = b[i+1:]
		line := bytes.TrimRight(c.line, "\r")
		c.line = c.line[:0] // line stays valid: nothing is appended before endLine returns
		if c.endLine(line) {
			return true
		}
	}
	return false
}

// endLine takes one whole line (without its CRLF).
func (c *framingConn) endLine(line []byte) bool {
	switch c.state {
	case fHeaders:
		if len(line) == 0 {
			if !c.inBlock {
				return false // blank lines before a request line are ignored
			}
			c.inBlock = false
			if c.cl && c.te {
				return true
			}
			switch {
			case c.chunked:
				c.state, c.remaining = fChunkSize, 0
			case c.remaining > 0:
				c.state = fBody
			}
			c.cl, c.te, c.chunked = false, false, false
			return false
		}
		if !c.inBlock {
			c.inBlock, c.remaining = true, 0
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return false
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			c.cl = true
			c.remaining, _ = strconv.ParseInt(string(value), 10, 64)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			c.te = true
			c.chunked = c.chunked || bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		}
	case fChunkSize:
		if c.remaining < 0 { // the CRLF after a chunk's data
			c.remaining = 0
			return false
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil {
			return false // net/http refuses it
		}
		if n == 0 {
			c.state = fTrailer
		} else {
			c.state, c.remaining = fChunkData, n
		}
	case fTrailer:
		if len(line) == 0 {
			c.state = fHeaders
		}
	}
	return false
}
