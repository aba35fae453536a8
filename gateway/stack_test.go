//go:build !race

// The race detector's instrumentation enlarges every frame, so this test
// builds without it; .ci/run runs it on its own.

package gateway_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// envStackProbe makes the test binary serve TestRequestStackFitsEightKiB's
// requests under an 8 KiB stack limit instead of running the test.
const envStackProbe = "SLUICE_STACK_PROBE"

// TestRequestStackFitsEightKiB: no request grows its connection's
// goroutine stack past 8 KiB. net/http serves a keep-alive connection's
// requests on one goroutine whose stack keeps the size of its deepest
// request, so a stream open on that connection holds it for its whole life:
// past 8 KiB it is 16 KiB, the difference between meeting and missing the
// memory per open stream. The requests are served again in a child process
// whose stack limit is 8 KiB (debug.SetMaxStack), where going past it is a
// fatal error that names the frames; the gateway runs with its request log
// off (the store's own goroutine is not a request's) and a canned upstream.
func TestRequestStackFitsEightKiB(t *testing.T) {
	if os.Getenv(envStackProbe) != "" {
		serveUnderStackLimit(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRequestStackFitsEightKiB$", "-test.count=1")
	cmd.Env = append(os.Environ(), envStackProbe+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		i := bytes.Index(out, []byte("goroutine stack exceeds"))
		if i < 0 {
			i = 0
		}
		t.Fatalf("a request went past an 8 KiB stack: %v\n%s", err, out[i:min(len(out), i+6000)])
	}
}

// serveUnderStackLimit serves each kind of request once to warm up, then
// again with the process's stack limit at 8 KiB.
func serveUnderStackLimit(t *testing.T) {
	stream, err := os.ReadFile("../testdata/recorded/openrouter/stream-plain-openai-gpt-5.4-nano.sse")
	require.NoError(t, err)
	t.Setenv("SLUICE_BENCH_STORE_OFF", "1")
	nonstream := benchServer(t, nil, recordedAPIs(t, cannedChat, false), claudeKeyEdit())
	streamed := benchServer(t, nil, recordedAPIs(t, stream, true), claudeKeyEdit())
	// A stream of reasoning_details (signed thinking): the deepest chunks
	// the Messages translation reads.
	reasoning, err := os.ReadFile("../testdata/recorded/openrouter/stream-reasoning-claude-sonnet-4.5-google-signature.sse")
	require.NoError(t, err)
	reasoned := benchServer(t, nil, cannedStream{reasoning}, claudeKeyEdit())
	mux := http.NewServeMux()
	mux.Handle("/a/", http.StripPrefix("/a", nonstream))
	mux.Handle("/s/", http.StripPrefix("/s", streamed))
	mux.Handle("/r/", http.StripPrefix("/r", reasoned))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	requests := []struct {
		name, path, key, body string
		status                int
	}{
		{"answer", "/a/v1/chat/completions", "sk-sluice-demo-chat", benchBody + "}", 200},
		{"stream", "/s/v1/chat/completions", "sk-sluice-demo-chat", benchBody + `,"stream":true}`, 200},
		{"refusal", "/a/v1/chat/completions", "sk-sluice-demo-chat", `{"model":"x-ai/grok-4","messages":[{"role":"user","content":"hi"}]}`, 403},
		{"unknown key", "/a/v1/chat/completions", "sk-nobody", benchBody + "}", 401},
		{"invalid body", "/a/v1/chat/completions", "sk-sluice-demo-chat", `{"model":`, 400},
		// The Messages API passed natively to the marketplace, and
		// translated onto OpenAI both ways (the batch key's upstream).
		{"messages answer", "/a/v1/messages", "sk-sluice-demo-chat", messagesBody + "}", 200},
		{"messages stream", "/s/v1/messages", "sk-sluice-demo-chat", messagesBody + `,"stream":true}`, 200},
		{"messages translated answer", "/a/v1/messages", "sk-sluice-demo-batch", messagesBody + "}", 200},
		{"messages translated stream", "/s/v1/messages", "sk-sluice-demo-batch", messagesBody + `,"stream":true}`, 200},
		{"messages translated thinking stream", "/r/v1/messages", "sk-sluice-demo-batch", messagesBody + `,"stream":true}`, 200},
		// The Responses API passed natively to the marketplace, and
		// translated onto Anthropic both ways.
		{"responses answer", "/a/v1/responses", "sk-sluice-demo-chat", responsesBody + "}", 200},
		{"responses stream", "/s/v1/responses", "sk-sluice-demo-chat", responsesBody + `,"stream":true}`, 200},
		{"responses translated answer", "/a/v1/responses", secretClaude, claudeResponses + "}", 200},
		{"responses translated stream", "/s/v1/responses", secretClaude, claudeResponses + `,"stream":true}`, 200},
	}
	serve := func(path, key, body string) int {
		// By hand on a raw connection: the client side runs no goroutine
		// that the limit would catch.
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, rq := range requests {
		require.Equal(t, rq.status, serve(rq.path, rq.key, rq.body), rq.name)
	}
	debug.SetMaxStack(8 << 10)
	for _, rq := range requests {
		done := make(chan int)
		go func() { done <- serve(rq.path, rq.key, rq.body) }()
		require.Equal(t, rq.status, <-done, rq.name)
	}
}
