package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestMain lets a test run this package's binary as the real sluice command
// (SLUICE_TEST_RUN_MAIN=1), so process-level behaviour — signals, exit
// codes, listeners — is tested on the real main.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(chtest.Main(m)) // stops the shared ClickHouse server of the traffic cases
}

type served struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	stderr *lockedBuffer
	exited chan error
}

// lockedBuffer is the child's stderr: written by exec's copier while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// serveSubprocess starts `sluice serve` on a copy of the demo config whose
// upstreams are the simulator; serverTOML lines are added to its [server]
// table (shutdown_timeout is 10s unless one of them sets it).
func serveSubprocess(t *testing.T, sim *simulator.Server, serverTOML ...string) *served {
	t.Helper()
	if !slices.ContainsFunc(serverTOML, func(l string) bool { return strings.HasPrefix(l, "metrics_listen") }) {
		serverTOML = append(serverTOML, `metrics_listen = "127.0.0.1:0"`) // never the default port: tests run side by side
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	server := append([]string{fmt.Sprintf("listen = %q", addr)}, serverTOML...)
	if !strings.Contains(strings.Join(serverTOML, "\n"), "shutdown_timeout") {
		server = append(server, `shutdown_timeout = "10s"`)
	}
	dir := demoWith(t, func(s string) string {
		s = strings.Replace(s, `listen = "127.0.0.1:8080"`, strings.Join(server, "\n"), 1)
		for name, kind := range map[string]string{"market": "openrouter", "edge": "vercel", "openai": "openai", "anthropic": "anthropic"} {
			s = strings.Replace(s, fmt.Sprintf("name = %q\nconnector = %q\n", name, kind), fmt.Sprintf("name = %q\nconnector = %q\nbase_url = %q\n", name, kind, sim.URL(kind)), 1)
		}
		return strings.Replace(s, "[store]\n", "[store]\nflush_interval = \"5s\"\n", 1) // the flush must come from shutdown
	})

	cmd := exec.Command(os.Args[0], "serve", "--config", dir)
	cmd.Env = append(os.Environ(), "SLUICE_TEST_RUN_MAIN=1", "SLUICE_ADMIN_TOKEN=")
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	require.NoError(t, cmd.Start())
	sv := &served{cmd: cmd, addr: addr, dir: dir, stderr: errb, exited: make(chan error, 1)}
	go func() { sv.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "sluice serve did not come up: %s", errb.String())
		time.Sleep(50 * time.Millisecond)
	}
	return sv
}

func slowSim(t *testing.T, chunkDelay time.Duration) *simulator.Server {
	t.Helper()
	cat, diags := guardrails.LoadCatalog("../../testdata/demo")
	require.Empty(t, diags)
	cfg := simulator.FromCatalog(cat)
	cfg.ChunkDelay = chunkDelay
	sim := simulator.New(cfg)
	_, err := sim.Start()
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	return sim
}

// startStream begins a stream and returns once its first chunk arrived;
// the returned channel yields the whole body when the stream ends.
func startStream(t *testing.T, addr, fault string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"openai/gpt-4o","stream":true,"messages":[{"role":"user","content":"a long answer please"}]}`))
	req.Header.Set("Authorization", "Bearer sk-sluice-demo-chat")
	if fault != "" {
		req.Header.Set("X-Sim-Fault", fault)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: "), first)
	out := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		rest, _ := io.ReadAll(rd)
		out <- first + string(rest)
	}()
	return out
}

// TestSIGTERMDrainsStreams: SIGTERM with a stream in flight stops accepting
// connections, lets the stream complete, flushes the request log and exits 0.
func TestSIGTERMDrainsStreams(t *testing.T) {
	sim := slowSim(t, 150*time.Millisecond)
	sv := serveSubprocess(t, sim)
	body := startStream(t, sv.addr, "")
	require.NoError(t, sv.cmd.Process.Signal(syscall.SIGTERM))

	// New connections are refused once draining started (bounded wait).
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", sv.addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		require.True(t, time.Now().Before(deadline), "still accepting connections after SIGTERM")
		time.Sleep(20 * time.Millisecond)
	}
	// A SIGHUP (a reload request) while draining is not a second stop.
	require.NoError(t, sv.cmd.Process.Signal(syscall.SIGHUP))
	select {
	case b := <-body:
		require.True(t, strings.HasSuffix(b, "data: [DONE]\n\n"), "the in-flight stream completes: %q", b)
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not complete")
	}
	select {
	case err := <-sv.exited:
		require.NoError(t, err, "exit 0; stderr:\n%s", sv.stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("sluice did not exit after draining")
	}
	// The request log was flushed on the way out (flush_interval is 5s).
	store, err := requestlog.OpenSQLite(filepath.Join(sv.dir, "data", "requests.db"))
	require.NoError(t, err)
	defer store.Close()
	page, err := store.Query(context.Background(), requestlog.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Rows, 1)
	require.Equal(t, 200, page.Rows[0].Status)
	require.True(t, page.Rows[0].Stream)
}

// TestSecondSIGTERMForcesExit: a stream that would never end keeps the
// drain waiting; a second SIGTERM exits at once.
func TestSecondSIGTERMForcesExit(t *testing.T) {
	sim := slowSim(t, 0)
	sv := serveSubprocess(t, sim)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		body := startStream(t, sv.addr, "slow_stream")
		<-body
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, sv.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(300 * time.Millisecond)
	select {
	case <-sv.exited:
		t.Fatal("exited while a stream was still draining")
	default:
	}
	require.NoError(t, sv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-sv.exited:
		require.Error(t, err, "a forced exit is not a clean one")
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGTERM did not force an exit")
	}
	require.Contains(t, sv.stderr.String(), "second signal")
	wg.Wait()
}

// An API's streaming request, and how its stream reads when the server cut
// it at shutdown.
type cutStream struct {
	api, path, body string
	// header carries the key.
	header string
	// whole is what only a stream that completed carries.
	whole string
}

var cutStreams = []cutStream{
	{"chat", "/v1/chat/completions", `{"model":"openai/gpt-4o","stream":true,"messages":[{"role":"user","content":"a long answer please"}]}`,
		"Authorization", "data: [DONE]"},
	{"messages", "/v1/messages", `{"model":"openai/gpt-4o","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"a long answer please"}]}`,
		"X-Api-Key", "message_stop"},
	{"responses", "/v1/responses", `{"model":"openai/gpt-4o","stream":true,"input":"a long answer please"}`,
		"Authorization", "response.completed"},
}

// openCutStream begins a stream of the API (on a simulator whose chunks
// are far apart: it outlives a short shutdown_timeout) and returns once
// its first line arrived; the channel yields the whole body when it ends.
func openCutStream(t *testing.T, addr string, c cutStream) <-chan string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+c.path, strings.NewReader(c.body))
	secret := "sk-sluice-demo-chat"
	if c.header == "Authorization" {
		secret = "Bearer " + secret
	}
	req.Header.Set(c.header, secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d %s", c.api, resp.StatusCode, b)
	}
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	out := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		rest, _ := io.ReadAll(rd)
		out <- first + string(rest)
	}()
	return out
}

// TestShutdownCutKeepsEveryRow: requests that outlive shutdown_timeout are
// cut by the server when the drain runs out: each stream ends with an
// error event in its API's shape (code server_shutdown, no end of stream),
// a request still waiting for its upstream answers 503 server_shutdown,
// and every one of them has its row — status 503, refused_code
// server_shutdown, never 499 — flushed before the process exits 0. The
// race this guards (the request log closed while a cut handler had yet to
// record) lost a row in about one cut in five, so each round cuts nine
// streams and a waiting request at once, over several rounds.
func TestShutdownCutKeepsEveryRow(t *testing.T) {
	const rounds, perAPI = 3, 3
	// Chunks 3 s apart: every stream is still open when the 1 s drain ends.
	sim := slowSim(t, 3*time.Second)
	for round := range rounds {
		sv := serveSubprocess(t, sim, `shutdown_timeout = "1s"`)
		var bodies []<-chan string
		var apis []cutStream
		for range perAPI {
			for _, c := range cutStreams {
				bodies = append(bodies, openCutStream(t, sv.addr, c))
				apis = append(apis, c)
			}
		}
		// A request waiting for an upstream that never answers.
		hanging := func() int {
			n := 0
			for _, c := range sim.Calls() {
				if c.Fault == "hang" {
					n++
				}
			}
			return n
		}
		before := hanging()
		waiting := make(chan *http.Response, 1)
		go func() {
			req, _ := http.NewRequest("POST", "http://"+sv.addr+"/v1/chat/completions",
				strings.NewReader(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer sk-sluice-demo-chat")
			req.Header.Set("X-Sim-Fault", "hang")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				waiting <- nil
				return
			}
			waiting <- resp
		}()
		for deadline := time.Now().Add(20 * time.Second); hanging() == before; time.Sleep(20 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "the waiting request did not reach the upstream")
		}

		require.NoError(t, sv.cmd.Process.Signal(syscall.SIGTERM))
		for i, b := range bodies {
			select {
			case body := <-b:
				require.Contains(t, body, `"code":"server_shutdown"`, "round %d: %s stream %d ends with the server's error: %q", round, apis[i].api, i, body)
				require.NotContains(t, body, apis[i].whole, "round %d: a cut %s stream does not look whole", round, apis[i].api)
				if apis[i].api != "chat" {
					require.Contains(t, body, "event: error\n", "round %d: %s", round, apis[i].api)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: %s stream %d did not end", round, apis[i].api, i)
			}
		}
		select {
		case resp := <-waiting:
			require.NotNil(t, resp, "round %d: the waiting request got an answer, not a dropped connection", round)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, 503, resp.StatusCode, "round %d: %s", round, b)
			require.Contains(t, string(b), `"code":"server_shutdown"`)
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the waiting request did not end", round)
		}
		select {
		case err := <-sv.exited:
			require.NoError(t, err, "round %d: exit 0; stderr:\n%s", round, sv.stderr.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: sluice did not exit", round)
		}
		require.Contains(t, sv.stderr.String(), "cutting the requests still in flight")

		store, err := requestlog.OpenSQLite(filepath.Join(sv.dir, "data", "requests.db"))
		require.NoError(t, err)
		page, err := store.Query(context.Background(), requestlog.Filter{Limit: 100})
		require.NoError(t, store.Close())
		require.NoError(t, err)
		require.Len(t, page.Rows, len(bodies)+1, "round %d: a row for every request cut", round)
		streams := 0
		for _, r := range page.Rows {
			require.Equal(t, 503, r.Status, "round %d: %s row of a request the server cut", round, r.API)
			require.Equal(t, "server_shutdown", r.RefusedCode, "round %d", round)
			if r.Stream {
				streams++
			}
		}
		require.Equal(t, len(bodies), streams, "round %d", round)
		_, err = os.Stat(filepath.Join(sv.dir, "data", "spool", "requests.spool.jsonl"))
		if err == nil {
			b, _ := os.ReadFile(filepath.Join(sv.dir, "data", "spool", "requests.spool.jsonl"))
			require.Empty(t, b, "round %d: every row reached the store before exit", round)
		}
	}
}
