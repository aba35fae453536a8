package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
		"[1/12] plain", "200 served by openai/gpt-4o via openai",
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
		"k-batch openai/gpt-4o-mini":            {"chain"},
		"k-chat openai/gpt-4o":                  {"ranking"}, // chat and Responses alike
		"k-research anthropic/claude-haiku-4.5": {"ranking"},
		"k-chat anthropic/claude-sonnet-4.5":    {"ranking"},
		"k-chat openai/text-embedding-3-small":  {"ranking"},
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
