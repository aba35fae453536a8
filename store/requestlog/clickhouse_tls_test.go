package requestlog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// chTLSPassword is the password of the user of the production-like server
// below; no error may contain it (nor the wrong ones the cases try).
const (
	chTLSUser     = "sluice"
	chTLSPassword = "pw-9c1e-never-in-an-error"
	chTLSWrong    = "pw-wrong-never-in-an-error"
)

// startSecureServer starts a server as production ones run: a user with a
// password allowed only the databases dbs (not "default"), "default"
// unable to log in, and the secure native port.
func startSecureServer(t *testing.T, dbs ...string) (*chtest.Server, *x509.CertPool) {
	t.Helper()
	srv := chtest.StartWith(t, chtest.Options{User: chTLSUser, Password: chTLSPassword, Databases: dbs, TLS: true})
	return srv, readRoots(t, srv.CAFile())
}

// readRoots returns the certificates of the PEM file path as a pool.
func readRoots(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pemBytes, err := os.ReadFile(path)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pemBytes))
	return roots
}

// TestClickHouseUserPasswordTLS opens the store as a user with a password
// over TLS verified against the server's CA, on a database only that user
// may use (so the database is created without a login to "default"), and
// checks every way the login can go wrong is told plainly, without the
// password.
func TestClickHouseUserPasswordTLS(t *testing.T) {
	db := chtest.NewDatabaseName("rl_tls")
	srv, roots := startSecureServer(t, db)
	// verified trusts the server's CA and expects the certificate to name
	// name; trusting expects 127.0.0.1 and trusts roots (nil: the system's).
	verified := func(name string) *tls.Config {
		return &tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	trusting := func(roots *x509.CertPool) *tls.Config {
		return &tls.Config{ServerName: "127.0.0.1", RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	otherCA := t.TempDir()
	require.NoError(t, chtest.WriteCertificates(otherCA))
	otherRoots := readRoots(t, filepath.Join(otherCA, "ca.pem"))
	base := Options{Addr: srv.SecureAddr(), Database: db, Username: chTLSUser, Password: chTLSPassword,
		TLS: verified("127.0.0.1"), DialTimeout: 3 * time.Second, ReadTimeout: 10 * time.Second}

	t.Run("opens, migrates, writes and reads", func(t *testing.T) {
		ctx := testCtx(t)
		s, err := OpenClickHouse(ctx, base)
		require.NoError(t, err)
		defer s.Close()
		applied, err := MigrateClickHouse(ctx, base)
		require.NoError(t, err)
		require.Empty(t, applied, "opening applied every migration")
		rows := sampleRows(20)
		require.NoError(t, s.Insert(ctx, rows))
		page, err := s.Query(ctx, Filter{Limit: 100})
		require.NoError(t, err)
		require.Len(t, page.Rows, len(rows))
		require.Equal(t, rows[len(rows)-1].RequestID, page.Rows[0].RequestID, "newest first")
		require.NoError(t, s.Ping(ctx))
	})

	for _, tc := range []struct {
		name string
		edit func(*Options)
		want []string // substrings of the error
	}{
		{"wrong password", func(o *Options) { o.Password = chTLSWrong },
			[]string{"authentication failed for user \"sluice\"", "clickhouse_password_env", srv.SecureAddr()}},
		{"no password", func(o *Options) { o.Password = "" },
			[]string{"authentication failed for user \"sluice\""}},
		{"unknown user", func(o *Options) { o.Username = "nobody" },
			[]string{"authentication failed for user \"nobody\""}},
		{"default may not log in over the network", func(o *Options) { o.Username = "" },
			[]string{"authentication failed for user \"default\""}},
		{"system roots do not know the CA", func(o *Options) { o.TLS = trusting(nil) },
			[]string{"TLS: the server's certificate is not trusted", "clickhouse_ca_file", "unknown authority"}},
		{"another CA", func(o *Options) { o.TLS = trusting(otherRoots) },
			[]string{"TLS: the server's certificate is not trusted", "clickhouse_ca_file", "unknown authority"}},
		{"certificate for another name", func(o *Options) { o.TLS = verified("ch.example.com") },
			[]string{`TLS: the server's certificate is not for "ch.example.com", the host of clickhouse_addr`}},
		{"plaintext to the secure port", func(o *Options) { o.TLS = nil },
			[]string{"the server hung up on the login", "clickhouse_tls = true"}},
		{"TLS to the plaintext port", func(o *Options) { o.Addr = srv.Addr() },
			[]string{"TLS: the server does not speak TLS on this port", srv.Addr()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			start := time.Now()
			s, err := OpenClickHouse(testCtx(t), o)
			if s != nil {
				_ = s.Close()
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), chTLSPassword)
			require.NotContains(t, err.Error(), chTLSWrong)
			require.Less(t, time.Since(start), 10*time.Second, "a refused login fails fast")
		})
	}
}

// TestClickHouseOptionsFromStore reads [store]'s password and TLS settings
// into Options: the password from its variable, TLS naming the address's
// host, the CA file's certificates as the only roots.
func TestClickHouseOptionsFromStore(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, chtest.WriteCertificates(dir))
	ca := filepath.Join(dir, "ca.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate\n"), 0o644))
	t.Setenv("SLUICE_TEST_CH_PW", chTLSPassword)

	for _, tc := range []struct {
		name       string
		st         profiles.Store
		wantErr    string
		wantPW     string
		wantServer string // TLS ServerName; "" for plaintext
		wantRoots  bool   // the CA file's certificates are the roots
	}{
		{name: "plaintext, no password", st: profiles.Store{ClickHouseAddr: "ch:9000", ClickHouseUser: "u"}},
		{name: "password from the environment", st: profiles.Store{ClickHouseAddr: "ch:9000", ClickHousePasswordEnv: "SLUICE_TEST_CH_PW"}, wantPW: chTLSPassword},
		{name: "password variable unset", st: profiles.Store{ClickHousePasswordEnv: "SLUICE_TEST_CH_UNSET"}, wantErr: "clickhouse_password_env: the environment variable SLUICE_TEST_CH_UNSET is not set"},
		{name: "TLS, system roots", st: profiles.Store{ClickHouseAddr: "ch.internal:9440", ClickHouseTLS: true}, wantServer: "ch.internal"},
		{name: "TLS, CA file", st: profiles.Store{ClickHouseAddr: "[::1]:9440", ClickHouseTLS: true, ClickHouseCAFile: ca}, wantServer: "::1", wantRoots: true},
		{name: "TLS, CA file missing", st: profiles.Store{ClickHouseAddr: "ch:9440", ClickHouseTLS: true, ClickHouseCAFile: filepath.Join(dir, "nope.pem")}, wantErr: "clickhouse_ca_file: " + filepath.Join(dir, "nope.pem") + ": cannot read it: no such file or directory"},
		{name: "TLS, CA file garbage", st: profiles.Store{ClickHouseAddr: "ch:9440", ClickHouseTLS: true, ClickHouseCAFile: garbage}, wantErr: "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ClickHouseOptions(&tc.st)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantPW, o.Password)
			if tc.wantServer == "" {
				require.Nil(t, o.TLS)
				return
			}
			require.NotNil(t, o.TLS)
			require.Equal(t, tc.wantServer, o.TLS.ServerName)
			require.False(t, o.TLS.InsecureSkipVerify)
			if !tc.wantRoots {
				require.Nil(t, o.TLS.RootCAs, "the system's roots")
				return
			}
			require.True(t, readRoots(t, ca).Equal(o.TLS.RootCAs), "the roots are the CA file's")
		})
	}
}

// TestClickHouseFromStoreConfig opens the request log as the gateway and
// `sluice rows` do, from a [store] section: the password from the variable
// clickhouse_password_env names, TLS verified against clickhouse_ca_file.
// Rows written through a Writer arrive. With a wrong password in the
// variable, the Writer's log says the login was refused and never holds
// the password.
func TestClickHouseFromStoreConfig(t *testing.T) {
	db := chtest.NewDatabaseName("rl_cfg")
	srv, _ := startSecureServer(t, db)
	st := profiles.Store{Kind: "clickhouse", ClickHouseAddr: srv.SecureAddr(), ClickHouseDatabase: db,
		ClickHouseUser: chTLSUser, ClickHousePasswordEnv: "SLUICE_TEST_CH_STORE_PW", ClickHouseTLS: true, ClickHouseCAFile: srv.CAFile()}

	write := func(t *testing.T, password string, rows []Row) (Store, Stats, string) {
		t.Helper()
		t.Setenv("SLUICE_TEST_CH_STORE_PW", password)
		s, err := Open(&st)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		var logs syncBuffer
		w := NewWriter(s, WriterOptions{BatchSize: len(rows), FlushInterval: 20 * time.Millisecond,
			RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for i := range rows {
			w.Enqueue(&rows[i])
		}
		require.Eventually(t, func() bool { ws := w.Stats(); return ws.WrittenRows+ws.WriteErrors > 0 }, 20*time.Second, 10*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Close(ctx)
		return s, w.Stats(), logs.String()
	}

	t.Run("rows arrive", func(t *testing.T) {
		rows := sampleRows(5)
		s, stats, logs := write(t, chTLSPassword, rows)
		require.Equal(t, uint64(len(rows)), stats.WrittenRows, logs)
		page, err := s.Query(testCtx(t), Filter{Limit: 100})
		require.NoError(t, err)
		require.Len(t, page.Rows, len(rows))
		require.NotContains(t, logs, chTLSPassword)
	})

	t.Run("a wrong password is logged without it", func(t *testing.T) {
		s, stats, logs := write(t, chTLSWrong, sampleRows(3))
		require.Zero(t, stats.WrittenRows)
		require.NotZero(t, stats.WriteErrors)
		require.Contains(t, logs, `authentication failed for user \"sluice\"`)
		require.NotContains(t, logs, chTLSWrong)
		require.NotContains(t, logs, chTLSPassword)
		err := s.Ping(testCtx(t))
		require.ErrorContains(t, err, "clickhouse_password_env")
		require.NotContains(t, err.Error(), chTLSWrong)
	})
}
