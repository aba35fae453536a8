package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// TestSimulateServesAUsersConfig runs `sluice simulate` for the demo
// configuration, writes the base_url lines it prints into a copy of the
// configuration (as a user would), and serves a request through the
// gateway against it: no code, no upstream account. The clouds' kinds are
// listed with the credential they check, and the demo's Bedrock upstream,
// given the printed Bedrock API key, is served.
func TestSimulateServesAUsersConfig(t *testing.T) {
	var out, errb bytes.Buffer
	ready, stop, done := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, interrupt: stop, serving: func() { close(ready) }}
	go func() { done <- run(env, []string{"simulate", "--config", demoDir, "--listen", "127.0.0.1:0"}) }()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("simulate ended with %d: %s", code, errb.String())
	}
	defer func() {
		close(stop)
		require.Equal(t, 0, <-done)
	}()
	for _, kind := range []string{"openrouter", "vercel", "openai", "anthropic", "azure", "bedrock"} {
		require.Regexp(t, `(?m)^  `+kind+` +http://127\.0\.0\.1:[0-9]+/`, out.String(), "the %s line", kind)
	}
	bedrockKey := regexp.MustCompile(`Bedrock API key "([^"]+)"`).FindStringSubmatch(out.String())
	require.NotNil(t, bedrockKey, out.String())
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", bedrockKey[1]) // the demo's Bedrock upstream's api_key_env
	printed := regexp.MustCompile(`name = "([a-z]+)"\s+→\s+base_url = "([^"]+)"`).FindAllStringSubmatch(out.String(), -1)
	require.Len(t, printed, 5, out.String())
	dir := demoWith(t, func(toml string) string {
		for _, p := range printed {
			toml = strings.Replace(toml, `name = "`+p[1]+`"`+"\n", `name = "`+p[1]+`"`+"\nbase_url = \""+p[2]+"\"\n", 1)
		}
		return toml
	})
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer srv.Close(context.Background())
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, key := range []string{"sk-sluice-demo-chat", "sk-sluice-demo-batch"} { // the marketplace and the direct OpenAI upstream
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-on-bedrock","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-sluice-demo-chat")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the Bedrock upstream: %s", body)
	require.Contains(t, string(body), "amazon-bedrock")
}
