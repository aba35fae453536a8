package simulator

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2/google"
)

// The Gemini endpoints take only a token the token endpoint granted, check
// the body as Vertex AI does (known members, contents), answer the
// recorded model from the recordings (picked by the turn: a tool result,
// tools, a plain turn), and any other model with Google's 404.
func TestVertexGemini(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	v := NewVertex(&key.PublicKey, time.Hour)
	base, err := v.Start()
	require.NoError(t, err)
	defer v.Close()
	creds, err := google.CredentialsFromJSON(context.Background(), vertexKeyFile(t, key, v.TokenURL()), "https://www.googleapis.com/auth/cloud-platform")
	require.NoError(t, err)
	tok, err := creds.TokenSource.Token()
	require.NoError(t, err)

	const models = "/v1/projects/p/locations/us-east5/publishers/google/models/"
	plain := `{"contents":[{"role":"user","parts":[{"text":"Say hi in Portuguese"}]}]}`
	cases := []struct {
		name, call, bearer, body string
		status                   int
		contains                 string
	}{
		{"no token", "gemini-2.5-flash:generateContent", "ya29.made-up", plain, 401, "UNAUTHENTICATED"},
		{"plain", "gemini-2.5-flash:generateContent", tok.AccessToken, plain, 200, `"text": "Olá!"`},
		{"stream", "gemini-2.5-flash:streamGenerateContent?alt=sse", tok.AccessToken, plain, 200, "data: {"},
		{"stream without sse", "gemini-2.5-flash:streamGenerateContent", tok.AccessToken, plain, 400, "alt=sse"},
		{"tools", "gemini-2.5-flash:generateContent", tok.AccessToken, `{"contents":[{"role":"user","parts":[{"text":"weather?"}]}],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`, 200, `"functionCall"`},
		{"tool result", "gemini-2.5-flash:generateContent", tok.AccessToken, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"result":"40 C"}}}]}]}`, 200, "40 C"},
		{"unknown member", "gemini-2.5-flash:generateContent", tok.AccessToken, `{"model":"gemini-2.5-flash","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 400, `Unknown name \"model\"`},
		{"no contents", "gemini-2.5-flash:generateContent", tok.AccessToken, `{"contents":[]}`, 400, "INVALID_ARGUMENT"},
		{"other model", "gemini-1.0-pro:generateContent", tok.AccessToken, plain, 404, "NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, base+models+tc.call, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tc.bearer)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.status, resp.StatusCode, string(b))
			assert.Contains(t, string(b), tc.contains)
		})
	}
}
