//go:build !race

// The race detector's instrumentation enlarges every frame, so this test
// builds without it; .ci/run runs it on its own.

package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// envStackProbe makes the test binary serve TestRequestStackFitsEightKiB's
// requests (serveUnderStackLimit) instead of running the test.
const envStackProbe = "SLUICE_STACK_PROBE"

// envStackReserve overrides, in the child, the stack the requests leave to
// the runtime (bytes): raise it until the test fails to measure the
// headroom of the deepest request.
const envStackReserve = "SLUICE_STACK_RESERVE"

const (
	// stackLimit is what a connection's goroutine may grow to.
	stackLimit = 8 << 10
	// runtimeReserve is the part of it the request path leaves to the
	// runtime's own frames, which run on the same stack where the request
	// is deepest: an allocation that assists the collector or sweeps
	// (runtime.gcAssistAlloc, deductSweepCredit → ... → (*spanSet).push),
	// a span refill. So the request's own deepest frame chain must fit in
	// stackLimit − runtimeReserve (7 KiB, less the stack guard).
	runtimeReserve = 1 << 10
)

// TestRequestStackFitsEightKiB: no request grows its connection's
// goroutine stack past 8 KiB, with runtimeReserve of it to spare for the
// runtime. net/http serves a keep-alive connection's requests on one
// goroutine whose stack keeps the size of its deepest request, so a stream
// open on that connection holds it for its whole life: past 8 KiB it is
// 16 KiB, the difference between meeting and missing the memory per open
// stream.
//
// The requests are served again in a child process, the gateway with its
// request log off and a canned upstream, the collector off (after one
// full collection, so no sweep is left): no assist, sweep or stack shrink
// happens, so the outcome depends on the frames alone, not on when the
// collector runs. Each request's goroutine is first grown to 8 KiB, then
// the request runs below runtimeReserve bytes of frames (serveReserving),
// in place of the runtime's frames that may land on its deepest point; a
// stack that grew again meanwhile moved, and the child fails naming the
// request. SLUICE_STACK_RESERVE measures the headroom: the largest reserve
// that passes. The limit (debug.SetMaxStack) is not used: it is the whole
// process's, and a store's own goroutine (the budget ledger's SQLite
// flush) going past it failed the test for no request's fault.
func TestRequestStackFitsEightKiB(t *testing.T) {
	if os.Getenv(envStackProbe) != "" {
		serveUnderStackLimit(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRequestStackFitsEightKiB$", "-test.count=1")
	// One P: with two, a request's goroutine may run on a P whose
	// allocation cache is empty and refill it at its deepest point (a
	// runtime frame chain the test cannot tell from the request's own),
	// which failed about one run in four at the same code; with one, the
	// outcome is the frames' alone, run after run.
	cmd.Env = append(os.Environ(), envStackProbe+"=1", "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("a request went past %d bytes of stack (of %d, %d left to the runtime): %v\n%s",
			stackLimit-runtimeReserve, stackLimit, runtimeReserve, err, out[:min(len(out), 6000)])
	}
}

// serveReserving serves h below at least reserve bytes of stack (less
// than a frame of serveBelow more) and reports whether the goroutine's
// stack grew past stackLimit meanwhile. It first grows the stack to
// stackLimit, so that it does not move while serveBelow measures how far
// down it is; with the collector off nothing shrinks it, so it moves again
// only when a frame needs more than stackLimit.
func serveReserving(reserve int, h http.Handler, w http.ResponseWriter, r *http.Request) (grew bool) {
	growStack()
	var top byte
	at := uintptr(unsafe.Pointer(&top))
	serveBelow(at, uintptr(reserve), h, w, r)
	return uintptr(unsafe.Pointer(&top)) != at
}

// serveBelow calls itself until its frames take reserve bytes below top,
// then serves h.
//
//go:noinline
func serveBelow(top, reserve uintptr, h http.Handler, w http.ResponseWriter, r *http.Request) {
	var block [64]byte
	keepOnStack(block[:])
	if top-uintptr(unsafe.Pointer(&block)) < reserve {
		serveBelow(top, reserve, h, w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// growStack takes a frame that a 4 KiB stack cannot hold, and an 8 KiB
// one can.
//
//go:noinline
func growStack() {
	var frame [5 << 10]byte
	keepOnStack(frame[:])
}

//go:noinline
func keepOnStack(b []byte) { b[0]++ }

// serveUnderStackLimit serves each kind of request once to warm up, then
// again with the collector off,
// each below the reserve on a stack grown to stackLimit, and fails on one
// whose stack grew past it.
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
	reserve := runtimeReserve
	if v := os.Getenv(envStackReserve); v != "" {
		reserve, err = strconv.Atoi(v)
		require.NoError(t, err, envStackReserve)
	}
	var grewMu sync.Mutex
	var grew []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serveReserving(reserve, mux, w, r) {
			grewMu.Lock()
			grew = append(grew, r.URL.Path)
			grewMu.Unlock()
		}
	}))
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
	// Once to warm up (first-time initialisation is not a request's path).
	for _, rq := range requests {
		require.Equal(t, rq.status, serve(rq.path, rq.key, rq.body), rq.name)
	}
	grew = nil
	// No collection from here on: one now finishes the last cycle's sweep.
	debug.SetGCPercent(-1)
	runtime.GC()
	for _, rq := range requests {
		require.Equal(t, rq.status, serve(rq.path, rq.key, rq.body), rq.name)
		grewMu.Lock()
		require.Empty(t, grew, "%s: the stack grew past %d bytes below a reserve of %d", rq.name, stackLimit, reserve)
		grewMu.Unlock()
	}
}
