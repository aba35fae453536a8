package profiles

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ClickHousePassword returns the password of clickhouse_user: the value of
// the environment variable clickhouse_password_env names, or "" when it
// names none. An unset or empty variable is an error naming the variable
// (never a value).
func (st *Store) ClickHousePassword() (string, error) { return secretEnv(st.ClickHousePasswordEnv) }

// PostgresPassword returns the state store's PostgreSQL password, from the
// variable postgres_password_env names, as [Store.ClickHousePassword] does.
func (st *State) PostgresPassword() (string, error) { return secretEnv(st.PostgresPasswordEnv) }

// RedisPassword returns the shared state's Redis password, from the
// variable redis_password_env names, as [Store.ClickHousePassword] does.
func (sh *Shared) RedisPassword() (string, error) { return secretEnv(sh.RedisPasswordEnv) }

// secretEnv reads a secret from the environment variable name names: ""
// for no name, an error naming the variable when it is unset or empty.
func secretEnv(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("the environment variable %s is not set", name)
	}
	if v == "" {
		return "", fmt.Errorf("the environment variable %s is empty", name)
	}
	return v, nil
}

// ClickHouseRootCAs returns the CAs of clickhouse_ca_file (its path
// resolved against the configuration directory), or nil for none, which
// means the system's roots. The file must hold at least one PEM
// "CERTIFICATE" block, and every such block must parse. An error names the
// file.
func (st *Store) ClickHouseRootCAs() (*x509.CertPool, error) {
	if st.ClickHouseCAFile == "" {
		return nil, nil
	}
	pool, err := readCAs(st.ClickHouseCAFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", st.ClickHouseCAFile, err)
	}
	return pool, nil
}

// readCAs reads the PEM certificates of path. Its errors do not name the
// file, so that each caller names it as its reader knows it.
// ReadCAs reads a PEM file of CA certificates (ca_file, clickhouse_ca_file)
// into a pool; a file without a certificate is an error.
func ReadCAs(path string) (*x509.CertPool, error) { return readCAs(path) }

func readCAs(path string) (*x509.CertPool, error) {
	pool, _, err := ReadCAsHashed(path)
	return pool, err
}

// ReadCAsHashed is [ReadCAs] that also returns the SHA-256 of the file's
// bytes, read once: a caller that keeps a transport per CA file knows by it
// whether the file changed.
func ReadCAsHashed(path string) (*x509.CertPool, [32]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, [32]byte{}, fmt.Errorf("cannot read it: %w", pe.Err)
		}
		return nil, [32]byte{}, err
	}
	pool, err := parseCAs(data)
	return pool, sha256.Sum256(data), err
}

// parseCAs reads the PEM certificates of a CA file's bytes.
func parseCAs(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		n++
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n, err)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// checkStore finds what the schema cannot in the engines' settings: a
// password variable that is not set where its engine is used ([store]
// kind = "clickhouse", [state] kind = "postgres", [shared] redis_url) —
// so a missing secret stops a start with its line, not with the engine's
// refusal of an empty password — and in [store] kind = "clickhouse", a CA
// file that cannot be read or holds no certificate, and a CA file without
// TLS (which would otherwise be ignored, leaving the connection in
// plaintext).
func (c *Config) checkStore(at func(code string, tokens []string, format string, args ...any)) {
	if c.State.Kind == "postgres" {
		if _, err := c.State.PostgresPassword(); err != nil {
			at(CodeMissingEnv, []string{"state", "postgres_password_env"}, "[state] postgres_password_env: %v", err)
		}
	}
	if c.Shared.RedisURL != "" {
		if _, err := c.Shared.RedisPassword(); err != nil {
			at(CodeMissingEnv, []string{"shared", "redis_password_env"}, "[shared] redis_password_env: %v", err)
		}
	}
	st := &c.Store
	if st.Kind != "clickhouse" {
		return
	}
	if _, err := st.ClickHousePassword(); err != nil {
		at(CodeMissingEnv, []string{"store", "clickhouse_password_env"}, "[store] clickhouse_password_env: %v", err)
	}
	if st.ClickHouseCAFile == "" {
		return
	}
	if !st.ClickHouseTLS {
		at(CodeMissingSetting, []string{"store", "clickhouse_ca_file"}, "[store] clickhouse_ca_file is only read with clickhouse_tls = true")
		return
	}
	if _, err := readCAs(st.ClickHouseCAFile); err != nil {
		at(CodeInvalidCAFile, []string{"store", "clickhouse_ca_file"}, "[store] clickhouse_ca_file %q: %v", c.inDir(st.ClickHouseCAFile), err)
	}
}

// inDir returns path, resolved against the configuration directory, as the
// file names it: relative when it is inside the directory, so that a
// diagnostic reads the same wherever the directory is.
func (c *Config) inDir(path string) string {
	rel, err := filepath.Rel(c.Dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
