package simulator

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2/google"
)

// vertexKeyFile is a service-account key file of key naming tokenURL.
func vertexKeyFile(t *testing.T, key *rsa.PrivateKey, tokenURL string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "private_key_id": "k",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "a@p.iam.gserviceaccount.com", "token_uri": tokenURL})
	require.NoError(t, err)
	return b
}

// The token endpoint grants a token only for an assertion the service
// account's key signed, and the model endpoints take only a token it
// granted.
func TestVertexTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	v := NewVertex(&key.PublicKey, time.Hour)
	base, err := v.Start()
	require.NoError(t, err)
	defer v.Close()
	scope := "https://www.googleapis.com/auth/cloud-platform"

	forged, err := google.CredentialsFromJSON(context.Background(), vertexKeyFile(t, other, v.TokenURL()), scope)
	require.NoError(t, err)
	_, err = forged.TokenSource.Token()
	require.Error(t, err, "an assertion signed with another key")
	assert.Contains(t, err.Error(), "invalid JWT signature")

	creds, err := google.CredentialsFromJSON(context.Background(), vertexKeyFile(t, key, v.TokenURL()), scope)
	require.NoError(t, err)
	tok, err := creds.TokenSource.Token()
	require.NoError(t, err)
	assert.Equal(t, 2, v.TokenHits())

	post := func(bearer, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-7-sonnet@20250219:rawPredict", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	plain := `{"anthropic_version":"vertex-2023-10-16","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	status, body := post("ya29.made-up", plain)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "UNAUTHENTICATED")
	status, body = post(tok.AccessToken, plain)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"id":"msg_vrtx_`)
	status, body = post(tok.AccessToken, `{"model":"claude","anthropic_version":"vertex-2023-10-16","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusBadRequest, status, "the model is the path's")
	assert.Contains(t, body, "model")
	status, _ = post(tok.AccessToken, `{"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusBadRequest, status, "anthropic_version is required")
	assert.Equal(t, 3, v.ModelHits(), "the three with a granted token")
}
