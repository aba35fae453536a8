//go:build unix

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Three coding agents, pinned in testdata/sdk/package.json beside the npm
// clients, run headless against the gateway on loopback, the simulator
// behind it: Claude Code (claude -p), Codex CLI (codex exec) and an OpenAI
// Agents SDK agent (testdata/sdk/agents.cjs). Each run gets a fresh HOME,
// no credential but its sluice key, and its agent's telemetry, update
// checks, plugin syncs and retries turned off; a request to any host but
// loopback fails its case, whichever client sends it (guardEnv). testdata/sdk/AGENTS.md records how
// each is run and what it sends. With CI set, missing node or packages fail
// the test (nodeSDK).

// agentCases holds one file a run (see agentCase).
const agentCases = "../testdata/sdk/agents"

// agentTimeout bounds one agent run; on expiry the agent's process group is
// killed.
const agentTimeout = 90 * time.Second

// agentCase is one agent run (testdata/sdk/agents/<name>.json).
type agentCase struct {
	// Agent is "claude-code", "codex" or "agents-sdk".
	Agent string `json:"agent"`
	// Key names the test key the agent authenticates with, which picks the
	// upstream: claude (Anthropic), batch (OpenAI), chat (the
	// OpenRouter-kind marketplace), finance (the Vercel-kind one, for a team
	// that allows four providers only), edge (the Vercel-kind one, with
	// no provider restriction: Vercel's Messages endpoint has no knob for
	// an allowed list), vertex (Claude on Google Vertex AI), azure (Azure
	// OpenAI's v1 surface, by api-key) or bedrock (Amazon Bedrock, signed
	// with SigV4 from the environment's AWS credentials).
	Key string `json:"key"`
	// Auth is how Claude Code sends the key: "apiKey" (ANTHROPIC_API_KEY,
	// x-api-key; the default) or "authToken" (ANTHROPIC_AUTH_TOKEN, a
	// bearer token).
	Auth  string `json:"auth"`
	Model string `json:"model"`
	// Prompt is the agent's task. {{note}} in it stands for the absolute
	// path of note.txt, a file in the agent's working directory that holds
	// Note.
	Prompt string `json:"prompt"`
	Note   string `json:"note"`
	// WebSocket turns on Codex's WebSocket mode (supports_websockets on
	// its provider): its turns go over GET /v1/responses, whose rows say
	// api responses_ws.
	WebSocket bool `json:"websocket"`
	// Tool is the Agents SDK agent's one function tool (parameters
	// {"city": string}); it answers Result whatever it is asked.
	Tool *struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Result      string `json:"result"`
	} `json:"tool"`
	// Answer holds strings the agent's final answer must contain.
	Answer []string `json:"answer"`
	// Want maps paths into the agent's output (see runAgent) to the values
	// they must hold; "~nonempty" asks for a non-empty value.
	Want map[string]any `json:"want"`
	// Rows are the request-log rows the run must leave, oldest first, one
	// a model call: each holds these columns. "~nonempty" asks for a
	// non-empty value, "@path" for the value at path in the agent's output.
	Rows []map[string]any `json:"rows"`
}

func TestAgentCases(t *testing.T) {
	sdk := nodeSDK(t)
	files, err := filepath.Glob(filepath.Join(agentCases, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	h := agentsHarness(t)
	stray := newStrayProxy(t)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var c agentCase
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&c), f)
		require.NotEmpty(t, c.Rows, "%s names the rows its run leaves", f)
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			secret := inboundSecrets[c.Key]
			switch c.Key {
			case "edge":
				secret = secretAgentsEdge
			case "vertex":
				secret = secretAgentsVertex
			case "azure":
				secret = secretAgentsAzure
			case "bedrock":
				secret = secretAgentsBedrock
			}
			require.NotEmpty(t, secret, "key %q", c.Key)
			before := rowIDs(t, h)
			strayLog := filepath.Join(t.TempDir(), "stray.log")
			// Checked also when the run fails.
			defer func() {
				assert.Empty(t, stray.take(), "requests the agent sent past the gateway (through the proxy)")
				assert.Empty(t, strayLines(t, strayLog), "requests the agent's node tried past the gateway")
			}()
			out := runAgent(t, sdk, h.ts.URL, guardEnv(t, stray.srv.URL, strayLog), secret, c)
			answer, _ := out["answer"].(string)
			for _, s := range c.Answer {
				assert.Contains(t, answer, s, "the final answer, in %s", mustJSON(out))
			}
			for path, want := range c.Want {
				got, ok := jsonPath(out, path)
				if want == "~nonempty" {
					assert.True(t, ok && nonEmpty(got), "%s is empty: %v\n%s", path, got, mustJSON(out))
					continue
				}
				assert.True(t, ok, "no %s in %s", path, mustJSON(out))
				assert.Equal(t, want, got, "%s in %s", path, mustJSON(out))
			}
			rows := newRows(t, h, before, len(c.Rows))
			for i, want := range c.Rows {
				if i >= len(rows) {
					break
				}
				row := rowMap(t, rows[i])
				for k, v := range want {
					switch s, _ := v.(string); {
					case s == "~nonempty":
						assert.True(t, nonEmpty(row[k]), "row %d: %s is empty", i, k)
					case strings.HasPrefix(s, "@"):
						got, ok := jsonPath(out, s[1:])
						assert.True(t, ok, "no %s in %s", s[1:], mustJSON(out))
						assert.Equal(t, got, row[k], "row %d: %s, against %s", i, k, s[1:])
					default:
						assert.Equal(t, v, row[k], "row %d: %s", i, k)
					}
				}
			}
		})
	}
}

// secretAgentsEdge is the edge key of the agent cases: team agents (no
// team or project profile), on the Vercel-kind upstream.
const secretAgentsEdge = "sk-sluice-test-agents-edge"

// secretAgentsVertex is the vertex key of the agent cases: team agents, on
// the Vertex AI upstream.
const secretAgentsVertex = "sk-sluice-test-agents-vertex"

// secretAgentsAzure is the azure key of the agent cases: team agents, on
// an Azure OpenAI upstream (api-key azureAgentsKey).
const (
	secretAgentsAzure = "sk-sluice-test-agents-azure"
	azureAgentsKey    = "azure-agents-platform-key"
)

// secretAgentsBedrock is the bedrock key of the agent cases: team agents,
// on the Bedrock upstream of bedrock_test.go.
const secretAgentsBedrock = "sk-sluice-test-agents-bedrock"

// agentsHarness is the inbound tests' gateway (the demo configuration and
// the claude key) with four changes. The agents' bodies are far above the
// harness's 64 KiB limit (Claude Code's first turn is about 90 KB), so the
// limit is the production default. The org's provider deny list goes, from
// its profile and its guardrail: the Vercel-kind upstream cannot exclude a
// provider, so with it every request on that upstream is refused before an
// agent could get an answer (the guardrail's own Rego test, which the
// gateway does not run, is left as it is). The edge key is added. And a
// Vertex AI upstream (gcp) with its key: the simulator's Vertex endpoints
// and token endpoint, the service-account key file naming it in the
// agent-free environment of the gateway, the simulator answering the
// agents' turns; an Azure OpenAI upstream with its key; and the Bedrock
// upstream of bedrock_test.go with a key on it.
func agentsHarness(t *testing.T) *harness {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	vsim := simulator.NewVertex(&key.PublicKey, time.Hour)
	vbase, err := vsim.Start()
	require.NoError(t, err)
	t.Cleanup(vsim.Close)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeVertexKey(t, key, vsim.TokenURL()))
	drop := func(dir, file, line string) {
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), line, file)
		require.NoError(t, os.WriteFile(p, bytes.Replace(b, []byte(line), nil, 1), 0o644))
	}
	noDenyList := func(dir string) {
		drop(dir, "profiles/org.toml", "denied = [\"deepinfra/fp4\"]\n")
		drop(dir, "guardrails/org.rego", "deny_providers contains \"deepinfra/fp4\"\n")
	}
	edge := "[[keys]]\nid = \"k-agents-edge\"\nsha256 = \"" + profiles.HashSecret(secretAgentsEdge) + "\"\norg = \"acme\"\nteam = \"agents\"\nproject = \"agents\"\nupstream = \"edge\"\n\n"
	vertex := "[[keys]]\nid = \"k-agents-vertex\"\nsha256 = \"" + profiles.HashSecret(secretAgentsVertex) + "\"\norg = \"acme\"\nteam = \"agents\"\nproject = \"agents\"\nupstream = \"gcp\"\n\n"
	gcp := "[[upstreams]]\nname = \"gcp\"\nconnector = \"vertex\"\nproject = \"sluice-test\"\nregion = \"us-east5\"\n\n[[keys]]\nid = \"k-chat\""
	// Azure: an upstream on the simulator's Azure endpoints and a key on it.
	azure := "[[upstreams]]\nname = \"azure\"\nconnector = \"azure\"\nbase_url = \"https://sluice-agents.openai.azure.com\"\napi_key_env = \"AZURE_AGENTS_API_KEY\"\n\n" +
		"[[keys]]\nid = \"k-agents-azure\"\nsha256 = \"" + profiles.HashSecret(secretAgentsAzure) + "\"\norg = \"acme\"\nteam = \"agents\"\nproject = \"agents\"\nupstream = \"azure\"\n\n"
	t.Setenv("AZURE_AGENTS_API_KEY", azureAgentsKey)
	// Bedrock: the upstream of bedrock_test.go, credentials in the environment.
	bedrock := "[[keys]]\nid = \"k-agents-bedrock\"\nsha256 = \"" + profiles.HashSecret(secretAgentsBedrock) + "\"\norg = \"acme\"\nteam = \"agents\"\nproject = \"agents\"\nupstream = \"aws\"\n\n"
	bedrockEnv(t, true)
	prep := func(dir string) { noDenyList(dir); bedrockCatalog(t)(dir) }
	h := newHarnessOpts(t, prep, func(c *simulator.Config) { c.AzureAPIKey = azureAgentsKey; bedrockSim(c) }, func(o *gateway.Options) {
		o.UpstreamURLs["gcp"] = vbase
		o.UpstreamURLs["azure"] = strings.Replace(o.UpstreamURLs["openai"], "/openai/v1", "/azure/openai/v1", 1)
		bedrockURL(o)
	}, append(testEdits[:0:0], claudeKeyEdit(), [2]string{"[[keys]]\nid = \"k-analyst\"", edge + vertex + azure + bedrock + "[[keys]]\nid = \"k-analyst\""},
		[2]string{"[[keys]]\nid = \"k-chat\"", gcp}, bedrockEdits[0],
		[2]string{"max_body_bytes = 65536\n", "max_body_bytes = 10485760\n"})...)
	vsim.Generate(h.sim)
	return h
}

// runAgent runs the case's agent and returns its output, with the final
// answer as "answer":
//   - claude-code: the JSON object of claude -p --output-format json
//     ("result", "is_error", "num_turns", "session_id", ...).
//   - codex: "events" (the JSONL of codex exec --json), "thread_id" (from
//     thread.started), "commands" (the command_execution items), "errors"
//     (the messages of error items and failed turns).
//   - agents-sdk: what testdata/sdk/agents.cjs prints ("finalOutput",
//     "called", "requestIDs" or "error").
func runAgent(t *testing.T, sdk, gatewayURL string, guard []string, secret string, c agentCase) map[string]any {
	t.Helper()
	dir := t.TempDir()
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.MkdirAll(work, 0o755))
	note := filepath.Join(work, "note.txt")
	require.NoError(t, os.WriteFile(note, []byte(c.Note), 0o644))
	prompt := strings.ReplaceAll(c.Prompt, "{{note}}", note)
	modules := filepath.Join(sdk, "node_modules")
	// Nothing of the test's environment reaches the agent (it holds the
	// upstreams' platform keys): a PATH, a fresh HOME, the guard against
	// stray requests, and what is set below.
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TMPDIR=" + dir}, guard...)
	var args []string
	switch c.Agent {
	case "claude-code":
		// The wrapper finds the platform package's binary itself, which
		// npm ci --ignore-scripts leaves uncopied over bin/claude.exe.
		args = []string{filepath.Join(modules, "@anthropic-ai/claude-code/cli-wrapper.cjs"),
			"-p", prompt, "--output-format", "json", "--model", c.Model, "--allowedTools", "Read"}
		key := "ANTHROPIC_API_KEY="
		if c.Auth == "authToken" {
			key = "ANTHROPIC_AUTH_TOKEN="
		}
		env = append(env, "ANTHROPIC_BASE_URL="+gatewayURL, key+secret,
			"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0")
	case "codex":
		codexHome := filepath.Join(dir, "codex")
		require.NoError(t, os.MkdirAll(codexHome, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexConfig(gatewayURL+"/v1", c.Model, c.WebSocket)), 0o644))
		args = []string{filepath.Join(modules, "@openai/codex/bin/codex.js"), "exec", "--strict-config",
			"--skip-git-repo-check", "--ephemeral", "--json", prompt}
		env = append(env, "CODEX_HOME="+codexHome, "SLUICE_API_KEY="+secret)
	case "agents-sdk":
		require.NotNil(t, c.Tool, "an agents-sdk case names its tool")
		spec, err := json.Marshal(map[string]any{"baseURL": gatewayURL + "/v1", "apiKey": secret,
			"model": c.Model, "prompt": prompt, "tool": c.Tool})
		require.NoError(t, err)
		driver, err := filepath.Abs(filepath.Join(sdkDir, "agents.cjs"))
		require.NoError(t, err)
		args = []string{driver, string(spec)}
		env = append(env, "NODE_PATH="+modules, "OPENAI_AGENTS_DISABLE_TRACING=1")
	default:
		t.Fatalf("agent %q", c.Agent)
	}
	stdout, stderr, err := runBounded(t, work, env, "node", args...)
	if err != nil {
		// What the agent said went wrong, ahead of its whole output.
		var why any
		if c.Agent == "codex" {
			why = codexErrors(stdout)
		} else if out := map[string]any{}; json.Unmarshal(bytes.TrimSpace(stdout), &out) == nil {
			why = out["result"] // claude-code
			if e, ok := out["error"].(map[string]any); ok {
				why = e["message"] // agents-sdk
			}
		}
		t.Fatalf("%s: %v: %v\nstdout: %s\nstderr: %s", c.Agent, err, why, stdout, stderr)
	}
	out := map[string]any{}
	switch c.Agent {
	case "codex":
		events, err := codexEvents(stdout)
		require.NoError(t, err, "codex output: %s", stdout)
		for _, ev := range events {
			item, _ := ev["item"].(map[string]any)
			switch {
			case ev["type"] == "thread.started":
				out["thread_id"] = ev["thread_id"]
			case ev["type"] == "item.completed" && item["type"] == "agent_message":
				out["answer"] = item["text"]
			case ev["type"] == "item.completed" && item["type"] == "command_execution":
				cmds, _ := out["commands"].([]any)
				out["commands"] = append(cmds, item)
			}
		}
		out["events"], out["errors"] = events, codexErrors(stdout)
	default:
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout), &out), "%s output: %s\n%s", c.Agent, stdout, stderr)
		if c.Agent == "claude-code" {
			out["answer"] = out["result"]
		} else {
			out["answer"] = out["finalOutput"]
		}
	}
	return out
}

// codexEvents parses the JSONL codex exec --json prints.
func codexEvents(stdout []byte) ([]map[string]any, error) {
	var events []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, sc.Err()
}

// codexErrors is what Codex's events say went wrong: the messages of its
// error items and events, and of a failed turn.
func codexErrors(stdout []byte) []string {
	events, _ := codexEvents(stdout)
	var errs []string
	for _, ev := range events {
		item, _ := ev["item"].(map[string]any)
		switch {
		case ev["type"] == "item.completed" && item["type"] == "error":
			errs = append(errs, fmt.Sprint(item["message"]))
		case ev["type"] == "error":
			errs = append(errs, fmt.Sprint(ev["message"]))
		case ev["type"] == "turn.failed":
			e, _ := ev["error"].(map[string]any)
			errs = append(errs, "turn failed: "+fmt.Sprint(e["message"]))
		}
	}
	return errs
}

// guardEnv is what keeps an agent run from reaching past loopback unseen,
// whichever client sends the request: every node process preloads
// testdata/sdk/guard.cjs, which fails a connection or a lookup of any
// other host inside node's own net and dns (where Node's built-in fetch,
// which ignores HTTP(S)_PROXY on Node 20, connects too) and writes it to
// strayLog; a program that is not node (Claude Code's and Codex's native
// binaries, git) is sent through the refusing proxy at proxyURL.
func guardEnv(t *testing.T, proxyURL, strayLog string) []string {
	t.Helper()
	guard, err := filepath.Abs(filepath.Join(sdkDir, "guard.cjs"))
	require.NoError(t, err)
	return []string{"NODE_OPTIONS=--require " + strconv.Quote(guard), "SLUICE_STRAY_LOG=" + strayLog,
		"HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL, "http_proxy=" + proxyURL, "https_proxy=" + proxyURL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

// strayLines is what guard.cjs wrote to strayLog: one line a request it
// refused ("<pid> connect|lookup|fetch <host>").
func strayLines(t *testing.T, strayLog string) []string {
	t.Helper()
	b, err := os.ReadFile(strayLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestAgentGuard: the guard of the agent runs catches a stray request
// from every client a node program has — the built-in fetch, http, https,
// net, tls and dns — and lets loopback through. The refusing proxy alone
// cannot: Node 20's built-in fetch, which the Agents SDK's openai client
// uses, ignores HTTP(S)_PROXY. Without the preload in guardEnv it fails
// (no line is written for any of the tries).
func TestAgentGuard(t *testing.T) {
	nodeSDK(t)
	stray := newStrayProxy(t)
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer local.Close()
	dir := t.TempDir()
	strayLog := filepath.Join(dir, "stray.log")
	script := `
const http = require('node:http'), https = require('node:https'), net = require('node:net'), tls = require('node:tls'), dns = require('node:dns');
const tries = {
  loopback: () => fetch(process.argv[1]).then(r => r.text()),
  fetch: () => fetch('https://example.com/').then(r => r.status),
  http: () => new Promise((ok, no) => http.get('http://example.org/', r => ok(r.statusCode)).on('error', no)),
  https: () => new Promise((ok, no) => https.get('https://192.0.2.1/', r => ok(r.statusCode)).on('error', no)),
  net: () => new Promise((ok, no) => net.connect(443, '198.51.100.1').on('connect', ok).on('error', no)),
  tls: () => new Promise((ok, no) => tls.connect({host: 'example.net', port: 443}).on('secureConnect', ok).on('error', no)),
  dns: () => dns.promises.lookup('example.edu'),
};
(async () => {
  const out = {};
  for (const [k, f] of Object.entries(tries)) {
    out[k] = await f().then(v => 'answered ' + String(v), e => 'failed');
  }
  console.log(JSON.stringify(out));
})();`
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}, guardEnv(t, stray.srv.URL, strayLog)...)
	stdout, stderr, err := runBounded(t, dir, env, "node", "-e", script, local.URL)
	require.NoError(t, err, "%s", stderr)
	var out map[string]string
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout), &out), "%s", stdout)
	require.Equal(t, map[string]string{"loopback": "answered ok", "fetch": "failed", "http": "failed", "https": "failed",
		"net": "failed", "tls": "failed", "dns": "failed"}, out)
	var hosts []string
	for _, l := range strayLines(t, strayLog) {
		parts := strings.SplitN(l, " ", 3)
		require.Len(t, parts, 3, l)
		hosts = append(hosts, parts[1]+" "+parts[2])
	}
	require.ElementsMatch(t, []string{"fetch example.com", "connect example.org", "connect 192.0.2.1",
		"connect 198.51.100.1", "connect example.net", "lookup example.edu"}, hosts)
	require.Empty(t, stray.take(), "nothing reached the proxy: the guard refused first")
}

// strayProxy is the proxy the agents are told to reach every host but
// loopback through. It forwards nothing: it refuses each request and
// records its method and host, so that a case fails when its agent reaches
// past the gateway (telemetry, update checks, plugin syncs: what an offline
// CI machine would drop without a word).
type strayProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newStrayProxy(t *testing.T) *strayProxy {
	t.Helper()
	p := &strayProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hosts = append(p.hosts, r.Method+" "+r.Host)
		p.mu.Unlock()
		http.Error(w, "the sluice agent tests send nothing past the gateway", http.StatusForbidden)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// take returns and forgets the recorded requests.
func (p *strayProxy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.hosts
	p.hosts = nil
	return out
}

// codexConfig is the config.toml of a Codex home that talks to the gateway
// only: a custom provider on the Responses API with the sluice key from
// SLUICE_API_KEY, no retries, no approval prompts, a read-only sandbox for
// the commands the model asks for, and no analytics, update check or
// curated-plugin sync (which reaches for GitHub and ChatGPT's backend).
// With websocket, the provider says supports_websockets: Codex then asks
// for its turns over a Responses WebSocket first.
func codexConfig(baseURL, model string, websocket bool) string {
	ws := ""
	if websocket {
		ws = "supports_websockets = true\n"
	}
	return `model = ` + tomlQuote(model) + `
model_provider = "sluice"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.sluice]
name = "sluice"
base_url = ` + tomlQuote(baseURL) + `
env_key = "SLUICE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
` + ws
}

// tomlQuote quotes s as a TOML basic string (the JSON quoting of a plain
// URL or model name is one).
func tomlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// runBounded runs a command in its own process group in dir, with exactly
// env, and kills the whole group (the npm launchers spawn the native
// binary as a child) when agentTimeout passes.
func runBounded(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = errors.New("killed after " + agentTimeout.String() + ": " + err.Error())
	}
	return o.Bytes(), e.Bytes(), err
}

// rowIDs is the set of request ids the store holds.
func rowIDs(t *testing.T, h *harness) map[string]bool {
	t.Helper()
	page, err := h.srv.Store().Query(context.Background(), requestlog.Filter{Limit: requestlog.MaxLimit})
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, r := range page.Rows {
		ids[r.RequestID] = true
	}
	return ids
}

// newRows waits (bounded) for n rows that are not in before, then a little
// longer for any more, and returns them oldest first; it fails unless there
// are exactly n.
func newRows(t *testing.T, h *harness, before map[string]bool, n int) []requestlog.Row {
	t.Helper()
	fresh := func() []requestlog.Row {
		page, err := h.srv.Store().Query(context.Background(), requestlog.Filter{Limit: requestlog.MaxLimit})
		require.NoError(t, err)
		var rows []requestlog.Row
		for _, r := range page.Rows {
			if !before[r.RequestID] {
				rows = append(rows, r)
			}
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].TS.Before(rows[j].TS) })
		return rows
	}
	deadline := time.Now().Add(5 * time.Second)
	rows := fresh()
	for len(rows) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		rows = fresh()
	}
	// The agent has exited, so every request it made has been answered;
	// a row beyond n would be flushed within the store's 10 ms interval.
	time.Sleep(200 * time.Millisecond)
	rows = fresh()
	var got []string
	for _, r := range rows {
		got = append(got, r.API+" "+r.ServedModel+" "+r.RequestID)
	}
	assert.Len(t, rows, n, "the run's request-log rows: %v", got)
	return rows
}
