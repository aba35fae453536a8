package simulator

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testConfig is a catalog whose endpoints differ on every ranking key, so
// each knob picks a different provider.
func testConfig() Config {
	return Config{Models: []Model{
		{Slug: "acme/alpha", ContextWindow: 1000, Endpoints: []Endpoint{
			{Provider: "cheap", PriceIn: 0.1, PriceOut: 0.1, ThroughputTPS: 10, LatencyMs: 900},
			{Provider: "fast", PriceIn: 5, PriceOut: 5, ThroughputTPS: 500, LatencyMs: 600},
			{Provider: "quick", PriceIn: 3, PriceOut: 3, ThroughputTPS: 50, LatencyMs: 50},
			{Provider: "multi", Tag: "one", PriceIn: 1, PriceOut: 1, ThroughputTPS: 20, LatencyMs: 700},
			{Provider: "multi", Tag: "two", PriceIn: 2, PriceOut: 2, ThroughputTPS: 30, LatencyMs: 800},
		}},
		{Slug: "acme/beta", ContextWindow: 1000, Endpoints: []Endpoint{
			{Provider: "quick", PriceIn: 3, PriceOut: 3, ThroughputTPS: 50, LatencyMs: 50},
			{Provider: "cheap", PriceIn: 0.2, PriceOut: 0.2, ThroughputTPS: 10, LatencyMs: 900},
		}},
		{Slug: "acme/gamma", ContextWindow: 1000, Endpoints: []Endpoint{
			{Provider: "fast", PriceIn: 5, PriceOut: 5, ThroughputTPS: 500, LatencyMs: 600},
		}},
		{Slug: "openai/gpt-x", ContextWindow: 1000, Endpoints: []Endpoint{
			{Provider: "openai", PriceIn: 1, PriceOut: 2}, {Provider: "azure", PriceIn: 1, PriceOut: 2},
		}},
		{Slug: "anthropic/claude-x-1.5", ContextWindow: 1000, Endpoints: []Endpoint{
			{Provider: "anthropic", PriceIn: 1, PriceOut: 2}, {Provider: "amazon-bedrock", PriceIn: 1, PriceOut: 2},
		}},
	}}
}

func startSim(t *testing.T, cfg Config) *Server {
	t.Helper()
	s := New(cfg)
	_, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

type reply struct {
	status int
	header http.Header
	body   []byte
	err    error // read error (cut connections)
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

// post sends body to url with headers (key, value pairs) and a 5s ceiling.
func post(t *testing.T, url, body string, hdr ...string) reply {
	t.Helper()
	return postCtx(t, context.Background(), url, body, hdr...)
}

func postCtx(t *testing.T, ctx context.Context, url, body string, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		}
	}
	if cur.data != "" {
		out = append(out, cur)
	}
	return out
}

const hello = `"messages":[{"role":"user","content":"hello there"}]`

type faultCase struct {
	ok    bool
	input string
	want  string // canonical form or error substring
}

func loadFaultCorpus(t testing.TB) []faultCase {
	raw, err := os.ReadFile("testdata/faults.txt")
	require.NoError(t, err)
	var out []faultCase
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, want, ok := strings.Cut(line[1:], "|")
		require.True(t, ok, "corpus line %q", line)
		out = append(out, faultCase{ok: line[0] == '+', input: strings.TrimSpace(in), want: strings.TrimSpace(want)})
	}
	return out
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}
