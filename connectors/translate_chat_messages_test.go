package connectors

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnthropicTranslateCorpus(t *testing.T) {
	c := anthTestConnector()
	call := anthTestCall()
	for _, dir := range caseDirs(t, anthCorpus, "request.json") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "request.json"))
			require.NoError(t, err)
			body, err := ParseBody(raw)
			require.NoError(t, err)
			native, err := c.Translate(body, call.Plan, call.Outcome)
			if err != nil {
				var te *TranslateError
				require.True(t, errors.As(err, &te), "error is not a *TranslateError: %v", err)
				assert.Contains(t, []string{CodeUnsupportedParameter, CodeInvalidRequest}, te.Code)
				assert.True(t, strings.HasPrefix(filepath.Base(dir), "err_"), "unexpected error: %v", err)
				golden(t, *updateAnthropic, dir, "error.txt", []byte(err.Error()+"\n"))
				golden(t, *updateAnthropic, dir, "native.json", nil)
				return
			}
			assert.False(t, strings.HasPrefix(filepath.Base(dir), "err_"), "want an error, got %s", native.Body)
			assert.Equal(t, "/messages", native.Path)
			assert.NotNil(t, native.Header)
			anthAssertNative(t, native.Body, call.Outcome.NativeModel)
			// Deterministic: a second translation gives the same bytes.
			again, err := c.Translate(body, call.Plan, call.Outcome)
			require.NoError(t, err)
			assert.Equal(t, string(native.Body), string(again.Body))
			golden(t, *updateAnthropic, dir, "native.json", indentJSON(t, native.Body))
			golden(t, *updateAnthropic, dir, "error.txt", nil)
			// A case built from recorded traffic asks what the live
			// upstream was asked.
			if _, rec := anthRecorded(t, dir); rec != "" {
				want, err := os.ReadFile(rec)
				require.NoError(t, err)
				assert.Equal(t, anthEquivalent(t, want), anthEquivalent(t, native.Body), "the translation differs from the recorded request %s", rec)
			}
		})
	}
}

// anthEquivalent spells a Messages request one way, so that a translation
// compares with a request a live client sent: the model is left out (the
// test call decides it); a content, system prompt or tool result given as a
// string is the one text block it stands for; members at their default
// (stream, disable_parallel_tool_use: false; an empty tool description) are
// left out; objects' members are sorted.
func anthEquivalent(t testing.TB, b []byte) string {
	t.Helper()
	var req map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&req))
	blocks := func(v any) any {
		if s, ok := v.(string); ok {
			return []any{map[string]any{"type": "text", "text": s}}
		}
		return v
	}
	delete(req, "model")
	if req["stream"] == false {
		delete(req, "stream")
	}
	if _, ok := req["system"]; ok {
		req["system"] = blocks(req["system"])
	}
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		m := m.(map[string]any)
		m["content"] = blocks(m["content"])
		for _, b := range m["content"].([]any) {
			if b := b.(map[string]any); b["type"] == "tool_result" {
				b["content"] = blocks(b["content"])
			}
		}
	}
	tools, _ := req["tools"].([]any)
	for _, tool := range tools {
		if tool := tool.(map[string]any); tool["description"] == "" {
			delete(tool, "description")
		}
	}
	if tc, ok := req["tool_choice"].(map[string]any); ok && tc["disable_parallel_tool_use"] == false {
		delete(tc, "disable_parallel_tool_use")
	}
	out, err := json.MarshalIndent(req, "", "  ")
	require.NoError(t, err)
	return string(out)
}

// anthAssertNative checks the invariants of any translated body: valid JSON,
// the native model, a max_tokens, and at least one message with roles
// alternating.
func anthAssertNative(t testing.TB, b []byte, model string) {
	t.Helper()
	var got struct {
		Model     string
		MaxTokens int64
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
	}
	// The members by their exact names: a passed-through member may spell
	// one in another case ("Max_Tokens"), which a struct would also match.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatalf("translated body is not JSON: %v\n%s", err, b)
	}
	for name, dst := range map[string]any{"model": &got.Model, "max_tokens": &got.MaxTokens, "messages": &got.Messages} {
		if v, ok := top[name]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				t.Fatalf("translated body's %s: %v\n%s", name, err, b)
			}
		}
	}
	if got.Model != model || got.MaxTokens < 1 || len(got.Messages) == 0 {
		t.Fatalf("translated body lacks model, max_tokens or messages: %s", b)
	}
	for i, m := range got.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			t.Fatalf("message %d has role %q: %s", i, m.Role, b)
		}
		if i > 0 && got.Messages[i-1].Role == m.Role {
			t.Fatalf("messages %d and %d share role %q: %s", i-1, i, m.Role, b)
		}
		if string(m.Content) == `""` || string(m.Content) == "[]" {
			t.Fatalf("message %d is empty: %s", i, b)
		}
	}
}

// The check decides the model: the connector sends out.NativeModel whatever
// the body names.
func TestAnthropicTranslateUsesNativeModel(t *testing.T) {
	body, err := ParseBody([]byte(`{"model":"something/else","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	n, err := anthTestConnector().Translate(body, &compiler.Plan{DecidedModel: "anthropic/claude-opus-4.1"}, &compiler.Outcome{NativeModel: "claude-opus-4-1-20250805"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"claude-opus-4-1-20250805","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`, string(n.Body))
}

// Each parameter's verdict, beside the corpus: the code, and the pointer to
// the member at fault.
func TestAnthropicTranslateErrors(t *testing.T) {
	cases := []struct {
		body, code, param string
	}{
		{`{"messages":[{"role":"user","content":"hi"}],"n":3}`, CodeUnsupportedParameter, "/n"},
		{`{"messages":[{"role":"user","content":"hi"}],"n":0}`, CodeInvalidRequest, "/n"},
		{`{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, CodeUnsupportedParameter, "/response_format"},
		{`{"messages":[{"role":"user","content":"hi"}],"logit_bias":{"50256":-100}}`, CodeUnsupportedParameter, "/logit_bias"},
		{`{"messages":[{"role":"user","content":"hi"}],"modalities":["text","audio"]}`, CodeUnsupportedParameter, "/modalities"},
		{`{"messages":[{"role":"user","content":"hi"}],"functions":[]}`, CodeUnsupportedParameter, "/functions"},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, CodeInvalidRequest, "/max_tokens"},
		{`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":"many"}`, CodeInvalidRequest, "/max_completion_tokens"},
		{`{"messages":[{"role":"user","content":"hi"}],"temperature":-1}`, CodeInvalidRequest, "/temperature"},
		{`{"messages":[{"role":"user","content":"hi"}],"top_p":2}`, CodeInvalidRequest, "/top_p"},
		{`{"messages":[{"role":"user","content":"hi"}],"stop":[1]}`, CodeInvalidRequest, "/stop"},
		{`{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, CodeInvalidRequest, "/stream"},
		{`{"messages":[{"role":"user","content":"hi"}],"user":7}`, CodeInvalidRequest, "/user"},
		{`{"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, CodeInvalidRequest, "/tool_choice"},
		{`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes"}`, CodeInvalidRequest, "/tool_choice"},
		{`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools"}}`, CodeUnsupportedParameter, "/tool_choice/type"},
		{`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","custom":{"name":"f"}}]}`, CodeUnsupportedParameter, "/tools/0/type"},
		{`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, CodeInvalidRequest, "/tools/0/function/parameters"},
		{`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, CodeInvalidRequest, "/tools/0/function/name"},
		{`{"messages":null}`, CodeInvalidRequest, "/messages"},
		{`{"model":"x"}`, CodeInvalidRequest, "/messages"},
		{`{"messages":{}}`, CodeInvalidRequest, "/messages"},
		{`{"messages":[]}`, CodeInvalidRequest, "/messages"},
		{`{"messages":[7]}`, CodeInvalidRequest, "/messages/0"},
		{`{"messages":[{"content":"hi"}]}`, CodeInvalidRequest, "/messages/0/role"},
		{`{"messages":[{"role":"function","content":"hi","name":"f"}]}`, CodeInvalidRequest, "/messages/0/role"},
		{`{"messages":[{"role":"user","content":7}]}`, CodeInvalidRequest, "/messages/0/content"},
		{`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, CodeInvalidRequest, "/messages/0/content/0/text"},
		{`{"messages":[{"role":"user","content":[{"type":"video"}]}]}`, CodeInvalidRequest, "/messages/0/content/0/type"},
		{`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, CodeUnsupportedParameter, "/messages/0/content/0/type"},
		{`{"messages":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, CodeInvalidRequest, "/messages/0/content/0/type"},
		{`{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"hi"}]}`, CodeInvalidRequest, "/messages/0/content/0/type"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, CodeInvalidRequest, "/messages/0/content/0/image_url/url"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, CodeInvalidRequest, "/messages/0/content/0/image_url/url"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,abc"}}]}]}`, CodeInvalidRequest, "/messages/0/content/0/image_url/url"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":7}]}]}`, CodeInvalidRequest, "/messages/0/content/0/image_url"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":"yes"}]}]}`, CodeInvalidRequest, "/messages/0/content/0/cache_control"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, CodeInvalidRequest, "/messages/0/tool_calls/0/id"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{}}]}]}`, CodeInvalidRequest, "/messages/0/tool_calls/0/function/name"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{}}]}]}`, CodeUnsupportedParameter, "/messages/0/tool_calls/0/type"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, CodeInvalidRequest, "/messages/0/tool_calls/0/function/arguments"},
		{`{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":"usage"}`, CodeInvalidRequest, "/stream_options"},
		{`{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":"yes"}}`, CodeInvalidRequest, "/stream_options/include_usage"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":{"type":"reasoning.text"}}]}`, CodeInvalidRequest, "/messages/1/reasoning_details"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":["x"]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","format":7}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/format"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.summary","summary":"s","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/type"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"text":"t","signature":"s","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/type"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","signature":"s","format":"anthropic-claude-v1","index":-1}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/index"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","signature":"s","format":"anthropic-claude-v1","index":"0"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/index"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":["t"],"signature":"s","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/text"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","signature":1,"format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/signature"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.encrypted","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/data"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.encrypted","data":"","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/0/data"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","format":"anthropic-claude-v1","index":0},{"type":"reasoning.encrypted","data":"d","format":"anthropic-claude-v1","index":0}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/1/type"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.encrypted","data":"d","format":"anthropic-claude-v1","index":0},{"type":"reasoning.encrypted","data":"d","format":"anthropic-claude-v1","index":0}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/1/index"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","signature":"s1","format":"anthropic-claude-v1","index":0},{"type":"reasoning.text","signature":"s2","format":"anthropic-claude-v1","index":0}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/1/signature"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","signature":"s","format":"anthropic-claude-v1","index":0},{"type":"reasoning.text","text":"u","format":"anthropic-claude-v1"}]}]}`, CodeInvalidRequest, "/messages/1/reasoning_details/1"},
	}
	c := anthTestConnector()
	call := anthTestCall()
	for _, tc := range cases {
		t.Run(tc.param+" "+tc.body, func(t *testing.T) {
			body, err := ParseBody([]byte(tc.body))
			require.NoError(t, err)
			_, err = c.Translate(body, call.Plan, call.Outcome)
			var te *TranslateError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.code, te.Code, te.Message)
			assert.Equal(t, tc.param, te.Param, te.Message)
			assert.NotEmpty(t, te.Message)
		})
	}
}

// Values the translation drops or maps without a golden file of their own.
func TestAnthropicTranslateDetails(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"image_url as a bare string", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`},
		{"data URL with parameters and upper-case type", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:IMAGE/JPEG;name=a.jpg;base64,/9j/"}}]}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}]}`},
		{"assistant refusal part", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"refusal","refusal":"I can't."}]},{"role":"user","content":"b"}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"I can't."},{"role":"user","content":"b"}]}`},
		{"tool result before the user's text", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"also"},{"role":"tool","tool_call_id":"c1","content":""}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1"},{"type":"text","text":"also"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}]}`},
		{"parallel_tool_calls false with a named tool", `{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true}}`},
		{"tool_choice none without tools is dropped", `{"messages":[{"role":"user","content":"a"}],"tool_choice":"none","tools":[]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}]}`},
		{"nulls are absent", `{"messages":[{"role":"user","content":"a"}],"temperature":null,"stop":null,"tools":null,"tool_choice":null,"user":null,"max_tokens":null}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}]}`},
		{"empty stop and user", `{"messages":[{"role":"user","content":"a"}],"stop":"","user":""}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}]}`},
		{"reasoning of one block, its entries without an index, are separate blocks", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_details":[{"type":"reasoning.text","text":"t","signature":"s","format":"anthropic-claude-v1"},{"type":"reasoning.text","text":"","signature":"s2","format":"anthropic-claude-v1"}]}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"thinking","thinking":"","signature":"s2"},{"type":"text","text":"b"}]}]}`},
		{"reasoning alone makes an assistant turn", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"d","format":"anthropic-claude-v1","index":0}]},{"role":"user","content":"b"}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"d"}]},{"role":"user","content":"b"}]}`},
		{"reasoning of other formats only, and reasoning text without details, leave no block", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"r","reasoning_details":[{"type":"reasoning.summary","summary":"s","format":"openai-responses-v1","index":0},{"type":"reasoning.text","text":"t","signature":"x","format":null}]}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`},
		{"reasoning_details of a user message are not read", `{"messages":[{"role":"user","content":"a","reasoning_details":[{"type":"reasoning.text","text":"t","format":"anthropic-claude-v1"}]}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}]}`},
		{"a thinking budget without a limit adds to the default", `{"messages":[{"role":"user","content":"a"}],"thinking":{"budget_tokens":2048,"type":"enabled"}}`,
			`{"model":"claude-sonnet-4-5","max_tokens":6144,"messages":[{"role":"user","content":"a"}],"thinking":{"budget_tokens":2048,"type":"enabled"}}`},
		{"a limit the caller set stands beside a thinking budget", `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":1500,"thinking":{"type":"enabled","budget_tokens":1024}}`,
			`{"model":"claude-sonnet-4-5","max_tokens":1500,"messages":[{"role":"user","content":"a"}],"thinking":{"type":"enabled","budget_tokens":1024}}`},
		{"thinking without a budget keeps the default", `{"messages":[{"role":"user","content":"a"}],"thinking":{"type":"adaptive"}}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}],"thinking":{"type":"adaptive"}}`},
		{"an odd budget is the upstream's to judge", `{"messages":[{"role":"user","content":"a"}],"thinking":{"type":"enabled","budget_tokens":"lots"}}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}],"thinking":{"type":"enabled","budget_tokens":"lots"}}`},
		{"stream options are read, not sent", `{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"a"}],"stream":true}`},
		{"an empty assistant turn is left out", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`},
	}
	c := anthTestConnector()
	call := anthTestCall()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := ParseBody([]byte(tc.body))
			require.NoError(t, err)
			n, err := c.Translate(body, call.Plan, call.Outcome)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(n.Body))
		})
	}
}

// A stream's usage chunk goes to a caller that asked for it
// (stream_options.include_usage): the translation says UsageAdded otherwise.
func TestAnthropicTranslateUsageAdded(t *testing.T) {
	c := anthTestConnector()
	call := anthTestCall()
	for body, want := range map[string]bool{
		`{"messages":[{"role":"user","content":"a"}],"stream":true}`:                                           true,
		`{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":true}}`:   false,
		`{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":false}}`:  true,
		`{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":null}}`:   true,
		`{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{}}`:                       true,
		`{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":null}`:                     true,
		`{"messages":[{"role":"user","content":"a"}],"stream":false,"stream_options":{"include_usage":false}}`: false,
		`{"messages":[{"role":"user","content":"a"}]}`:                                                         false,
	} {
		b, err := ParseBody([]byte(body))
		require.NoError(t, err)
		n, err := c.Translate(b, call.Plan, call.Outcome)
		require.NoError(t, err, body)
		assert.Equal(t, want, n.UsageAdded, body)
	}
}

func FuzzAnthropicTranslate(f *testing.F) {
	for _, dir := range caseDirs(f, anthCorpus, "request.json") {
		b, err := os.ReadFile(filepath.Join(dir, "request.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		anthAddMessages(f, b)
	}
	for _, b := range anthOddRequests {
		f.Add([]byte(b))
		anthAddMessages(f, []byte(b))
	}
	c := anthTestConnector()
	call := anthTestCall()
	f.Fuzz(func(t *testing.T, b []byte) {
		anthSameMessagesBothWays(t, b)
		body, err := ParseBody(b)
		if err != nil {
			return
		}
		n, err := c.Translate(body, call.Plan, call.Outcome)
		anthSameBothWays(t, c, body, n, err)
		if s := string(b); string(jsonscan.AppendString(nil, s)) != string(anthMust(anthMarshal(s))) {
			t.Fatalf("jsonscan.AppendString(%q) differs from encoding/json", s)
		}
		if err != nil {
			var te *TranslateError
			if !errors.As(err, &te) || (te.Code != CodeInvalidRequest && te.Code != CodeUnsupportedParameter) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		anthAssertNative(t, n.Body, call.Outcome.NativeModel)
	})
}

// anthSameBothWays checks that the fast translation (n, err) is what the
// encoding/json path gives for the same body: the same bytes or the same
// error.
func anthSameBothWays(t testing.TB, c *anthropic, body Body, n *Native, err error) {
	t.Helper()
	ref, refErr := c.translate(body, anthTestCall().Outcome, false)
	switch {
	case (err == nil) != (refErr == nil):
		t.Fatalf("fast path: %v, encoding/json path: %v", err, refErr)
	case err != nil:
		if err.Error() != refErr.Error() {
			t.Fatalf("fast path error %q, encoding/json path error %q", err, refErr)
		}
	case string(n.Body) != string(ref.Body):
		t.Fatalf("fast path and encoding/json path differ:\n fast: %s\n json: %s", n.Body, ref.Body)
	}
}

// anthAddMessages seeds the fuzzer with a request's messages array alone,
// for [anthSameMessagesBothWays].
func anthAddMessages(f *testing.F, request []byte) {
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(request, &body) == nil && body.Messages != nil {
		f.Add([]byte(body.Messages))
	}
}

// anthSameMessagesBothWays checks that the messages scanner, given any bytes
// as a messages value (valid JSON or not), converts them as encoding/json
// does: the same error, or the same encoded system prompt and turns.
func anthSameMessagesBothWays(t testing.TB, v []byte) {
	t.Helper()
	sys, msgs, err := anthMessagesFast(v)
	refSys, refMsgs, refErr := anthMessages(v, false)
	switch {
	case (err == nil) != (refErr == nil):
		t.Fatalf("messages %q: fast path: %v, encoding/json path: %v", v, err, refErr)
	case err != nil:
		if err.Error() != refErr.Error() {
			t.Fatalf("messages %q: fast path error %q, encoding/json path error %q", v, err, refErr)
		}
	default:
		got := anthMust(anthMarshal(messages.Request{System: sys, Messages: msgs}))
		want := anthMust(anthMarshal(messages.Request{System: refSys, Messages: refMsgs}))
		if string(got) != string(want) {
			t.Fatalf("messages %q:\n fast: %s\n json: %s", v, got, want)
		}
	}
}

// anthOddRequests are bodies that exercise the fast path's edges: escapes,
// Unicode, invalid UTF-8, unusual message members, whitespace, numbers that
// are not plain integers, and shapes it leaves to encoding/json.
var anthOddRequests = []string{
	`{"messages":[{"role":"user","content":"tab\tquote\"back\\slash\/ nl\n cr\r bs\b ff\f"}]}`,
	`{"messages":[{"role":"user","content":"\u00e9\u2028\u2029\ud83d\ude00 \ud83d alone \ude00 low \ud83d\u0041 \u0000\u001f"}]}`,
	`{"messages":[{"role":"user","content":"é ü 日本 😀     <b>&amp;</b> "}]}`,
	"{\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe utf8 \xed\xa0\x80\"}]}",
	"{\"messages\":[{\"role\":\"user\",\"content\":\"escaped \\n and bad \xc3\"}]}",
	"{\"messages\":[{\"role\":\"user\",\"ignored\xff\":1,\"content\":\"hi\"}]}",
	`{"messages":[{"role":"user","content":"a","name":"bob"},{"role":"user","content":"b","x":{"y":[1,"}"]}}]}`,
	`{"messages":[{"Role":"assistant","role":"user","content":"a"}]}`,
	`{"messages":[{"role":"user","CONTENT":"b","content":"a"}]}`,
	`{"messages":[{"role":"user","content":"a","content":"b"}]}`,
	`{"messages":[{"role":"user","role":"system","content":"a"},{"role":"user","content":"b"}]}`,
	`{"messages":[{"role":"us\u0065r","content":"a"}]}`,
	`{"messages":[{"rol\u0065":"user","content":"a"}]}`,
	`{"messages":[{"role":"user","content":"a","tool_callſ":[]}]}`,
	`{"messages":[{"role":"user","content":"a","Tool_Call_ID":"x"}]}`,
	`{"messages":[{"role":"user","content":null},{"role":"user"},{"role":"assistant","content":""},{"role":"user","content":"x"}]}`,
	`{"messages": [ { "role" : "system" , "content" : "s1" } , {"role":"developer","content":"s2"},{ "role":"user","content":"u" } ] }`,
	`{"messages":[{"role":"system","content":"s"},{"role":"system","content":[{"type":"text","text":"t","cache_control":{"type": "ephemeral"}}]},{"role":"user","content":"u"}]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":" { \"x\" : [1, 2] } "}}]},{"role":"tool","tool_call_id":"c","content":"r\u2028"},{"role":"user","content":"d"}],"tools":[{"type":"function","function":{"name":"f","description":"d<>&","parameters":{ "type" : "object" }},"cache_control":{ "type":"ephemeral" }}]}`,
	`{"messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"a"}]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","Reasoning_Details":[{"type":"reasoning.encrypted","data":"d","format":"anthropic-claude-v1"}]}]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"r","reasoning_details":null}]}`,
	`{"messages":[{"role":"user","content":"a"},7]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`,
	`{"messages":[{"role":"robot","content":"b"},{"role":"user","content":"a"},{"role":"user","content":7}]}`,
	`{"messages":[{"role":"user","content":"a"},{}]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":null,"content":"b"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":256.0}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":1e3}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":-0}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":99999999999999999999}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":"256"}`,
	`{"messages":[{"role":"user","content":"a"}],"max_tokens":9223372036854775807,"top_k":7}`,
	`{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":12,"max_tokens":34,"top_k":5}`,
	`{"messages":[{"role":"user","content":"a"}],"temperature":1e-1,"top_p":0.5E0}`,
	`{"messages":[{"role":"user","content":"a"}],"temperature":1.0000000000000001}`,
	`{"messages":[{"role":"user","content":"a"}],"temperature":1e400}`,
	`{"messages":[{"role":"user","content":"a"}],"temperature":-0.0,"top_p":1}`,
	`{"messages":[{"role":"user","content":"a"}],"temperature":true}`,
	`{"messages":[{"role":"user","content":"a"}],"stream":true,"parallel_tool_calls":false,"user":"u\u00e9<x>"}`,
	`{"messages":[{"role":"user","content":"a"}],"stream":false,"user":""}`,
	`{"messages":[{"role":"user","content":"a"}],"stream":1}`,
	`{"messages":[{"role":"user","content":"a"}],"parallel_tool_calls":"no"}`,
	`{"messages":[{"role":"user","content":"a"}],"user":["u"]}`,
	`{"messages":[{"role":"user","content":"a"}],"stop":["x\u2029","","<y>"],"metadata":{"a":1}}`,
	`{"messages":[{"role":"user","content":"a"}],"thinking":{"type":"enabled", "budget_tokens":1024},"<odd key>":1}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR\u2028"}},{"type":"text","text":"what"}]}]}`,
	`{"messages":[{"role":"user","Content":"0"}],"mAX_tokeNs":0}`,
	`{"messages":[]}`,
	`{"messages":[ ]}`,
	`{"messages":"hi"}`,
}

// The fast path gives the bytes and errors of the encoding/json path, for
// every corpus request and the odd ones above.
func TestAnthropicTranslateFastMatchesJSON(t *testing.T) {
	c := anthTestConnector()
	call := anthTestCall()
	var bodies []string
	for _, dir := range caseDirs(t, anthCorpus, "request.json") {
		raw, err := os.ReadFile(filepath.Join(dir, "request.json"))
		require.NoError(t, err)
		bodies = append(bodies, string(raw))
	}
	bodies = append(bodies, anthOddRequests...)
	fast := 0
	for _, raw := range bodies {
		body, err := ParseBody([]byte(raw))
		require.NoError(t, err, raw)
		n, err := c.Translate(body, call.Plan, call.Outcome)
		anthSameBothWays(t, c, body, n, err)
		anthSameMessagesBothWays(t, body["messages"])
		if m := body["messages"]; m != nil {
			if _, ok := anthScanMessages(m, nil); ok {
				fast++
			}
		}
	}
	assert.Greater(t, fast, len(bodies)/2, "the scanner reads most messages arrays")

	// Hand-made bodies the parser would not produce: whitespace around values.
	for _, body := range []Body{
		{"messages": json.RawMessage(` [{"role":"user","content":"a"}] `), "max_tokens": json.RawMessage(" 12 "), "temperature": json.RawMessage("\t0.5\n"), "stream": json.RawMessage(" true "), "user": json.RawMessage(` "u" `)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}] x`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"},]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"},{"role":"user","content":[}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a\x01"}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a\q"}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a\u12"}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a", "x":tru}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":nullx}]`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}]`), "top_k": json.RawMessage(`007`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}]`), "max_tokens": json.RawMessage(`+5`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}]`), "temperature": json.RawMessage(`.5`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}]`), "temperature": json.RawMessage(`0x1p-2`)},
		{"messages": json.RawMessage(`[{"role":"user","content":"a"}]`), "stream": json.RawMessage(`True`)},
	} {
		n, err := c.Translate(body, call.Plan, call.Outcome)
		anthSameBothWays(t, c, body, n, err)
		anthSameMessagesBothWays(t, body["messages"])
	}
}

func BenchmarkAnthropicTranslate(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(anthCorpus, "req_tool_round_trip", "request.json"))
	require.NoError(b, err)
	body, err := ParseBody(raw)
	require.NoError(b, err)
	c := anthTestConnector()
	call := anthTestCall()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Translate(body, call.Plan, call.Outcome); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnthropicTranslatePlain measures the request of the compile
// benchmark (snapshot): a system and a user message, a temperature and
// max_tokens; JSONPath is the same request on the encoding/json path.
func BenchmarkAnthropicTranslatePlain(b *testing.B) {
	body, err := ParseBody([]byte(`{"model":"anthropic/claude-sonnet-4.5","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident report in three bullet points."}],"temperature":0.2,"max_tokens":256}`))
	require.NoError(b, err)
	c := anthTestConnector()
	out := anthTestCall().Outcome
	for _, bc := range []struct {
		name string
		fast bool
	}{{"Fast", true}, {"JSONPath", false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.translate(body, out, bc.fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
