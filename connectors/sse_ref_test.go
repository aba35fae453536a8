package connectors

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// The event-stream reader as it was before it gave its buffer back between
// events: the reference the fuzz test holds the current reader to.

// refSSEReader reads server-sent events. It reuses its buffers: the slices an
// event returns are valid until the next call to Next.
type refSSEReader struct {
	r     *bufio.Reader
	event []byte
	data  []byte
}

// refSSEBuffers recycles the readers' 32 KiB buffers: allocating and zeroing
// one per stream was a measurable share of a short stream's cost.
var refSSEBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// newRefSSEReader returns a reader over an event stream. Call Release when done
// with it to recycle its buffer.
func newRefSSEReader(r io.Reader) *refSSEReader {
	br := refSSEBuffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &refSSEReader{r: br}
}

// Release recycles the reader's buffer; the reader, and every slice it
// returned, must not be used after.
func (s *refSSEReader) Release() {
	if s.r == nil {
		return
	}
	s.r.Reset(nil)
	refSSEBuffers.Put(s.r)
	s.r = nil
}

// Next returns the next event's name (empty when the stream gave none) and its
// data (multiple data lines joined by "\n"). It returns io.EOF at a clean end
// and io.ErrUnexpectedEOF when the stream ends inside an event.
func (s *refSSEReader) Next() (event, data []byte, err error) {
	s.event = s.event[:0]
	s.data = s.data[:0]
	haveData, haveAny := false, false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && (haveData || haveAny) {
				if haveData {
					// A final event without its blank line: deliver it; the
					// caller's protocol decides whether the end was clean.
					return s.event, s.data, nil
				}
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if haveData {
				return s.event, s.data, nil
			}
			s.event = s.event[:0]
			haveAny = false
			continue
		}
		haveAny = true
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			s.event = append(s.event[:0], value...)
		case "data":
			if haveData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			haveData = true
		}
	}
}

// readLine returns one line without its terminator: \n or \r\n. A lone \r
// is not a line break here (upstreams send \n); it stays in the data.
func (s *refSSEReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Rare: a line larger than the buffer. Accumulate it.
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if len(buf) > maxSSELine {
				return nil, ErrSSELineTooLong
			}
			line, err = s.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		if len(buf) > maxSSELine+2 { // the bound applies to the whole line
			return nil, ErrSSELineTooLong
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return bytes.TrimRight(line, "\r\n"), nil
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
