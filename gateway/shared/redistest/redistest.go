// Package redistest starts throwaway Redis servers for tests, as chtest
// does for ClickHouse: Debian's redis-server (override the path with
// SLUICE_REDIS_SERVER) in a temporary folder, on a loopback port chosen at
// start, with persistence off. Tests that need it skip when the binary is
// missing, and fail instead when the CI environment variable is set.
package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultBinary is the redis-server path used when SLUICE_REDIS_SERVER is
// empty.
const DefaultBinary = "/usr/bin/redis-server"

// Server is a running throwaway redis-server.
type Server struct {
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Binary returns the redis-server path the package uses.
func Binary() string {
	if p := os.Getenv("SLUICE_REDIS_SERVER"); p != "" {
		return p
	}
	return DefaultBinary
}

// Require skips t, or fails it when CI is set, if redis-server is missing.
func Require(t testing.TB) {
	t.Helper()
	if st, err := os.Stat(Binary()); err == nil && !st.IsDir() {
		return
	}
	msg := fmt.Sprintf("redis-server not found at %s; install it with `apt-get install -y redis-server` or set SLUICE_REDIS_SERVER", Binary())
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: Redis tests must not be skipped)")
	}
	t.Skip(msg)
}

// Start starts a server for t and stops it when t's cleanup runs.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &Server{dir: dir, port: port}
	s.mu.Lock()
	err = s.launch()
	s.mu.Unlock()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Kill stops the server at once (SIGKILL) and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	s.cmd = nil
}

// Restart starts the server again on the same port (empty: persistence is
// off, as after losing a cache node) and waits until it answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	return s.launch()
}

// launch starts redis-server and waits for its port. s.mu is held.
func (s *Server) launch() error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(Binary(), "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", Binary(), err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond); err == nil {
			// PING before declaring it ready: the port opens before loading ends.
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(buf)
			_ = c.Close()
			if n > 0 && string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-exited:
			s.cmd = nil
			b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited before answering:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer on %s within 20s", s.Addr())
		}
	}
}
