package profiles

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// SecretPrefix starts every secret made by [NewSecret], so that leaked keys
// are easy to recognise by secret scanners.
const SecretPrefix = "sk-sluice-"

// HashSecret returns the lower-case hex SHA-256 of a key secret, the form kept
// in sluice.toml. Surrounding white space (a trailing newline from a pipe) is
// not part of the secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	return hex.EncodeToString(sum[:])
}

// NewSecret returns a fresh random secret and its hash.
func NewSecret() (secret, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	secret = SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashSecret(secret), nil
}
