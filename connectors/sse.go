package connectors

import (
	"bytes"
	"io"
	"sync"
)

// SSEReader reads server-sent events. It holds a read buffer only while an
// event is in flight: once every byte it has read is parsed, the buffer goes
// back to a shared pool and the reader waits for the upstream's next bytes
// in a small array of its own. An open stream that is between events — most
// of a model's stream is waiting for the next token — so costs a few hundred
// bytes, not a buffer. The slices an event returns are valid until the next
// call to Next or Release.
type SSEReader struct {
	src io.Reader
	err error // the source's error, sticky once seen

	// buf[start:w] is read and not yet consumed; buf[start:scan] are the
	// lines of the event being assembled; buf[scan:seen] holds no line
	// break (so a long line arriving in small reads is searched once).
	// buf is nil between events.
	buf                  []byte
	start, scan, seen, w int
	evFrom, evTo         int // the event name, relative to start; evFrom < 0 when none
	dataFrom, dataTo     int // the first data line's value, relative to start
	dataLines            int
	data                 []byte // the joined data when an event has several lines
	wait                 [sseWaitSize]byte
}

// Sizes of the reader's memory.
const (
	// maxSSELine bounds one line of an event stream (a whole data payload);
	// an event, all its lines together, may be at most twice that.
	maxSSELine = 4 << 20
	// sseBufferSize is a pooled buffer's size: a burst of events (an
	// upstream that answers fast) is read and parsed in one go.
	sseBufferSize = 16 << 10
	// sseWaitSize is what a reader holds while it waits: one read of at
	// most this many bytes, which a typical chunk (200–500 bytes) fits.
	sseWaitSize = 512
)

// sseBuffers holds the buffers of events in flight; a reader takes one
// when bytes arrive and gives it back when they are all parsed.
var sseBuffers = sync.Pool{New: func() any { b := make([]byte, sseBufferSize); return &b }}

// NewSSEReader returns a reader over an event stream. Call Release when done
// with it to recycle its buffer.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{src: r}
}

// Release recycles the reader's buffer; the reader, and every slice it
// returned, must not be used after.
func (s *SSEReader) Release() {
	s.putBuffer()
	s.src, s.err = nil, errReleased
}

// errReleased is what a released reader returns.
var errReleased = errSSE("sse: reader used after Release")

// ErrSSELineTooLong is returned when one line exceeds the reader's bound.
var ErrSSELineTooLong = errSSE("sse: line longer than 4 MiB")

// errSSE is an error of the event-stream reader.
type errSSE string

// Error implements error.
func (e errSSE) Error() string { return string(e) }

// putBuffer gives the buffer back to the pool (an oversized one, grown for
// a long line, is left to the collector).
func (s *SSEReader) putBuffer() {
	if s.buf == nil {
		return
	}
	if cap(s.buf) == sseBufferSize {
		b := s.buf[:sseBufferSize]
		sseBuffers.Put(&b)
	}
	s.buf, s.start, s.scan, s.seen, s.w = nil, 0, 0, 0, 0
}

// Next returns the next event's name (empty when the stream gave none) and its
// data (multiple data lines joined by "\n"). It returns io.EOF at a clean end
// and io.ErrUnexpectedEOF when the stream ends inside an event.
func (s *SSEReader) Next() (event, data []byte, err error) {
	s.start = s.scan // the previous event is consumed
	s.resetEvent()
	haveAny := false
	for {
		line, ok := s.nextLine()
		if !ok {
			if err := s.fill(); err != nil {
				if err != io.EOF {
					return nil, nil, err
				}
				if s.scan < s.w {
					// The stream ended inside a line: that line is the last.
					line = bytes.TrimRight(s.buf[s.scan:s.w], "\r\n")
					s.scan, s.seen = s.w, s.w
					if len(line) > maxSSELine {
						return nil, nil, ErrSSELineTooLong
					}
					if len(line) > 0 {
						haveAny = true
						s.field(line)
					}
				}
				if s.dataLines > 0 {
					// A final event without its blank line: deliver it; the
					// caller's protocol decides whether the end was clean.
					return s.event()
				}
				if haveAny {
					return nil, nil, io.ErrUnexpectedEOF
				}
				return nil, nil, io.EOF
			}
			continue
		}
		if len(line) > maxSSELine {
			return nil, nil, ErrSSELineTooLong
		}
		if len(line) == 0 {
			if s.dataLines > 0 {
				return s.event()
			}
			// A block without data (a keep-alive, a lone event name) is
			// dropped, and its bytes with it.
			s.start = s.scan
			s.resetEvent()
			haveAny = false
			continue
		}
		haveAny = true
		if line[0] == ':' {
			if s.dataLines == 0 && s.evFrom < 0 {
				s.start = s.scan // nothing kept yet: a comment need not stay buffered
			}
			continue
		}
		s.field(line)
	}
}

func (s *SSEReader) resetEvent() {
	s.evFrom, s.evTo, s.dataLines = -1, -1, 0
}

// nextLine returns the next whole line in the buffer without its terminator
// (\n or \r\n; a lone \r is not a line break here, upstreams send \n).
func (s *SSEReader) nextLine() ([]byte, bool) {
	if s.buf == nil {
		return nil, false
	}
	i := bytes.IndexByte(s.buf[s.seen:s.w], '\n')
	if i < 0 {
		s.seen = s.w
		return nil, false
	}
	line := s.buf[s.scan : s.seen+i]
	s.scan = s.seen + i + 1
	s.seen = s.scan
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, true
}

// field records one line of the event being assembled: its name or a data
// line, by their places in the buffer (which may move as it fills).
func (s *SSEReader) field(line []byte) {
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		s.evFrom, s.evTo = s.offset(value)
	case "data":
		if s.dataLines == 0 {
			s.dataFrom, s.dataTo = s.offset(value)
		}
		s.dataLines++
	}
}

// offset places a slice of the buffer relative to the event's start. A nil
// value (a field without a colon) is empty, at the event's start.
func (s *SSEReader) offset(v []byte) (from, to int) {
	if len(v) == 0 {
		return 0, 0
	}
	from = cap(s.buf[s.start:]) - cap(v)
	return from, from + len(v)
}

// event returns the assembled event. A single data line (what upstreams
// send) is returned in place; several are joined into s.data.
func (s *SSEReader) event() (event, data []byte, err error) {
	ev := s.buf[s.start:s.scan]
	if s.evFrom >= 0 {
		event = ev[s.evFrom:s.evTo:s.evTo]
	}
	if s.dataLines == 1 {
		return event, ev[s.dataFrom:s.dataTo:s.dataTo], nil
	}
	// Rare: several data lines. Walk the event's lines again to join them.
	s.data = s.data[:0]
	n := 0
	for rest := ev; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if len(line) == 0 || line[0] == ':' || string(name) != "data" {
			continue
		}
		if n > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		n++
	}
	return event, s.data, nil
}

// fill reads more of the stream. With nothing buffered it gives the buffer
// back and waits in the reader's own small array; bytes that arrive are
// then copied into a pooled buffer. With an event partly read it keeps the
// buffer (its bytes are in flight), moving the event to the front or
// growing the buffer when full. It returns the source's error, io.EOF at the
// end.
func (s *SSEReader) fill() error {
	if s.err != nil {
		return s.err
	}
	if s.start == s.w {
		s.putBuffer()
		n, err := s.read(s.wait[:])
		if n > 0 {
			bp := sseBuffers.Get().(*[]byte)
			s.buf = (*bp)[:cap(*bp)]
			s.start, s.scan, s.seen, s.w = 0, 0, 0, copy(s.buf, s.wait[:n])
		}
		if err != nil && n == 0 {
			return err
		}
		return nil
	}
	if s.w == len(s.buf) {
		if s.start > 0 {
			s.w = copy(s.buf, s.buf[s.start:s.w])
			s.scan -= s.start
			s.seen -= s.start
			s.start = 0
		} else {
			if len(s.buf) >= 2*maxSSELine || s.w-s.scan > maxSSELine {
				return ErrSSELineTooLong
			}
			grown := make([]byte, 2*len(s.buf))
			copy(grown, s.buf[:s.w])
			s.putBuffer()
			s.buf, s.w = grown, len(grown)/2
		}
	}
	n, err := s.read(s.buf[s.w:])
	s.w += n
	if err != nil && n == 0 {
		return err
	}
	if s.w-s.scan > maxSSELine+2 && bytes.IndexByte(s.buf[s.seen:s.w], '\n') < 0 {
		return ErrSSELineTooLong
	}
	return nil
}

// read reads from the source, remembering its error. Like bufio, it gives
// up after many reads that return nothing.
func (s *SSEReader) read(p []byte) (int, error) {
	for i := 0; i < 100; i++ {
		n, err := s.src.Read(p)
		if err != nil {
			s.err = err
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	s.err = io.ErrNoProgress
	return 0, s.err
}
