package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// The AWS identity the Bedrock tests sign with, read by the SDK's default
// chain from the environment; the simulator knows its secret.
const (
	bedrockKeyID  = "AKIDSLUICEGATEWAYTEST"
	bedrockSecret = "bedrock-secret-access-key-for-tests"
)

// bedrockEdits add a Bedrock upstream in us-east-1 (its credentials the
// default chain's), a route to Claude Haiku 4.5 on it (the Messages API
// over InvokeModel) and one to Llama 3.3 70B (Converse).
var bedrockEdits = [][2]string{
	{"[[keys]]\nid = \"k-chat\"", "[[upstreams]]\nname = \"aws\"\nconnector = \"bedrock\"\nregion = \"us-east-1\"\nfirst_byte_timeout = \"2s\"\ntimeout = \"5s\"\n\n[[keys]]\nid = \"k-chat\""},
	{"[[routes]]\nmodel = \"assistant\"", "[[routes]]\nmodel = \"bedrock-haiku\"\ntargets = [{upstream = \"aws\", model = \"anthropic/claude-haiku-4.5\"}]\n\n[[routes]]\nmodel = \"bedrock-llama\"\ntargets = [{upstream = \"aws\", model = \"meta-llama/llama-3.3-70b-instruct\"}]\n\n[[routes]]\nmodel = \"assistant\""},
}

// bedrockIDs are the US cross-region inference profiles of the recorded
// models.
var bedrockIDs = map[string]string{
	"anthropic/claude-haiku-4.5":  "us.anthropic.claude-haiku-4-5-20251001-v1:0",
	"anthropic/claude-sonnet-4.5": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
}

// bedrockCatalog names Claude Haiku 4.5 and Sonnet 4.5 on Bedrock by
// their US cross-region inference profiles.
func bedrockCatalog(t *testing.T) func(dir string) {
	return func(dir string) {
		p := filepath.Join(dir, "catalog.json")
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		var cat map[string]any
		require.NoError(t, json.Unmarshal(raw, &cat))
		for _, m := range cat["models"].([]any) {
			m := m.(map[string]any)
			if id, ok := bedrockIDs[m["slug"].(string)]; ok {
				m["native"].(map[string]any)["amazon-bedrock"] = id
			}
		}
		out, err := json.Marshal(cat)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, out, 0o644))
	}
}

// bedrockEnv is an AWS environment of the test's own: the access key in
// the variables the default chain reads first, no shared files, no
// instance metadata (nothing leaves loopback).
func bedrockEnv(t *testing.T, withKey bool) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	if withKey {
		t.Setenv("AWS_ACCESS_KEY_ID", bedrockKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", bedrockSecret)
	} else {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	}
}

func newBedrockHarness(t *testing.T, withKey bool) *harness {
	bedrockEnv(t, withKey)
	return newHarnessOpts(t, bedrockCatalog(t), bedrockSim, bedrockURL, bedrockEdits...)
}

// bedrockSim makes the simulator know the tests' AWS identity.
func bedrockSim(c *simulator.Config) {
	c.AWSCredentials = map[string]string{bedrockKeyID: bedrockSecret}
}

// bedrockURL points the Bedrock upstream at the simulator's endpoints.
func bedrockURL(o *gateway.Options) {
	o.UpstreamURLs["aws"] = o.UpstreamURLs["anthropic"][:strings.Index(o.UpstreamURLs["anthropic"], "/anthropic")] + "/bedrock"
}

// Chat completions, the Messages API and the Responses API on Bedrock end
// to end, streamed and not: on Claude, the chat request translated onto
// the Messages API and the Messages request passed through over
// InvokeModel; on Llama, every API translated onto Converse. Each request
// is signed with SigV4 from the environment's credentials and the
// signature recomputed by the simulator; the rows name amazon-bedrock, the
// model that served and the usage priced at the catalog's Bedrock prices.
func TestBedrockEndToEnd(t *testing.T) {
	h := newBedrockHarness(t, true)
	const (
		haiku = "/bedrock/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0"
		llama = "/bedrock/model/us.meta.llama3-3-70b-instruct-v1%3A0"
	)
	cases := []struct {
		name, path, body string
		stream           bool
		want             string
		// sentPath is the Bedrock operation's path; served the row's
		// model, priced at in and out USD per million tokens.
		sentPath, served string
		in, out          float64
	}{
		{"chat", "/v1/chat/completions", `{"model":"bedrock-haiku","messages":[{"role":"user","content":"hi"}]}`, false, `"served by anthropic/claude-haiku-4.5 via amazon-bedrock"`, haiku + "/invoke", "anthropic/claude-haiku-4.5", 1, 5},
		{"chat stream", "/v1/chat/completions", `{"model":"bedrock-haiku","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true, `data: [DONE]`, haiku + "/invoke-with-response-stream", "anthropic/claude-haiku-4.5", 1, 5},
		{"messages", "/v1/messages", `{"model":"bedrock-haiku","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, false, `"type":"message"`, haiku + "/invoke", "anthropic/claude-haiku-4.5", 1, 5},
		{"messages stream", "/v1/messages", `{"model":"bedrock-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, true, "event: message_stop", haiku + "/invoke-with-response-stream", "anthropic/claude-haiku-4.5", 1, 5},
		{"responses", "/v1/responses", `{"model":"bedrock-haiku","input":"hi"}`, false, `"output_text"`, haiku + "/invoke", "anthropic/claude-haiku-4.5", 1, 5},
		{"converse chat", "/v1/chat/completions", `{"model":"bedrock-llama","messages":[{"role":"user","content":"hi"}]}`, false, `"served by meta-llama/llama-3.3-70b-instruct via amazon-bedrock"`, llama + "/converse", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
		{"converse chat stream", "/v1/chat/completions", `{"model":"bedrock-llama","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true, `data: [DONE]`, llama + "/converse-stream", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
		{"converse messages", "/v1/messages", `{"model":"bedrock-llama","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`, false, `"type":"message"`, llama + "/converse", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
		{"converse messages stream", "/v1/messages", `{"model":"bedrock-llama","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, true, "event: message_stop", llama + "/converse-stream", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
		{"converse responses", "/v1/responses", `{"model":"bedrock-llama","input":"hi"}`, false, `"output_text"`, llama + "/converse", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
		{"converse responses stream", "/v1/responses", `{"model":"bedrock-llama","input":"hi","stream":true}`, true, "event: response.completed", llama + "/converse-stream", "meta-llama/llama-3.3-70b-instruct", 0.72, 0.72},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.do("POST", c.path, secretChat, c.body, "Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), c.want)
			if c.stream {
				assert.Contains(t, string(body), "amazon-bedrock", "the answer's text came through the relay")
			}
			sent := h.sent.take()
			require.Len(t, sent, 1)
			assert.True(t, strings.HasSuffix(sent[0].URL, c.sentPath), sent[0].URL)
			assert.True(t, strings.HasPrefix(sent[0].Auth, "AWS4-HMAC-SHA256 Credential="+bedrockKeyID+"/"), sent[0].Auth)
			assert.Contains(t, sent[0].Auth, "/us-east-1/bedrock/aws4_request")
			if strings.Contains(c.sentPath, "/converse") {
				assert.Contains(t, string(sent[0].Body), `"messages":[{"role":"user","content":[{"text":"hi"}]}]`)
				assert.NotContains(t, string(sent[0].Body), `anthropic_version`)
			} else {
				assert.Contains(t, string(sent[0].Body), `"anthropic_version":"bedrock-2023-05-31"`)
			}
			assert.NotContains(t, string(sent[0].Body), `"model"`)
			assert.NotContains(t, string(sent[0].Body), `"stream"`)

			row := h.row(resp.Header.Get("X-Request-Id"))
			assert.Equal(t, "aws", row.Upstream)
			assert.Equal(t, "amazon-bedrock", row.ServedProvider)
			assert.Equal(t, c.served, row.ServedModel)
			assert.Equal(t, 200, row.Status)
			require.Positive(t, row.PromptTokens)
			require.Positive(t, row.CompletionTokens)
			// The catalog's Bedrock prices, USD per million tokens.
			assert.InDelta(t, (float64(row.PromptTokens)*c.in+float64(row.CompletionTokens)*c.out)*1e-6, row.CostUSD, 1e-12)
		})
	}
	assert.NotContains(t, h.logs.String(), bedrockSecret)
}

// A credential chain that yields nothing (no variables, no files, no
// instance metadata) fails the request 502 upstream_credentials_unavailable
// naming the upstream, with no secret in the answer or the log.
func TestBedrockCredentialsUnavailable(t *testing.T) {
	h := newBedrockHarness(t, false)
	resp, body := h.post(secretChat, `{"model":"bedrock-haiku","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 502, resp.StatusCode, "%s", body)
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(body, &e))
	assert.Equal(t, "upstream_credentials_unavailable", e.Error.Code)
	assert.Contains(t, e.Error.Message, `upstream "aws"`)
	assert.Empty(t, h.sent.take(), "nothing unsigned was sent")
	for _, secret := range []string{bedrockSecret, platformKeys["ANTHROPIC_API_KEY"]} {
		assert.NotContains(t, string(body), secret)
		assert.NotContains(t, h.logs.String(), secret)
	}
}

// A credential chain the SDK cannot set up (the profile it is told to use
// does not exist) is a located invalid_upstream at load.
func TestBedrockChainFailsAtLoad(t *testing.T) {
	bedrockEnv(t, true)
	t.Setenv("AWS_PROFILE", "no-such-profile")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	editConfig(t, dir, bedrockEdits...)
	bedrockCatalog(t)(dir)
	for env, v := range platformKeys {
		t.Setenv(env, v)
	}
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, AdminToken: adminToken, Logger: slog.New(slog.DiscardHandler)})
	if srv != nil {
		_ = srv.Close(context.Background())
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_upstream")
	assert.Contains(t, err.Error(), "/upstreams/5")
	assert.Contains(t, err.Error(), "no-such-profile")
	assert.NotContains(t, err.Error(), bedrockSecret)
}

// A Messages token count on Bedrock goes to its CountTokens operation,
// signed, naming the foundation model (not the inference profile), and is
// answered in the Messages API's shape, not estimated.
func TestBedrockCountTokens(t *testing.T) {
	h := newBedrockHarness(t, true)
	resp, body := h.do("POST", "/v1/messages/count_tokens", secretChat, `{"model":"bedrock-haiku","messages":[{"role":"user","content":"how many tokens is this?"}]}`,
		"Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	var got map[string]int
	require.NoError(t, json.Unmarshal(body, &got))
	require.Contains(t, got, "input_tokens")
	assert.Positive(t, got["input_tokens"])
	assert.Len(t, got, 1)
	assert.Empty(t, resp.Header.Get("X-Sluice-Count-Estimated"))
	sent := h.sent.take()
	require.Len(t, sent, 1)
	assert.True(t, strings.HasSuffix(sent[0].URL, "/bedrock/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/count-tokens"), sent[0].URL)
	assert.True(t, strings.HasPrefix(sent[0].Auth, "AWS4-HMAC-SHA256 "), sent[0].Auth)
	assert.Contains(t, string(sent[0].Body), `{"input":{"invokeModel":{"body":"`)
}

// Bedrock's error answers ({"message": …}, the type in a header) reach a
// Messages client in the Messages API's error shape, Bedrock's message
// and status kept.
func TestBedrockErrorInMessagesShape(t *testing.T) {
	h := newBedrockHarness(t, true)
	// The simulator answers the attempt 400 in Bedrock's shape.
	resp, body := h.do("POST", "/v1/messages", secretChat, `{"model":"bedrock-haiku","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
		"Content-Type", "application/json", "Anthropic-Version", "2023-06-01", "X-Sim-Fault", "status=400")
	require.Equal(t, 400, resp.StatusCode, "%s", body)
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	assert.Equal(t, "error", e.Type, "%s", body)
	assert.Equal(t, "invalid_request_error", e.Error.Type)
	assert.NotContains(t, e.Error.Message, `{"message"`, "Bedrock's message, not its body")
}

// Converse's error answers ({"message": …}, the type in the
// x-amzn-ErrorType header) reach each caller in its own API's error shape,
// the status and Bedrock's message kept: chat's {"error": {"message",
// "type"}}, the Messages API's {"type": "error", "error": …}, the
// Responses API's {"error": …}.
func TestBedrockConverseErrorsInCallerShape(t *testing.T) {
	h := newBedrockHarness(t, true)
	cases := []struct{ name, path, body, top string }{
		{"chat", "/v1/chat/completions", `{"model":"bedrock-llama","messages":[{"role":"user","content":"hi"}]}`, ""},
		{"messages", "/v1/messages", `{"model":"bedrock-llama","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, "error"},
		{"responses", "/v1/responses", `{"model":"bedrock-llama","input":"hi"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.do("POST", c.path, secretChat, c.body, "Content-Type", "application/json", "Anthropic-Version", "2023-06-01", "X-Sim-Fault", "status=400")
			require.Equal(t, 400, resp.StatusCode, "%s", body)
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, c.top, e.Type, "%s", body)
			assert.Equal(t, "invalid_request_error", e.Error.Type, "%s", body)
			assert.NotEmpty(t, e.Error.Message)
			assert.NotContains(t, e.Error.Message, `{"message"`, "Bedrock's message, not its body")
			sent := h.sent.take()
			require.Len(t, sent, 1)
			assert.Contains(t, sent[0].URL, "/converse")
		})
	}
}

// A tool round trip on Converse: the model's toolUse reaches a chat caller
// as a tool call (finish_reason tool_calls) and a Messages caller's stream
// as a tool_use block; the result goes back as a toolResult block in a
// user turn, and the answer quotes it.
func TestBedrockConverseToolRoundTrip(t *testing.T) {
	h := newBedrockHarness(t, true)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	ask := `{"role":"user","content":"Weather? [[sim:call get_weather {\"city\":\"Lisbon\"}]]"}`
	resp, body := h.post(secretChat, `{"model":"bedrock-llama","messages":[`+ask+`],`+tools+`}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	var first struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	require.NoError(t, json.Unmarshal(body, &first), "%s", body)
	require.Len(t, first.Choices, 1)
	assert.Equal(t, "tool_calls", first.Choices[0].FinishReason)
	require.Len(t, first.Choices[0].Message.ToolCalls, 1, "%s", body)
	call := first.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "get_weather", call.Function.Name)
	assert.JSONEq(t, `{"city":"Lisbon"}`, call.Function.Arguments)
	sent := h.sent.take()
	require.Len(t, sent, 1)
	assert.Contains(t, string(sent[0].Body), `"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather"`)

	idJSON, _ := json.Marshal(call.ID)
	second := `{"model":"bedrock-llama","messages":[` + ask + `,{"role":"assistant","content":null,"tool_calls":[{"id":` + string(idJSON) +
		`,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lisbon\"}"}}]},{"role":"tool","tool_call_id":` + string(idJSON) + `,"content":"22C and sunny"}],` + tools + `}`
	resp, body = h.post(secretChat, second)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "22C and sunny")
	assert.Contains(t, string(body), `"finish_reason":"stop"`)
	sent = h.sent.take()
	require.Len(t, sent, 1)
	assert.Contains(t, string(sent[0].Body), `{"toolResult":{"toolUseId":`+string(idJSON)+`,"content":[{"text":"22C and sunny"}]}}`)

	resp, body = h.do("POST", "/v1/messages", secretChat, `{"model":"bedrock-llama","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"Weather? [[sim:call get_weather {\"city\":\"Porto\"}]]"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`,
		"Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"type":"tool_use"`)
	assert.Contains(t, string(body), `"stop_reason":"tool_use"`)
	assert.Contains(t, string(body), `Porto`)
	assert.True(t, strings.HasSuffix(h.sent.take()[0].URL, "/converse-stream"))
}

// A token count for a model Bedrock serves through Converse is estimated:
// Bedrock's CountTokens counts InvokeModel bodies of Anthropic's models,
// and nothing is sent.
func TestBedrockConverseCountEstimated(t *testing.T) {
	h := newBedrockHarness(t, true)
	resp, body := h.do("POST", "/v1/messages/count_tokens", secretChat, `{"model":"bedrock-llama","messages":[{"role":"user","content":"how many tokens is this?"}]}`,
		"Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.NotEmpty(t, resp.Header.Get("X-Sluice-Count-Estimated"))
	assert.Contains(t, string(body), `"input_tokens"`)
	assert.Empty(t, h.sent.take())
}
