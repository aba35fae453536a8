package gateway_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The official npm clients (@anthropic-ai/sdk and openai, pinned in
// testdata/sdk/package.json) called against the gateway over loopback,
// driven by testdata/sdk/drive.cjs with Debian's node. .ci/run installs
// them (npm ci) into a cache directory and names it in SLUICE_NODE_SDK;
// with CI set, a missing node or client fails the test rather than skips it.

// sdkDir holds the driver, the pinned package and the cases.
const sdkDir = "../testdata/sdk"

// sdkCase is one client call (testdata/sdk/cases/<name>.json).
type sdkCase struct {
	// Gateway is "replay" (testdata/recorded/config, each upstream serving
	// the recorded answer Replay names) or "simulator" (the demo
	// configuration with the inbound tests' keys, against the simulator).
	Gateway string `json:"gateway"`
	Replay  string `json:"replay"`
	// Key names the key: an upstream of the replay configuration (market,
	// edge, openai, anthropic) or an inbound test key (chat, batch, claude,
	// ...).
	Key string `json:"key"`
	// Auth is how the Anthropic client sends it: "apiKey" (x-api-key, the
	// default) or "authToken" (a bearer token, as Claude Code does with
	// ANTHROPIC_AUTH_TOKEN).
	Auth    string            `json:"auth"`
	Client  string            `json:"client"`
	Call    string            `json:"call"`
	Headers map[string]string `json:"headers"`
	Params  json.RawMessage   `json:"params"`
	// Want maps paths into the driver's output ("value.content.0.type",
	// "error.class") to the values they must hold; "~nonempty" asks for a
	// non-empty string, array or object.
	Want map[string]any `json:"want"`
	// Row holds request-log columns that must have these values.
	Row map[string]any `json:"row"`
}

// nodeSDK returns the directory holding the clients' and agents'
// node_modules, failing under CI and skipping elsewhere when node or a
// pinned package is missing.
func nodeSDK(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("the npm client tests need %s (bash .ci/run installs it and sets SLUICE_NODE_SDK)", why)
		}
		t.Skipf("skipped: %s (bash .ci/run installs it)", why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	dir := os.Getenv("SLUICE_NODE_SDK")
	if dir == "" {
		missing("SLUICE_NODE_SDK, a directory where testdata/sdk was installed with npm ci")
	}
	// Every package testdata/sdk/package.json pins: the two clients, the
	// three agents of agents_node_test.go and the schema library the Agents
	// SDK's tool is declared with.
	for _, pkg := range []string{"@anthropic-ai/sdk", "openai", "@anthropic-ai/claude-code", "@openai/codex", "@openai/agents", "zod"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing(pkg + " under " + dir)
		}
	}
	return dir
}

func TestNodeSDKCases(t *testing.T) {
	sdk := nodeSDK(t)
	files, err := filepath.Glob(filepath.Join(sdkDir, "cases", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	// Both gateways live as long as the whole test, not one case.
	sim := inboundHarness(t)
	replaySrv, replayTS := replayGateway(t)
	rows := map[string]func(id string) map[string]any{
		"simulator": func(id string) map[string]any { return rowMap(t, sim.row(id)) },
		"replay":    func(id string) map[string]any { return rowMap(t, waitRow(t, replaySrv, id)) },
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var c sdkCase
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&c), f)
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			spec := map[string]any{"client": c.Client, "call": c.Call, "params": c.Params}
			headers := map[string]string{}
			for k, v := range c.Headers {
				headers[k] = v
			}
			var secret string
			switch c.Gateway {
			case "replay":
				spec["baseURL"], secret = replayTS.URL, "sk-replay-"+c.Key
				headers[headerReplay] = c.Replay
			case "simulator":
				spec["baseURL"], secret = sim.ts.URL, inboundSecrets[c.Key]
				require.NotEmpty(t, secret, "key %q", c.Key)
			default:
				t.Fatalf("gateway %q", c.Gateway)
			}
			if c.Client == "openai" {
				spec["baseURL"] = spec["baseURL"].(string) + "/v1"
			}
			if c.Auth == "authToken" {
				spec["authToken"] = secret
			} else {
				spec["apiKey"] = secret
			}
			spec["headers"] = headers
			out := runDriver(t, sdk, spec)
			for path, want := range c.Want {
				got, ok := jsonPath(out, path)
				if want == "~nonempty" {
					assert.True(t, ok && nonEmpty(got), "%s is empty: %v\n%s", path, got, mustJSON(out))
					continue
				}
				assert.True(t, ok, "no %s in %s", path, mustJSON(out))
				assert.Equal(t, want, got, "%s in %s", path, mustJSON(out))
			}
			if c.Row != nil {
				id, _ := jsonPath(out, "requestID")
				if id == nil {
					id, _ = jsonPath(out, "error.requestID")
				}
				require.NotNil(t, id, "the driver reports the request id")
				row := rows[c.Gateway](id.(string))
				for k, want := range c.Row {
					assert.Equal(t, want, row[k], "row %s", k)
				}
			}
		})
	}
}

// runDriver runs the driver on one call and returns its output.
func runDriver(t *testing.T, sdk string, spec map[string]any) map[string]any {
	t.Helper()
	arg, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command("node", filepath.Join(sdkDir, "drive.cjs"), string(arg))
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(sdk, "node_modules"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "driver output: %s\n%s", b, stderr.String())
	return out
}

// jsonPath walks a dotted path (object members and array indexes).
func jsonPath(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func nonEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return v != nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// rowMap is a row as its JSON members.
func rowMap(t *testing.T, row any) map[string]any {
	t.Helper()
	b, err := json.Marshal(row)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}
