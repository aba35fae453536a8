// Package pgtest starts throwaway PostgreSQL clusters for tests, as chtest
// does for ClickHouse: Debian's PostgreSQL 15 (initdb and pg_ctl from
// /usr/lib/postgresql/15/bin, or the directory SLUICE_PG_BIN names) in a
// temporary folder, on a loopback port chosen at start. PostgreSQL refuses
// to run as root, so as root the cluster is made and run as the `postgres`
// user (runuser), its folder handed to that user. Tests that need it skip
// when the binaries are missing, and fail instead when CI is set.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// DefaultBin is where Debian installs PostgreSQL 15's server programs.
const DefaultBin = "/usr/lib/postgresql/15/bin"

// Server is a running throwaway PostgreSQL cluster.
type Server struct {
	dir  string
	port int
	mu   sync.Mutex
	up   bool
}

// Bin returns the directory of initdb and pg_ctl.
func Bin() string {
	if p := os.Getenv("SLUICE_PG_BIN"); p != "" {
		return p
	}
	return DefaultBin
}

// Require skips t, or fails it when CI is set, if the binaries are missing.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(Bin(), "pg_ctl")); err == nil {
		return
	}
	msg := fmt.Sprintf("PostgreSQL not found in %s; install it with `apt-get install -y postgresql` or set SLUICE_PG_BIN", Bin())
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: PostgreSQL tests must not be skipped)")
	}
	t.Skip(msg)
}

// Start makes a cluster for t, starts it, and stops and removes it when
// t's cleanup runs.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("", "sluice-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: dir}
	t.Cleanup(func() {
		s.Stop()
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root needs the postgres user (Debian's postgresql package makes it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := s.Restart(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs a PostgreSQL program, as the postgres user when we are root.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(Bin(), prog)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// URL is a postgres:// URL of the cluster's database "postgres".
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop stops the cluster at once (immediate mode); Restart brings it back
// with its data.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return
	}
	_, _ = s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "-t", "20", "stop")
	s.up = false
}

// Restart starts the cluster (again) on its port and waits until it takes
// connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up {
		return nil
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100", s.port, s.dir)
	out, err := s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			s.up = true
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not listen on %d within 30s", s.port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
