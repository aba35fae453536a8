// Package chtest starts throwaway ClickHouse servers for tests.
//
// It runs the clickhouse-server binary (default /usr/sbin/clickhouse-server,
// override with the SLUICE_CLICKHOUSE_SERVER environment variable) in a fresh
// temporary folder with its own config.xml and users.xml, listening only on
// loopback ports chosen at start. The config uses the <yandex> root element so
// that Debian's ClickHouse 18.16 accepts it; current releases accept it too.
//
// When the binary is missing, tests are skipped with an installation hint,
// unless the CI environment variable is non-empty: then they fail, so that
// ClickHouse tests are never silently skipped in CI.
//
// Start and Shared run a server open to the passwordless "default" user over
// plaintext. StartWith runs one set up as production servers are (see
// Options): a user with a password, "default" unable to log in over the
// network, and the secure native port (tcp_port_secure) with a certificate
// from a throwaway CA made at start.
package chtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// DefaultBinary is the clickhouse-server path used when the
// SLUICE_CLICKHOUSE_SERVER environment variable is empty.
const DefaultBinary = "/usr/sbin/clickhouse-server"

// readyTimeout bounds how long Start and Restart wait for /ping to answer.
const readyTimeout = 30 * time.Second

// Options configure a server started by StartWith. The zero value is the
// server Start starts.
type Options struct {
	// User, when non-empty, is a user that logs in from loopback with
	// Password (stored as its SHA-256, password_sha256_hex). The "default"
	// user is then allowed only from ::1, where the server does not listen:
	// it cannot log in at all, as "default" cannot over the network on a
	// production server. Default "": "default" logs in without a password.
	User string
	// Password is User's password. Required with User.
	Password string
	// Databases, when non-empty, are the only databases User may use
	// (allow_databases), as a user made for one application has. Default
	// none: every database.
	Databases []string
	// TLS also listens on the secure native port (tcp_port_secure; see
	// SecureAddr) with a certificate for 127.0.0.1, ::1 and localhost,
	// signed by a CA made at start (see CAFile). The plaintext port stays
	// open. Default false.
	TLS bool
}

// Server is a running throwaway clickhouse-server process.
type Server struct {
	bin        string
	dir        string
	opts       Options
	tcpPort    int
	httpPort   int
	securePort int // 0 without Options.TLS

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// Binary returns the clickhouse-server path the package uses.
func Binary() string {
	if p := os.Getenv("SLUICE_CLICKHOUSE_SERVER"); p != "" {
		return p
	}
	return DefaultBinary
}

// Available reports whether the clickhouse-server binary exists.
func Available() bool {
	st, err := os.Stat(Binary())
	return err == nil && !st.IsDir()
}

// Require skips t (or fails it when the CI environment variable is non-empty)
// if the clickhouse-server binary is missing.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	msg := fmt.Sprintf("clickhouse-server not found at %s; install it with "+
		"`apt-get install -y clickhouse-server` (Debian/Ubuntu) or set SLUICE_CLICKHOUSE_SERVER", Binary())
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: ClickHouse tests must not be skipped)")
	}
	t.Skip(msg)
}

// Start starts a new server for t and stops it (and removes its folder) when
// t's cleanup runs. See Require for what happens when the binary is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with a user, a password and TLS as opts says.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	if opts.User != "" && opts.Password == "" {
		t.Fatalf("chtest: Options.User %q needs a Password", opts.User)
	}
	s, err := start(opts)
	if err != nil {
		t.Fatalf("chtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
	dbSeq     atomic.Int64
)

// Shared returns one server shared by all tests of the test binary, starting
// it on first use. Call Main from TestMain to stop it when the tests end.
// Tests that use it should isolate themselves with their own database (see
// NewDatabaseName) and must not Kill or Restart it.
func Shared(t testing.TB) *Server {
	t.Helper()
	Require(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = start(Options{})
	}
	if sharedErr != nil {
		t.Fatalf("chtest: shared server: %v", sharedErr)
	}
	return shared
}

// Main runs the tests and then stops the shared server, if one was started.
// Use it as `func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
	return code
}

// NewDatabaseName returns a database name unique within the test binary,
// for isolating tests that share a server.
func NewDatabaseName(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), dbSeq.Add(1))
}

// Addr returns the native-protocol address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tcpPort)) }

// HTTPAddr returns the HTTP interface address, "127.0.0.1:PORT".
func (s *Server) HTTPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.httpPort)) }

// SecureAddr returns the secure native-protocol address (TLS),
// "127.0.0.1:PORT", or "" when the server was started without Options.TLS.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.securePort))
}

// CAFile returns the path of the PEM file of the CA that signed the
// server's certificate, or "" when the server was started without
// Options.TLS. It lives in Dir.
func (s *Server) CAFile() string {
	if !s.opts.TLS {
		return ""
	}
	return filepath.Join(s.dir, caFile)
}

// Dir returns the server's temporary folder (config, data and logs).
func (s *Server) Dir() string { return s.dir }

// Kill sends SIGKILL to the server and waits for it to exit. The data folder
// is kept, so Restart brings the same data back.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalAndWait(syscall.SIGKILL, 15*time.Second)
}

// Restart starts the server again with the same folder and ports, after
// stopping it with SIGKILL if it is still running, and waits until it answers.
// It panics if the server does not come back, since the test cannot go on.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalAndWait(syscall.SIGKILL, 15*time.Second)
	if err := s.launch(); err != nil {
		panic(fmt.Sprintf("chtest: restart: %v", err))
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 3 s: the data is thrown
// away, so a slow graceful shutdown waiting on idle client connections buys
// nothing) and removes its folder. It is safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalAndWait(syscall.SIGTERM, 3*time.Second)
	s.signalAndWait(syscall.SIGKILL, 15*time.Second)
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// signalAndWait sends sig to the running process, if any, and waits up to
// timeout for it to exit. The caller holds s.mu.
func (s *Server) signalAndWait(sig syscall.Signal, timeout time.Duration) {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		s.cmd = nil
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		s.cmd = nil
	case <-time.After(timeout):
	}
}

// start creates the folder, picks ports and launches the server, retrying
// with new ports a few times in case another process took a port meanwhile.
func start(opts Options) (*Server, error) {
	var lastErr error
	for range 3 {
		dir, err := os.MkdirTemp("", "sluice-chtest-")
		if err != nil {
			return nil, fmt.Errorf("create temp folder: %w", err)
		}
		ports, err := freePorts(3)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s := &Server{bin: Binary(), dir: dir, opts: opts, tcpPort: ports[0], httpPort: ports[1]}
		if opts.TLS {
			s.securePort = ports[2]
			if err := WriteCertificates(dir); err != nil {
				_ = os.RemoveAll(dir)
				return nil, err
			}
		}
		if err := s.writeConfig(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s.mu.Lock()
		err = s.launch()
		s.mu.Unlock()
		if err == nil {
			return s, nil
		}
		lastErr = err
		s.Stop()
	}
	return nil, lastErr
}

// freePorts returns n distinct loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// launch starts the process and waits until /ping answers. The caller holds s.mu.
func (s *Server) launch() error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	cmd := exec.Command(s.bin, "--config-file="+filepath.Join(s.dir, "config.xml"))
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C on the test does not hit the server first,
	// and the server never outlives us through inherited terminals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	url := "http://" + s.HTTPAddr() + "/ping"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("clickhouse-server exited before answering /ping; log:\n%s", s.logTail())
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("clickhouse-server did not answer %s within %v; log:\n%s",
				url, readyTimeout, s.logTail()), ctx.Err())
		case <-tick.C:
		}
	}
}

// logTail returns the end of the server's logs, for error messages.
func (s *Server) logTail() string {
	var out []byte
	for _, name := range []string{"stdout.log", "server.err.log"} {
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			continue
		}
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		out = append(out, b...)
	}
	return string(out)
}

// writeConfig writes config.xml and users.xml for s.opts. The keys are those
// of ClickHouse 18.16's own config.xml (tcp_port_secure and the
// <openSSL><server> section, which serves the secure native port) and
// users.xml (password_sha256_hex, networks), which current releases read
// the same way.
func (s *Server) writeConfig() error {
	var secure string
	if s.opts.TLS {
		secure = fmt.Sprintf(`
    <tcp_port_secure>%[2]d</tcp_port_secure>
    <openSSL>
        <server>
            <certificateFile>%[1]s/%[3]s</certificateFile>
            <privateKeyFile>%[1]s/%[4]s</privateKeyFile>
            <verificationMode>none</verificationMode>
            <loadDefaultCAFile>false</loadDefaultCAFile>
            <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>
            <preferServerCiphers>true</preferServerCiphers>
        </server>
    </openSSL>`, s.dir, s.securePort, certFile, keyFile)
	}
	config := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>%[1]s/server.log</log>
        <errorlog>%[1]s/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>%[2]d</tcp_port>
    <http_port>%[3]d</http_port>%[4]s
    <path>%[1]s/data/</path>
    <tmp_path>%[1]s/tmp/</tmp_path>
    <user_files_path>%[1]s/user_files/</user_files_path>
    <format_schema_path>%[1]s/format_schemas/</format_schema_path>
    <users_config>%[1]s/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`, s.dir, s.tcpPort, s.httpPort, secure)
	// "default" logs in from loopback, unless there is a user of our own:
	// then only from ::1, where the server does not listen.
	defaultNetworks := "<ip>127.0.0.1</ip>\n                <ip>::1</ip>"
	var user string
	if s.opts.User != "" {
		defaultNetworks = "<ip>::1</ip>"
		sum := sha256.Sum256([]byte(s.opts.Password))
		var allow string
		if len(s.opts.Databases) > 0 {
			allow = "\n            <allow_databases>"
			for _, db := range s.opts.Databases {
				allow += "<database>" + db + "</database>"
			}
			allow += "</allow_databases>"
		}
		user = fmt.Sprintf(`
        <%[1]s>
            <password_sha256_hex>%[2]s</password_sha256_hex>
            <networks>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>%[3]s
        </%[1]s>`, s.opts.User, hex.EncodeToString(sum[:]), allow)
	}
	users := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                %[1]s
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>%[2]s
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`, defaultNetworks, user)
	if err := os.WriteFile(filepath.Join(s.dir, "config.xml"), []byte(config), 0o644); err != nil {
		return fmt.Errorf("write config.xml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "users.xml"), []byte(users), 0o600); err != nil {
		return fmt.Errorf("write users.xml: %w", err)
	}
	return nil
}
