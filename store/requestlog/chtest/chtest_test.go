package chtest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

func ping(t *testing.T, s *chtest.Server) error {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + s.HTTPAddr() + "/ping")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

func TestStartKillRestart(t *testing.T) {
	s := chtest.Start(t)
	require.NoError(t, ping(t, s))
	s.Kill()
	require.Error(t, ping(t, s), "server must be down after Kill")
	s.Restart()
	require.NoError(t, ping(t, s), "server must answer after Restart")
}

// TestStartWithUserAndTLS checks the production-like server StartWith runs:
// only the user with its password logs in, only to its databases, and the
// secure port speaks TLS with a certificate for 127.0.0.1 that the CA in
// CAFile signed.
func TestStartWithUserAndTLS(t *testing.T) {
	const user, password = "sluice", "chtest-pw-3f9a"
	s := chtest.StartWith(t, chtest.Options{User: user, Password: password, Databases: []string{"default", "app"}, TLS: true})
	require.NoError(t, ping(t, s))
	require.NotEmpty(t, s.SecureAddr())
	require.NotEqual(t, s.Addr(), s.SecureAddr())

	pemBytes, err := os.ReadFile(s.CAFile())
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pemBytes), "CAFile holds a PEM certificate")
	withCA := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}

	for _, tc := range []struct {
		name, addr, user, password string
		db                         string
		tls                        *tls.Config
		wantErr                    string // "" for a good login
	}{
		{name: "user over TLS", addr: s.SecureAddr(), user: user, password: password, tls: withCA},
		{name: "user over plaintext", addr: s.Addr(), user: user, password: password},
		{name: "wrong password", addr: s.SecureAddr(), user: user, password: "nope", tls: withCA, wantErr: "password"},
		{name: "default cannot log in", addr: s.Addr(), user: "default", wantErr: "default"},
		{name: "user outside its databases", addr: s.Addr(), user: user, password: password, db: "other", wantErr: "other"},
		{name: "system roots refuse the certificate", addr: s.SecureAddr(), user: user, password: password,
			tls: &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}, wantErr: "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := clickhouse.Open(&clickhouse.Options{
				Addr: []string{tc.addr}, TLS: tc.tls, DialTimeout: 3 * time.Second,
				Auth: clickhouse.Auth{Database: tc.db, Username: tc.user, Password: tc.password},
			})
			require.NoError(t, err)
			defer conn.Close()
			var one uint8
			err = conn.QueryRow(ctx, "SELECT 1").Scan(&one)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, uint8(1), one)
		})
	}
}

func TestStartWithoutTLSHasNoSecurePort(t *testing.T) {
	s := chtest.StartWith(t, chtest.Options{User: "u", Password: "p"})
	require.Empty(t, s.SecureAddr())
	require.Empty(t, s.CAFile())
}
