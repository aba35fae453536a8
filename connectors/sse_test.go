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
