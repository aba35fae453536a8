// Package access answers who a request is, against the keys the
// configuration defines, one definition each: reading a bearer token,
// finding the key a secret belongs to, comparing the admin token, and the
// roles a key may hold. It sits beside profiles (whose keys it reads) so
// that the gateway's API, its admin API and the compliance pages, a review
// tool that never imports the gateway, all authenticate through it.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/profiles"
)

// RoleAnalyst lets a key read its own team's request-log rows: through the
// analytics API, and by logging in to the compliance pages.
const RoleAnalyst = "analyst"

// BearerToken returns the token of an "Authorization: Bearer <token>" header
// (the scheme matched case-insensitively, the token trimmed), or "".
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// APIKey returns the key an Anthropic client sends: the x-api-key header
// (trimmed), else the bearer token (Claude Code sends its auth token so), or
// "".
func APIKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	return BearerToken(r)
}

// Key returns the key whose secret this is, or nil. The secret is hashed as
// sluice.toml stores it ([profiles.HashSecret]) and the stored hash is
// compared in constant time.
func Key(cfg *profiles.Config, secret string) *profiles.Key {
	if strings.TrimSpace(secret) == "" {
		return nil
	}
	digest := profiles.HashSecret(secret)
	k := cfg.KeyByHash(digest)
	if k == nil || !SameSecret(k.SHA256, digest) {
		return nil
	}
	return k
}

// SameSecret compares two secrets in constant time; an empty one never
// matches (an unset admin token admits nobody). It compares their SHA-256
// digests, which are always 32 bytes: comparing the secrets themselves
// returns at once on a length mismatch, which tells a prober the token's
// length.
func SameSecret(a, b string) bool {
	// Copied into arrays on the stack: a conversion of a string longer than
	// 32 bytes (a key's 64-digit hash is) allocates.
	var ba, bb [64]byte
	da, db := sha256.Sum256(append(ba[:0], a...)), sha256.Sum256(append(bb[:0], b...))
	return a != "" && b != "" && subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// MinAdminTokenLen is the shortest admin token (and scrape token) the
// gateway starts with: a short one is guessed.
const MinAdminTokenLen = 32

// CheckToken refuses a token that is set and shorter than
// [MinAdminTokenLen]; env names its environment variable in the error.
func CheckToken(env, token string) error {
	if token != "" && len(token) < MinAdminTokenLen {
		return fmt.Errorf("%s is %d characters; it must be at least %d (generate one with `openssl rand -hex 32`)", env, len(token), MinAdminTokenLen)
	}
	return nil
}

// Admin reports whether the request carries the admin token.
func Admin(r *http.Request, adminToken string) bool {
	return SameSecret(BearerToken(r), adminToken)
}

// Actor names the admin token in the audit trail without revealing it:
// "admin:" and a fingerprint, the first 12 hex digits of the SHA-256 of
// the token behind a fixed label (a digest of its own, not the one the
// token is compared by, and never a part of the secret). The same token
// always gets the same name; a rotated one gets another.
func Actor(token string) string {
	sum := sha256.Sum256([]byte("sluice audit actor\x00" + token))
	return "admin:" + hex.EncodeToString(sum[:])[:12]
}
