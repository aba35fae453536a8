package access_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/profiles/access"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"Bearer abc", "abc"},
		{"bearer abc", "abc"},
		{"BEARER  abc  ", "abc"},
		{"Basic abc", ""},
		{"Bearer", ""},
		{"", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		require.Equal(t, tc.want, access.BearerToken(r), tc.header)
	}
}

func TestSameSecret(t *testing.T) {
	require.False(t, access.SameSecret("", ""), "an unset secret admits nobody")
	require.False(t, access.SameSecret("abc", ""))
	require.False(t, access.SameSecret("abc", "abd"))
	require.True(t, access.SameSecret("abc", "abc"))
	// Compared as digests: a prefix or an extension is just another secret.
	require.False(t, access.SameSecret("abc", "abcd"))
	require.False(t, access.SameSecret("abcd", "abc"))
	// A key's stored hash (64 hex digits) against the caller's, on every
	// request: compared without allocating.
	h := profiles.HashSecret("sk-test")
	require.Len(t, h, 64)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = access.SameSecret(h, h) }))
}

func TestCheckToken(t *testing.T) {
	require.NoError(t, access.CheckToken("X", ""), "unset: the API is off, nothing to refuse")
	require.NoError(t, access.CheckToken("X", "0123456789abcdef0123456789abcdef"))
	require.EqualError(t, access.CheckToken("SLUICE_ADMIN_TOKEN", "a"),
		"SLUICE_ADMIN_TOKEN is 1 characters; it must be at least 32 (generate one with `openssl rand -hex 32`)")
}

func TestAdmin(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer tok")
	require.True(t, access.Admin(r, "tok"))
	require.False(t, access.Admin(r, "other"))
	require.False(t, access.Admin(r, ""))
}

func TestKeyBySecret(t *testing.T) {
	dir := t.TempDir()
	toml := "[[upstreams]]\nname = \"u\"\nconnector = \"openai\"\n\n[[keys]]\nid = \"k1\"\nsha256 = \"" + profiles.HashSecret("s3cret") +
		"\"\norg = \"o\"\nteam = \"t\"\nproject = \"p\"\nroles = [\"analyst\"]\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(toml), 0o644))
	cfg, diags := profiles.Load(dir)
	require.Empty(t, diags)
	k := access.Key(cfg, "s3cret")
	require.NotNil(t, k)
	require.Equal(t, "k1", k.ID)
	require.True(t, k.HasRole(access.RoleAnalyst))
	require.Equal(t, k, access.Key(cfg, " s3cret\n"), "hashed as sluice keys hash does: surrounding space trimmed")
	require.Nil(t, access.Key(cfg, "wrong"))
	require.Nil(t, access.Key(cfg, ""))
	require.Nil(t, access.Key(cfg, "   "))
}

func TestActor(t *testing.T) {
	a := access.Actor("admin-token")
	require.Regexp(t, `^admin:[0-9a-f]{12}$`, a)
	require.NotContains(t, a, "admin-token")
	require.Equal(t, a, access.Actor("admin-token"), "stable")
	sum := sha256.Sum256([]byte("admin-token"))
	require.NotContains(t, hex.EncodeToString(sum[:]), a[len("admin:"):], "not the digest the token is compared by")
	require.NotEqual(t, a, access.Actor("other-token"))
}
