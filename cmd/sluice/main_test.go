package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/profiles"
)

const demoDir = "../../testdata/demo"

// runCLI runs the CLI in-process and returns exit code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(&cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// demoWith copies the demo configuration to a temporary directory, passes
// its sluice.toml through edit, and returns the directory.
func demoWith(t *testing.T, edit func(toml string) string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte(edit(string(b))), 0o644))
	return dir
}

func TestCLI(t *testing.T) {
	bad := "../../testdata/profiles/bad-sluice-cross-refs"
	wantBad, err := os.ReadFile(filepath.Join(bad, "want.errors"))
	require.NoError(t, err)
	tests := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		stdout   string // exact, when set
		contains []string
	}{
		{name: "no args", args: nil, code: 2, contains: []string{"Commands:"}},
		{name: "help", args: []string{"help"}, code: 0, contains: []string{"check", "explain", "keys"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2},
		{name: "check demo", args: []string{"check", "--config", demoDir}, code: 0, contains: []string{"ok: 5 profiles, 5 keys, 5 upstreams, 4 routes, 2 guardrail files, 20 catalog models"}},
		{name: "check bad prints every located error", args: []string{"check", "--config", bad}, code: 1, stdout: string(wantBad)},
		{name: "serve refuses a bad config with every located error", args: []string{"serve", "--config", bad}, code: 1,
			contains: strings.Split(strings.TrimSpace(string(wantBad)), "\n")},
		{name: "check missing dir", args: []string{"check", "--config", "/nonexistent"}, code: 1, contains: []string{"sluice.toml: read_error:"}},
		{name: "check stray argument", args: []string{"check", "extra"}, code: 2},
		{name: "explain needs key", args: []string{"explain", "--config", demoDir}, code: 2},
		{name: "explain unknown key", args: []string{"explain", "--config", demoDir, "--key", "nope"}, code: 1},
		{name: "explain text", args: []string{"explain", "--config", demoDir, "--key", "k-chat"}, code: 0,
			contains: []string{"providers.rank_by", "latency", "project:chat", "profiles/projects/chat.toml"}},
		{name: "explain refuses raw routing field", args: []string{"explain", "--config", demoDir, "--key", "k-chat", "--request", "testdata/raw-provider.json"},
			code: 1},
		{name: "explain shows a translation refusal", args: []string{"explain", "--config", demoDir, "--key", "k-batch", "--request", "testdata/anthropic-n2.json"},
			code: 0, contains: []string{"refuse: unsupported_parameter"}},
		{name: "explain --model without a request", args: []string{"explain", "--config", demoDir, "--key", "k-chat", "--model", "openai/gpt-4o"}, code: 0,
			contains: []string{"decided model: openai/gpt-4o"}},
		{name: "explain --request - reads stdin", stdin: `{"model": "anthropic/claude-haiku-4.5", "messages": [{"role": "user", "content": "x"}]}`,
			args: []string{"explain", "--config", demoDir, "--key", "k-chat", "--request", "-"}, code: 0, contains: []string{"decided model: anthropic/claude-haiku-4.5"}},
		{name: "explain --model replaces the request's model", stdin: `{"model": "anthropic/claude-haiku-4.5", "messages": [{"role": "user", "content": "x"}]}`,
			args: []string{"explain", "--config", demoDir, "--key", "k-chat", "--request", "-", "--model", "openai/gpt-4o-mini"}, code: 0, contains: []string{"decided model: openai/gpt-4o-mini"}},
		{name: "explain: a model outside the catalog is refused as such, with the slug it may mean", args: []string{"explain", "--config", demoDir, "--key", "k-chat", "--model", "claude-haiku-4.5", "--json"}, code: 0,
			contains: []string{`"code": "model_not_in_catalog"`, `model \"claude-haiku-4.5\" is not in the model catalog`, `(did you mean \"anthropic/claude-haiku-4.5\"?)`}},
		{name: "keys hash", stdin: "sk-sluice-demo-chat\n", args: []string{"keys", "hash"}, code: 0, stdout: profiles.HashSecret("sk-sluice-demo-chat") + "\n"},
		{name: "keys hash empty", stdin: "", args: []string{"keys", "hash"}, code: 1},
		{name: "keys usage", args: []string{"keys"}, code: 2},
		{name: "test demo", args: []string{"test", "--config", demoDir}, code: 0, contains: []string{"PASS: 7/7"}},
		{name: "test --run selects", args: []string{"test", "--config", demoDir, "--run", "denied", "-v"}, code: 0,
			contains: []string{"test_xai_denied_for_everyone: PASS", "PASS: 2/2"}},
		{name: "test --run selecting nothing", args: []string{"test", "--config", demoDir, "--run", "deny"}, code: 1,
			contains: []string{`sluice test: guardrails: no test name matches "deny"`}},
		{name: "test bad --run", args: []string{"test", "--config", demoDir, "--run", "("}, code: 2, contains: []string{"sluice test: --run: "}},
		{name: "version", args: []string{"version"}, code: 0, contains: []string{"sluice ", "\ncommit ", "\ngo     " + runtime.Version() + "\n"}},
		{name: "version json", args: []string{"version", "--json"}, code: 0, contains: []string{`"version": "`, `"commit": "`, `"go": "` + runtime.Version() + `"`}},
		{name: "version stray argument", args: []string{"version", "now"}, code: 2},
		{name: "test missing dir", args: []string{"test", "--config", "/nonexistent"}, code: 1, contains: []string{"no such file or directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			if tc.stdout != "" {
				require.Equal(t, tc.stdout, out)
			}
			for _, s := range tc.contains {
				require.Contains(t, out+errOut, s)
			}
		})
	}
}

func TestExplainJSONWithRequestRung(t *testing.T) {
	code, out, errOut := runCLI(t, "", "explain", "--config", demoDir, "--key", "k-finance", "--request", "testdata/request-routing.json", "--json")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Principal  profiles.Principal `json:"principal"`
		Profile    profiles.ProfileView
		Provenance map[string]string `json:"provenance"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "finance", got.Principal.Team)
	require.Equal(t, "throughput", *got.Profile.Providers.RankBy)
	require.Equal(t, "request", got.Provenance["providers.rank_by"])
	require.Equal(t, "team:finance", got.Provenance["fallbacks"])
	require.Equal(t, []string{}, got.Profile.Fallbacks)
}

func TestKeysNewRoundTrips(t *testing.T) {
	code, out, _ := runCLI(t, "", "keys", "new")
	require.Equal(t, 0, code)
	var secret, hash string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " = ")
		switch k {
		case "secret":
			secret = v
		case "sha256":
			hash = v
		}
	}
	require.True(t, strings.HasPrefix(secret, profiles.SecretPrefix))
	require.Equal(t, profiles.HashSecret(secret), hash)
	code, out, _ = runCLI(t, secret, "keys", "hash")
	require.Equal(t, 0, code)
	require.Equal(t, hash+"\n", out)
}

func TestVersionFrom(t *testing.T) {
	yes, no := true, false
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/sluicegw/sluice", Version: "v0.0.0-20261201120000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-12-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	clean := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba"}, {Key: "vcs.modified", Value: "false"}}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		name            string
		bi              *debug.BuildInfo
		version, commit string // link-time fallbacks
		want            versionInfo
	}{
		{"VCS stamp", stamped, "", "", versionInfo{Version: "v0.0.0-20261201120000-0123456789ab+dirty", Commit: "0123456789abcdef", Modified: &yes, CommitTime: "2026-12-01T12:00:00Z", Go: "go1.26.8"}},
		{"the stamp wins over link-time values", clean, "v9", "zzz", versionInfo{Version: "v1.2.0", Commit: "fedcba", Modified: &no, Go: "go1.26.8"}},
		{"no stamp: link-time values", bare, "v1.3.0", "abc123", versionInfo{Version: "v1.3.0", Commit: "abc123", Go: "go1.26.8"}},
		{"nothing known", bare, "", "", versionInfo{Version: "(devel)", Commit: "unknown", Go: "go1.26.8"}},
		{"no build information", nil, "", "", versionInfo{Version: "(devel)", Commit: "unknown", Go: runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, versionFrom(tc.bi, tc.version, tc.commit))
		})
	}
}

// TestExplainRealtime: explain --api realtime shows which targets a session
// could use: the members in order (Azure OpenAI's among them), a
// marketplace skipped as it does not speak the API, and a takes_over
// target left out.
func TestExplainRealtime(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(demoDir)))
	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b = append(b, "\n[[upstreams]]\nname = \"openai-b\"\nconnector = \"openai\"\n"+
		"\n[[upstreams]]\nname = \"az\"\nconnector = \"azure\"\nbase_url = \"https://sluice-test.openai.azure.com\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\n"+
		"\n[[routes]]\nmodel = \"voice\"\n"+
		"[[routes.targets]]\nupstream = \"openai\"\nmodel = \"openai/gpt-realtime\"\n"+
		"[[routes.targets]]\nupstream = \"az\"\nmodel = \"openai/gpt-realtime\"\n"+
		"[[routes.targets]]\nupstream = \"market\"\nmodel = \"openai/gpt-realtime\"\n"+
		"[[routes.targets]]\nupstream = \"openai-b\"\nmodel = \"openai/gpt-realtime\"\ntakes_over = [\"throttled\"]\n"...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	code, out, errOut := runCLI(t, "", "explain", "--config", dir, "--key", "k-batch", "--api", "realtime", "--model", "voice")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1. openai/openai/gpt-realtime")
	require.Contains(t, out, "2. az/openai/gpt-realtime", "Azure OpenAI speaks the Realtime API")
	require.NotContains(t, out, "skipped az/")
	require.Contains(t, out, "skipped market/openai/gpt-realtime: api_unsupported")
	require.Contains(t, out, "left out openai-b/openai/gpt-realtime: takes over throttled, and a realtime session never uses a restricted target")
	code, _, errOut = runCLI(t, "", "explain", "--config", dir, "--key", "k-batch", "--api", "realtime")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--model")
}
