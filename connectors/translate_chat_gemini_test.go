package connectors

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
)

var updateGemini = flag.Bool("update-gemini", false, "rewrite the Gemini dialect's golden files (testdata/connectors/vertex-gemini)")

// geminiCorpus holds one directory per case of the vertex connector's
// Gemini dialect: case.json (the API a request came in on, its
// anthropic-beta values and its body,
// and optionally the recorded request it must equal) and native.json (the
// generateContent request sent) or error.txt; or recorded.txt naming a
// recorded answer in testdata/recorded/vertex, read back into answer.json,
// messages.json and responses.json (a stream: chunks.jsonl, messages.sse
// and responses.sse), with result.json.
const geminiCorpus = "../testdata/connectors/vertex-gemini"

// geminiCall is the check's outcome for Gemini 2.5 Flash on Vertex AI.
func geminiCall(api API) *Call {
	call := &Call{Plan: &compiler.Plan{DecidedModel: "google/gemini-2.5-flash"},
		Outcome: &compiler.Outcome{NativeModel: "gemini-2.5-flash", Degraded: []string{}}}
	if api != APIChat {
		call.Inbound = &Inbound{API: api, Model: "google/gemini-2.5-flash", Request: Body{}}
	}
	return call
}

// geminiAPIs are the inbound APIs a case names.
var geminiAPIs = map[string]API{"chat": APIChat, "messages": APIMessages, "responses": APIResponses, "count_tokens": APICountTokens}

func TestGeminiTranslateCorpus(t *testing.T) {
	c := vertexTestConnector()
	for _, dir := range caseDirs(t, geminiCorpus, "case.json") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var tc struct {
				API             string          `json:"api"`
				Beta            []string        `json:"beta"`
				Body            json.RawMessage `json:"body"`
				RecordedRequest string          `json:"recorded_request"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &tc))
			body, err := ParseBody(tc.Body)
			require.NoError(t, err)
			api, ok := geminiAPIs[tc.API]
			require.True(t, ok, "api %q", tc.API)
			call := geminiCall(api)
			var in *Inbound
			if call.Inbound != nil {
				in = &Inbound{API: api, Model: call.Inbound.Model, Request: body}
			}
			// The check's part: the flags Vertex AI takes are kept, the
			// others degrade the request.
			kept, lost, refused := compiler.CheckBetas(compiler.SplitBetas(tc.Beta), c.Capabilities().Betas, "vertex")
			require.Nil(t, refused)
			call.Outcome.Betas = kept
			native, err := TranslateFor(c, in, body, call.Plan, call.Outcome)
			if err == nil {
				native.Degraded = append(native.Degraded, lost...)
			}
			if err != nil {
				golden(t, *updateGemini, dir, "error.txt", []byte(err.Error()+"\n"))
				golden(t, *updateGemini, dir, "native.json", nil)
				return
			}
			if api != APICountTokens {
				assert.True(t, strings.Contains(native.Path, "/publishers/google/models/gemini-2.5-flash:"), "the path names the model: %s", native.Path)
				assert.NotContains(t, string(native.Body), `"model":`, "the body names no model")
			}
			if tc.RecordedRequest != "" {
				rec, err := os.ReadFile(filepath.Join("../testdata/recorded/vertex", tc.RecordedRequest))
				require.NoError(t, err)
				keep := tc.API == "chat" // the chat cases replay the ids of the recorded answers
				assert.JSONEq(t, geminiComparable(t, rec, keep), geminiComparable(t, native.Body, keep), "the body the live upstream was sent")
			}
			out, err := json.Marshal(struct {
				Path     string          `json:"path"`
				Header   http.Header     `json:"header,omitempty"`
				Body     json.RawMessage `json:"body,omitempty"`
				Degraded []string        `json:"degraded,omitempty"`
			}{native.Path, native.Header, native.Body, native.Degraded})
			require.NoError(t, err)
			golden(t, *updateGemini, dir, "native.json", indentJSON(t, out))
			golden(t, *updateGemini, dir, "error.txt", nil)
		})
	}
}

// geminiComparable is a generateContent body with the systemInstruction's
// role taken out (the API does not read it; sluice sends none), and, unless
// keepSignatures, the function calls' thoughtSignature (which a request
// carries only in a tool call id sluice made).
func geminiComparable(t *testing.T, b []byte, keepSignatures bool) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	if si, ok := m["systemInstruction"].(map[string]any); ok {
		delete(si, "role")
	}
	if cs, ok := m["contents"].([]any); ok && !keepSignatures {
		for _, c := range cs {
			for _, p := range c.(map[string]any)["parts"].([]any) {
				delete(p.(map[string]any), "thoughtSignature")
			}
		}
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func TestGeminiAnswerCorpus(t *testing.T) {
	c := vertexTestConnector()
	for _, dir := range caseDirs(t, geminiCorpus, "recorded.txt") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			name, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
			require.NoError(t, err)
			raw, err := os.ReadFile(filepath.Join("../testdata/recorded/vertex", strings.TrimSpace(string(name))))
			require.NoError(t, err)
			if !strings.HasSuffix(strings.TrimSpace(string(name)), ".sse") {
				out, res, err := Respond(c, geminiCall(APIChat), raw)
				require.NoError(t, err)
				assert.Equal(t, "google-vertex", res.ServedProvider)
				assert.Equal(t, "gemini-2.5-flash", res.ServedModel)
				assert.Positive(t, res.Usage.PromptTokens)
				golden(t, *updateGemini, dir, "answer.json", indentJSON(t, out))
				golden(t, *updateGemini, dir, "result.json", resultJSON(t, res))
				for file, api := range map[string]API{"messages.json": APIMessages, "responses.json": APIResponses} {
					told, tres, err := Respond(c, geminiCall(api), raw)
					require.NoError(t, err, file)
					assert.Equal(t, res.Usage, tres.Usage, "%s: the same usage", file)
					golden(t, *updateGemini, dir, file, indentJSON(t, told))
				}
				return
			}
			s := OpenStream(c, geminiCall(APIChat))
			chunks, done, err := runStream(t, s, raw)
			require.NoError(t, err)
			require.True(t, done, "the stream ends at the finish reason")
			res := s.Result()
			assert.Equal(t, "google-vertex", res.ServedProvider)
			assert.Positive(t, res.Usage.CompletionTokens)
			golden(t, *updateGemini, dir, "chunks.jsonl", append(bytes.Join(chunks, []byte("\n")), '\n'))
			golden(t, *updateGemini, dir, "result.json", resultJSON(t, res))
			for file, api := range map[string]API{"messages.sse": APIMessages, "responses.sse": APIResponses} {
				st := OpenStream(c, geminiCall(api))
				events, done, err := runStream(t, st, raw)
				require.NoError(t, err, file)
				require.True(t, done, file)
				assert.Equal(t, res.Usage, st.Result().Usage, "%s: the same usage", file)
				golden(t, *updateGemini, dir, file, bytes.Join(events, []byte("\n\n")))
			}
		})
	}
}

// The vertex connector picks its dialect by the native model: Gemini
// models are asked in generateContent, translated from every inbound API,
// and their errors retold in the caller's API's shape; Claude models stay
// the Messages API's.
func TestGeminiDialect(t *testing.T) {
	c := vertexTestConnector()
	g := Dialect(c, "gemini-2.5-flash")
	require.NotSame(t, c, g)
	assert.Same(t, Connector(c), Dialect(c, "claude-3-7-sonnet@20250219"))
	assert.Same(t, g, Dialect(c, "gemini-2.5-pro"), "built once with the upstream")
	assert.Equal(t, c.Capabilities(), g.Capabilities())
	for _, api := range []API{APIChat, APIMessages, APIResponses, APICountTokens} {
		assert.False(t, SpeaksNatively(g, api), api.String())
		assert.False(t, ErrorsNative(g, api), api.String())
	}
	assert.Equal(t, "via generateContent", Asked(g, APIChat))
	assert.Equal(t, "via chat, as generateContent", Asked(g, APIMessages))
	assert.Equal(t, "via chat, as generateContent", Asked(g, APIResponses))

	// Google's error shape, retold.
	google := []byte(`{"error":{"code":400,"message":"Unable to submit request because it has an empty contents field.","status":"INVALID_ARGUMENT"}}`)
	var told struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(ChatError(400, google), &told))
	assert.Equal(t, "Unable to submit request because it has an empty contents field.", told.Error.Message)
	assert.Equal(t, `"INVALID_ARGUMENT"`, string(told.Error.Code))
	assert.Equal(t, "invalid_request_error", told.Error.Type)
	assert.Contains(t, string(MessagesError(400, google)), `"message":"Unable to submit request because it has an empty contents field."`)
	assert.Contains(t, string(ResponsesError(400, google)), `"message":"Unable to submit request because it has an empty contents field."`)

	// A token count for a Gemini model is estimated: nothing is sent.
	n, err := TranslateFor(c, &Inbound{API: APICountTokens}, Body{"messages": json.RawMessage(`[]`)}, geminiCall(APIChat).Plan, geminiCall(APIChat).Outcome)
	require.NoError(t, err)
	assert.Empty(t, n.Path)
}

// FuzzGeminiAnswer feeds the answer and stream readers arbitrary bodies
// and events, seeded from the recordings: they fail, or give an answer
// that is JSON, never panic.
func FuzzGeminiAnswer(f *testing.F) {
	recs, err := filepath.Glob("../testdata/recorded/vertex/*gemini*")
	require.NoError(f, err)
	for _, p := range recs {
		if strings.HasSuffix(p, ".meta.json") || strings.HasSuffix(p, ".request.json") {
			continue
		}
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	c := vertexTestConnector()
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, api := range []API{APIChat, APIMessages, APIResponses} {
			if out, _, err := Respond(c, geminiCall(api), b); err == nil {
				assert.True(t, json.Valid(out), "answer is JSON: %s", out)
			}
			s := OpenStream(c, geminiCall(api))
			chunks, _, _ := runStream(t, s, b)
			if api == APIChat {
				for _, ch := range chunks {
					assert.True(t, json.Valid(ch) || string(ch) == "[DONE]", "chunk is JSON: %s", ch)
				}
			}
			_ = s.Result()
		}
	})
}

// BenchmarkGeminiTranslate is a plain chat request's translation into
// generateContent (the recorded plain turn).
func BenchmarkGeminiTranslate(b *testing.B) {
	c := vertexTestConnector()
	body, err := ParseBody([]byte(`{"model":"google/gemini-2.5-flash","messages":[{"role":"system","content":"You are a helpful assistant"},{"role":"user","content":"Say hi in Portuguese"}],"max_tokens":4000}`))
	require.NoError(b, err)
	call := geminiCall(APIChat)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TranslateFor(c, nil, body, call.Plan, call.Outcome); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGeminiStreamEvent is one recorded text event of a stream,
// translated into a chat chunk.
func BenchmarkGeminiStreamEvent(b *testing.B) {
	c := vertexTestConnector()
	data := []byte(`{"candidates": [{"content": {"role": "model","parts": [{"text": "Olá!"}]}}],"usageMetadata": {"trafficType": "ON_DEMAND"},"modelVersion": "gemini-2.5-flash","createTime": "2026-03-12T18:05:56.457623Z","responseId": "hACzaZf3G-Tjt8gPydPHkAI"}`)
	s := OpenStream(c, geminiCall(APIChat))
	emit := func([]byte) error { return nil }
	_, err := s.Event(nil, data, emit)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Event(nil, data, emit); err != nil {
			b.Fatal(err)
		}
	}
}

// Finish reasons and usage as generateContent reports them: the prompt
// counts its cached part, the completion the thinking beside the
// candidates.
func TestGeminiFinishAndUsage(t *testing.T) {
	for _, tc := range []struct {
		reason string
		tools  bool
		want   string
	}{
		{"STOP", false, "stop"}, {"STOP", true, "tool_calls"}, {"MAX_TOKENS", false, "length"}, {"MAX_TOKENS", true, "length"},
		{"SAFETY", false, "content_filter"}, {"RECITATION", false, "content_filter"}, {"BLOCKLIST", false, "content_filter"},
		{"PROHIBITED_CONTENT", false, "content_filter"}, {"SPII", false, "content_filter"}, {"OTHER", false, "stop"},
	} {
		assert.Equal(t, tc.want, geminiFinish(tc.reason, tc.tools), "%s tools=%v", tc.reason, tc.tools)
	}
	_, res, err := Respond(vertexTestConnector(), geminiCall(APIChat), []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],`+
		`"usageMetadata":{"promptTokenCount":1200,"candidatesTokenCount":30,"cachedContentTokenCount":1000,"thoughtsTokenCount":70,"totalTokenCount":1300},"modelVersion":"gemini-2.5-flash"}`))
	require.NoError(t, err)
	assert.Equal(t, Usage{PromptTokens: 1200, CompletionTokens: 100, CachedTokens: 1000, ReasoningTokens: 70}, res.Usage)
	assert.Equal(t, "gemini-2.5-flash", res.ServedModel)
}

// A tool call id carries its thoughtSignature there and back, and an id
// sluice did not make carries none.
func TestGeminiCallID(t *testing.T) {
	for _, sig := range []string{"CiwB4/H/Xo+LNC0v", "CiwB4/H/Xo+LNC0=", "CiwB4/H/Xo+LNA=="} {
		id := geminiCallID("FggJaYym-H6DM", 2, sig)
		assert.Regexp(t, `^[A-Za-z0-9_-]+$`, id)
		assert.Equal(t, sig, geminiSignatureOf(id))
	}
	assert.Equal(t, "call_r_0", geminiCallID("r", 0, ""))
	for _, id := range []string{"call_r_0", "toolu_01", "call_ts", "call_ts9_abc", "call_tsx_abc", "call_ts-1_abc"} {
		assert.Empty(t, geminiSignatureOf(id), id)
	}
}
