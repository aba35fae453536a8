package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/snapshot"

	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestDemoAndRows runs the README's run command in-process, then reads the
// rows it recorded back with sluice rows.
func TestDemoAndRows(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "", "demo", "--dir", dir)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	for _, want := range []string{
		fmt.Sprintf("[1/%d] plain", len(demoSteps)), "200 served by openai/gpt-4o via openai",
		"200 served by openai/gpt-4o via azure, degraded: chain",
		"200 served by anthropic/claude-sonnet-4.5 via amazon-bedrock",
		"422 data_policy_unsatisfiable: zero_retention (set by request)",
		"degraded: chain",
		"422 provider_restriction_inexpressible",
		"403 model_forbidden",
		"200 served by anthropic/claude-sonnet-4.5",
		"(from the response cache)",
		"ends with [DONE]: true",
		"200 served by anthropic/claude-sonnet-4.5 via anthropic, degraded: ranking (a Messages API message)",
		"200 served by openai/gpt-4o via openai, degraded: ranking (a Responses API response)",
		"200 served by openai/text-embedding-3-small (the upstream did not say which provider), degraded: ranking (embeddings)",
		"200 served by anthropic/claude-sonnet-4.5 via google-vertex, degraded: chain (a Messages API message)",
		"200 served by anthropic/claude-haiku-4.5 via amazon-bedrock, degraded: chain (a Messages API message)",
		"200 served by meta-llama/llama-3.3-70b-instruct via amazon-bedrock, degraded: chain",
		"Database: " + filepath.Join(dir, "config", "data", "requests.db"),
	} {
		require.Contains(t, out, want)
	}
	cfg := filepath.Join(dir, "config")
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--degraded", "true", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var rows []requestlog.Row
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	// The batch key's chain is lost on the direct upstream; the ml and
	// research teams' rankings are inert on the marketplace beside an
	// explicit order (theirs, and the Anthropic first-party default).
	lost := map[string][]string{}
	for _, r := range rows {
		lost[r.KeyID+" "+r.DecidedModel] = r.RoutingDegraded
	}
	require.Equal(t, map[string][]string{
		"k-batch openai/gpt-4o-mini":               {"chain"},
		"k-azure openai/gpt-4o":                    {"chain"}, // a direct upstream, like the batch key's
		"k-chat anthropic/claude-haiku-4.5":        {"chain"},
		"k-chat meta-llama/llama-3.3-70b-instruct": {"chain"},   // Bedrock's Converse, a direct upstream too
		"k-chat openai/gpt-4o":                     {"ranking"}, // chat and Responses alike
		"k-research anthropic/claude-haiku-4.5":    {"ranking"},
		"k-chat anthropic/claude-sonnet-4.5":       {"ranking"},
		"k-chat openai/text-embedding-3-small":     {"ranking"},
		"k-vertex anthropic/claude-sonnet-4.5":     {"chain"}, // the team's chain, on a direct upstream
	}, lost)

	// The zero-retention steps: one served by the endpoint that keeps
	// nothing, held by the upstream's knob; one refused on the direct
	// upstream. The rows say so, and the filter finds both.
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--data_policy", "zero_retention", "--format", "json")
	require.Equal(t, 0, code, errOut)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 2)
	// Both steps may land in one millisecond: take them by outcome, not
	// by order.
	if rows[0].RefusedCode == "" {
		rows[0], rows[1] = rows[1], rows[0]
	}
	require.Equal(t, "data_policy_unsatisfiable", rows[0].RefusedCode)
	require.Equal(t, "amazon-bedrock", rows[1].ServedProvider)
	require.Equal(t, "zero_retention=native", rows[1].DataPolicyVia)

	code, out, _ = runCLI(t, "", "rows", "--config", cfg, "--switched", "true", "--format", "csv")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Contains(t, lines[1], ",chain,")

	// --session reads one session's turns: the demo's chain request named
	// demo-session-1 in X-Session-Id.
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--session", "demo-session-1", "--format", "json")
	require.Equal(t, 0, code, errOut)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 1, out)
	require.Equal(t, "demo-session-1", rows[0].SessionID)
	require.Equal(t, "X-Session-Id", rows[0].SessionKey)
	require.Equal(t, "chain", rows[0].RoutingSwitchReason)
	require.NotEmpty(t, rows[0].SessionAffinity)

	code, _, errOut = runCLI(t, "", "rows", "--config", cfg, "--degraded", "perhaps")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "degraded")

	// The last hour, relative to now: every row the demo just recorded is
	// in it, and none is older than an hour.
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--all", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var every []requestlog.Row
	require.NoError(t, json.Unmarshal([]byte(out), &every))
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--from", "1h", "--all", "--format", "json")
	require.Equal(t, 0, code, errOut)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.NotEmpty(t, rows)
	require.Len(t, rows, len(every))
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--to", "-1h", "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[]", strings.TrimSpace(out))
	code, _, errOut = runCLI(t, "", "rows", "--config", cfg, "--from", "2026-12-02 06:40")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "or a time back from now, such as 1h or 7d")

	// Which requests were served outside the preference, or by a later
	// preferred provider: the verdict filter reads them off.
	code, out, errOut = runCLI(t, "", "rows", "--config", cfg, "--from", "1h", "--preference_verdict", "first_preferred", "--format", "json")
	require.Equal(t, 0, code, errOut)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Equal(t, requestlog.VerdictFirstPreferred, r.PreferenceVerdict)
		require.NotEmpty(t, r.PreferencePreferred)
		require.Equal(t, r.PreferencePreferred[0], strings.SplitN(r.ServedProvider, "/", 2)[0], "the first preferred provider served %s", r.RequestID)
	}
}

// TestClickHousePasswordTLSFromConfig runs `sluice migrate` and `sluice
// rows` on a configuration that reaches ClickHouse as production does: a
// user whose password is in the variable clickhouse_password_env names,
// TLS to the secure native port, and a CA file beside sluice.toml. A
// wrong password, or none in the environment, fails with a message that
// says so and never shows the password.
func TestClickHousePasswordTLSFromConfig(t *testing.T) {
	const password, wrong = "cli-pw-never-printed", "cli-wrong-never-printed"
	db := chtest.NewDatabaseName("cli_tls")
	ch := chtest.StartWith(t, chtest.Options{User: "sluice", Password: password, Databases: []string{db}, TLS: true})
	dir := t.TempDir()
	ca, err := os.ReadFile(ch.CAFile())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clickhouse-ca.pem"), ca, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(fmt.Sprintf(`[store]
kind = "clickhouse"
clickhouse_addr = %q
clickhouse_database = %q
clickhouse_user = "sluice"
clickhouse_password_env = "SLUICE_TEST_CLI_CH_PASSWORD"
clickhouse_tls = true
clickhouse_ca_file = "clickhouse-ca.pem"
`, ch.SecureAddr(), db)), 0o644))
	noSecret := func(outs ...string) {
		t.Helper()
		for _, o := range outs {
			require.NotContains(t, o, password)
			require.NotContains(t, o, wrong)
		}
	}

	t.Setenv("SLUICE_TEST_CLI_CH_PASSWORD", password)
	code, out, errOut := runCLI(t, "", "migrate", "--config", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied 001_")
	code, out, errOut = runCLI(t, "", "rows", "--config", dir, "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[]", strings.TrimSpace(out))
	noSecret(out, errOut)

	t.Setenv("SLUICE_TEST_CLI_CH_PASSWORD", wrong)
	for _, cmd := range []string{"migrate", "rows"} {
		code, out, errOut = runCLI(t, "", cmd, "--config", dir)
		require.Equal(t, 1, code, cmd)
		require.Contains(t, errOut, `authentication failed for user "sluice"`, cmd)
		noSecret(out, errOut)
	}

	require.NoError(t, os.Unsetenv("SLUICE_TEST_CLI_CH_PASSWORD"))
	code, _, errOut = runCLI(t, "", "rows", "--config", dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "sluice.toml:6: missing_env: [store] clickhouse_password_env: the environment variable SLUICE_TEST_CLI_CH_PASSWORD is not set")
}

// TestMigrateClickHouse applies the request-log migrations to a throwaway
// server, then finds nothing left to apply.
func TestMigrateClickHouse(t *testing.T) {
	ch := chtest.Start(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(fmt.Sprintf(
		"[store]\nkind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\n", ch.Addr(), chtest.NewDatabaseName("cli"))), 0o644))
	code, out, errOut := runCLI(t, "", "migrate", "--config", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied 001_")
	code, out, _ = runCLI(t, "", "migrate", "--config", dir)
	require.Equal(t, 0, code)
	require.Equal(t, "up to date\n", out)
	code, out, errOut = runCLI(t, "", "rows", "--config", dir, "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[]", strings.TrimSpace(out))
}

// TestDemoServeAndREADME runs `sluice demo --serve`, holds the README's demo
// excerpt to the output, sends every copy-paste command it prints, opens
// the analytics API with the admin token it prints, and checks the
// README's model examples against the demo catalog.
func TestDemoServeAndREADME(t *testing.T) {
	var out, errb bytes.Buffer
	ready, stop, done := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, interrupt: stop, serving: func() { close(ready) }}
	go func() { done <- run(env, []string{"demo", "--dir", t.TempDir(), "--serve", "--listen", "127.0.0.1:0"}) }()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("demo --serve ended with %d before serving:\n%s\n%s", code, out.String(), errb.String())
	}
	output := out.String()
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			<-done
		}
	}()

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	excerpt := readmeBlock(t, string(readme), "## What the demo prints")
	rows := map[string]bool{}
	inRows := false
	for _, l := range strings.Split(output, "\n") {
		if strings.HasPrefix(l, "TS ") {
			inRows = true
		}
		if f := strings.Fields(l); inRows && len(f) > 2 {
			rows[strings.Join(f[2:], " ")] = true
		}
		if inRows && l == "" {
			inRows = false
		}
	}
	for _, l := range strings.Split(excerpt, "\n") {
		if strings.HasPrefix(l, "[") || strings.HasPrefix(l, "      ") {
			require.Contains(t, output, l+"\n", "the README's demo excerpt is not what the demo prints")
			continue
		}
		// A row, printed without its TS and REQUEST_ID columns.
		require.True(t, rows[strings.Join(strings.Fields(l), " ")], "README row %q is not among the demo's rows", l)
	}

	serving := output[strings.Index(output, "Serving until Ctrl-C"):]
	base := regexp.MustCompile(`gateway:\s+(http://\S+)`).FindStringSubmatch(serving)[1]
	token := regexp.MustCompile(`admin token:\s+(\S+)`).FindStringSubmatch(output)[1]
	require.GreaterOrEqual(t, len(token), 32)
	get := func(path, auth string) int {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get("/api/v1/analytics/invocations", token), "the printed admin token opens the analytics API")
	require.Equal(t, http.StatusUnauthorized, get("/api/v1/analytics/invocations", "not-the-token"))
	require.Equal(t, http.StatusOK, get("/ui/login", ""), "the pages are served")

	curls := 0
	for _, l := range strings.Split(output, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "curl "):
			curls++
			args := shellWords(t, l)
			req, err := http.NewRequest(http.MethodPost, args[2], nil)
			require.NoError(t, err)
			for i := 3; i+1 < len(args); i += 2 {
				switch args[i] {
				case "-H":
					k, v, _ := strings.Cut(args[i+1], ": ")
					req.Header.Set(k, v)
				case "-d":
					req.Body = io.NopCloser(strings.NewReader(args[i+1]))
				}
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s\n%s", l, body)
		case strings.HasPrefix(l, "ANTHROPIC_BASE_URL="):
			require.Equal(t, "ANTHROPIC_BASE_URL="+base+" ANTHROPIC_AUTH_TOKEN=sk-sluice-demo-chat claude", l)
		case strings.HasPrefix(l, "SLUICE_KEY="):
			// The -c value is TOML, as Codex reads it.
			args := shellWords(t, l)
			cfg := args[len(args)-1]
			require.True(t, strings.HasPrefix(cfg, "model_providers.sluice="), cfg)
			var p struct{ Sluice map[string]string }
			require.NoError(t, toml.Unmarshal([]byte("sluice = "+strings.TrimPrefix(cfg, "model_providers.sluice=")), &p))
			require.Equal(t, map[string]string{"name": "sluice", "base_url": base + "/v1", "env_key": "SLUICE_KEY", "wire_api": "responses"}, p.Sluice)
		}
	}
	require.Equal(t, 4, curls, "one curl per API: chat, messages, responses, embeddings")

	close(stop)
	stopped = true
	require.Equal(t, 0, <-done, errb.String())

	// The README's model examples are models of the demo catalog, as each
	// API resolves them.
	snap, diags := snapshot.Load(demoDir)
	require.Empty(t, diags)
	for _, ex := range []struct{ re, owner string }{
		{"Models are catalog slugs \\(`([^`]+)`\\)", "openai"},
		{"Anthropic's own ids \\(`([^`]+)`\\)", "anthropic"},
		{"on the Responses\\s+API OpenAI's \\(`([^`]+)`\\)", "openai"},
	} {
		m := regexp.MustCompile(ex.re).FindStringSubmatch(string(readme))
		require.NotNil(t, m, "README lost its example %s", ex.re)
		_, ok := snap.Catalog.Model(snap.ResolveModel(m[1], ex.owner))
		require.True(t, ok, "README example model %q is not in the demo catalog", m[1])
	}
}

// readmeBlock returns the first fenced block after heading.
func readmeBlock(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	require.GreaterOrEqual(t, i, 0, heading)
	rest := doc[i:]
	start := strings.Index(rest, "```\n")
	require.GreaterOrEqual(t, start, 0)
	rest = rest[start+4:]
	end := strings.Index(rest, "```")
	require.GreaterOrEqual(t, end, 0)
	return strings.TrimRight(rest[:end], "\n")
}

// shellWords splits a command line as a POSIX shell does for the quoting
// the demo prints: words separated by spaces, single quotes kept literal.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
