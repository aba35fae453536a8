package connectors

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type sseEvent struct{ event, data string }

func readAll(t testing.TB, in string) ([]sseEvent, error) {
	rd := NewSSEReader(strings.NewReader(in))
	var out []sseEvent
	for i := 0; i < 1_000_000; i++ {
		ev, data, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, sseEvent{string(ev), string(data)})
	}
	t.Fatal("reader did not terminate")
	return nil, nil
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"openai chunks", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []sseEvent{{"", `{"a":1}`}, {"", "[DONE]"}}, nil},
		{"named events and CRLF", "event: message_start\r\ndata: {}\r\n\r\nevent: ping\ndata: {\"type\":\"ping\"}\n\n", []sseEvent{{"message_start", "{}"}, {"ping", `{"type":"ping"}`}}, nil},
		{"comments and keep-alives", ": OPENROUTER PROCESSING\n\ndata: x\n\n", []sseEvent{{"", "x"}}, nil},
		{"multi-line data", "data: a\ndata: b\n\n", []sseEvent{{"", "a\nb"}}, nil},
		{"no space after colon", "data:x\n\n", []sseEvent{{"", "x"}}, nil},
		{"final event without blank line", "data: last", []sseEvent{{"", "last"}}, nil},
		{"event name without data is dropped", "event: lonely\n\ndata: y\n\n", []sseEvent{{"", "y"}}, nil},
		{"cut inside an event", "data: a\n\nevent: x\n", []sseEvent{{"", "a"}}, io.ErrUnexpectedEOF},
		{"empty", "", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, tc.in)
			require.Equal(t, tc.want, got)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestSSELineBound(t *testing.T) {
	_, err := readAll(t, "data: "+strings.Repeat("x", maxSSELine+10)+"\n\n")
	require.ErrorIs(t, err, ErrSSELineTooLong)
	got, err := readAll(t, "data: "+strings.Repeat("y", 100_000)+"\n\n")
	require.NoError(t, err)
	require.Len(t, got[0].data, 100_000, "lines longer than the buffer are accumulated")
}

// FuzzSSEReader: any input ends, within a bounded number of events, in a
// clean end or an error, without panicking.
func FuzzSSEReader(f *testing.F) {
	files, _ := filepath.Glob("../testdata/connectors/*/*/stream.sse")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(":\n\nevent: e\r\ndata: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := NewSSEReader(bytes.NewReader(in))
		for i := 0; ; i++ {
			require.Less(t, i, len(in)+2, "more events than input bytes")
			_, data, err := rd.Next()
			if err != nil {
				return
			}
			require.LessOrEqual(t, len(data), len(in))
		}
	})
}

func BenchmarkSSEReader(b *testing.B) {
	chunk := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hello"}}]}` + "\n\n"
	stream := strings.Repeat(chunk, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		rd := NewSSEReader(strings.NewReader(stream))
		for {
			if _, _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}

// BenchmarkRelayOpenAIStream reads an OpenAI-shaped stream of 1000 text
// chunks and relays each through the OpenRouter translator to a writer: the
// per-chunk cost of the gateway's stream relay. Each chunk names its
// provider, as the marketplace's do, so each is stripped of it. allocs/op ÷
// 1000 is the allocations per chunk.
func BenchmarkRelayOpenAIStream(b *testing.B) {
	chunk := `data: {"id":"x","provider":"OpenAI","object":"chat.completion.chunk","model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}` + "\n\n"
	stream := strings.Repeat(chunk, 1000) + "data: [DONE]\n\n"
	conn := newOpenRouter()
	emit := func(p []byte) error { _, err := io.Discard.Write(p); return err }
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		rd := NewSSEReader(strings.NewReader(stream))
		st := conn.NewStream(nil)
		for {
			ev, data, err := rd.Next()
			if err != nil {
				break
			}
			if done, _ := st.Event(ev, data, emit); done {
				break
			}
		}
	}
}

// chunkedReader hands out its input in pieces of the sizes it is given, in
// turn (a zero size is a read that returns nothing, never twice running),
// like a network connection that delivers a stream in arbitrary packets.
type chunkedReader struct {
	in    []byte
	sizes []byte
	i     int
	empty bool // the last read returned nothing
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := len(c.in)
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)])
		c.i++
	}
	if n == 0 && c.empty {
		n = 1
	}
	c.empty = n == 0
	n = min(n, len(p), len(c.in))
	copy(p, c.in[:n])
	c.in = c.in[n:]
	return n, nil
}

// FuzzSSEReaderMatchesReference: the reader that gives its buffer back
// between events reads every input, delivered in any packet sizes, exactly
// as the plain buffered reader it replaced did.
func FuzzSSEReaderMatchesReference(f *testing.F) {
	files, _ := filepath.Glob("../testdata/connectors/*/*/stream.sse")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, []byte{1, 7, 200, 3})
			f.Add(b, []byte{255})
		}
	}
	f.Add([]byte("data: a\ndata: b\n\nevent: x\r\ndata:y\r\n\r\n: c\n\ndata"), []byte{2})
	f.Add([]byte("data: "+strings.Repeat("z", 40_000)+"\n\ndata: [DONE]\n\n"), []byte{0, 255, 100})
	f.Add([]byte("event: e\n: comment\ndata: x\r\r\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		type step struct {
			event, data string
			err         error
		}
		read := func(next func() ([]byte, []byte, error)) []step {
			var out []step
			for i := 0; i <= len(in)+1; i++ {
				ev, data, err := next()
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
						err = errors.New("other")
					}
					return append(out, step{err: err})
				}
				out = append(out, step{event: string(ev), data: string(data)})
			}
			t.Fatal("more events than input bytes")
			return nil
		}
		ref := newRefSSEReader(bytes.NewReader(in))
		defer ref.Release()
		cur := NewSSEReader(&chunkedReader{in: in, sizes: sizes})
		defer cur.Release()
		require.Equal(t, read(ref.Next), read(cur.Next))
	})
}

// TestSSEReaderHoldsNoBufferBetweenEvents: once an event is parsed and the
// stream has nothing more buffered, the reader has given its buffer back.
func TestSSEReaderHoldsNoBufferBetweenEvents(t *testing.T) {
	pr, pw := io.Pipe()
	rd := NewSSEReader(pr)
	defer rd.Release()
	go func() {
		_, _ = pw.Write([]byte("data: {\"a\":1}\n\n"))
		_, _ = pw.Write([]byte("data: {\"b\":" + strings.Repeat("2", 3000) + "}\n\n"))
		_ = pw.Close()
	}()
	_, data, err := rd.Next()
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(data))
	require.NotNil(t, rd.buf, "the event's bytes are in the buffer until the next call")
	_, data, err = rd.Next()
	require.NoError(t, err)
	require.Len(t, data, 3006, "an event longer than the waiting array arrives whole")
	_, _, err = rd.Next()
	require.ErrorIs(t, err, io.EOF)
	require.Nil(t, rd.buf, "waiting for the stream holds no buffer")
}
