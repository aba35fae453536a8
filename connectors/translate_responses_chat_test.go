package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
)

var updateResponses = flag.Bool("update-responses", false, "rewrite the Responses translation's golden files")

// respCorpus holds the Responses API's translation cases, one directory
// each:
//
//   - request.json, a Responses request, and chat.json (its chat
//     translation and what it degraded) or error.txt (ParseResponses'
//     error: "invalid <code> <pointer>: …" or "untranslatable <code>
//     <pointer>: …");
//   - recorded.txt naming a recorded answer (<upstream>/<file>.json) or
//     stream (.sse) under testdata/recorded, read by that upstream's
//     connector for a Responses request (request.json, when present, is the
//     request echoed), and response.json or events.sse, what the caller
//     receives; result.json is what was read back.
const respCorpus = "../testdata/connectors/responses"

func respGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateResponses {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file (run with -update-responses)")
	assert.Equal(t, string(want), string(got))
}

func respCases(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(respCorpus, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	return dirs
}

func respReadBody(t *testing.T, path string) Body {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	body, err := ParseBody(raw)
	require.NoError(t, err)
	return body
}

func TestResponsesRequestCorpus(t *testing.T) {
	ran := 0
	for _, dir := range respCases(t) {
		if !exists(filepath.Join(dir, "request.json")) || exists(filepath.Join(dir, "recorded.txt")) {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			body := respReadBody(t, filepath.Join(dir, "request.json"))
			chat, lost, err := chatFromResponses(body)
			if err != nil {
				var e *TranslateError
				require.True(t, errors.As(err, &e), "%v", err)
				kind := "invalid"
				if e.Code == CodeUnsupportedParameter {
					kind = "untranslatable"
				}
				respGolden(t, filepath.Join(dir, "error.txt"), []byte(kind+" "+e.Code+" "+e.Param+": "+e.Message+"\n"))
				assert.False(t, exists(filepath.Join(dir, "chat.json")), "a refused case has no chat.json")
				if shallow := ParseResponses(body); shallow != nil {
					// What the gateway refuses before any upstream is the
					// translation's own verdict, at the same member.
					assert.Equal(t, e.Code, shallow.Code)
					assert.Equal(t, e.Param, shallow.Param)
				}
				return
			}
			require.Nil(t, ParseResponses(body), "a translatable request passes the gateway's check")
			out, err := json.Marshal(struct {
				Chat     json.RawMessage `json:"chat"`
				Degraded []string        `json:"degraded"`
			}{encodeBody(chat), lost})
			require.NoError(t, err)
			var b bytes.Buffer
			require.NoError(t, json.Indent(&b, out, "", "  "))
			respGolden(t, filepath.Join(dir, "chat.json"), append(b.Bytes(), '\n'))
		})
	}
	require.NotZero(t, ran)
}

// respTestCall is the call a Responses answer case is read under: the
// caller wrote "claude-sonnet-4-5", which the catalog's model names.
func respTestCall(req Body) *Call {
	return &Call{
		Plan:    &compiler.Plan{DecidedModel: "anthropic/claude-sonnet-4.5"},
		Outcome: &compiler.Outcome{NativeModel: "claude-sonnet-4-5", Degraded: []string{}},
		Inbound: &Inbound{API: APIResponses, Model: "claude-sonnet-4-5", Request: req},
	}
}

func TestResponsesAnswerCorpus(t *testing.T) {
	ran := 0
	for _, dir := range respCases(t) {
		if !exists(filepath.Join(dir, "recorded.txt")) {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rec, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
			require.NoError(t, err)
			rel := strings.TrimSpace(string(rec))
			kind, file, _ := strings.Cut(rel, "/")
			if kind == "responses" { // testdata/recorded/responses/<upstream>-<name>
				kind, _, _ = strings.Cut(file, "-")
			}
			raw, err := os.ReadFile(filepath.Join(anthRecordedDir, rel))
			require.NoError(t, err)
			var conn Connector
			if kind == "anthropic" {
				conn = anthTestConnector()
			} else {
				conn, err = New(kind)
				require.NoError(t, err)
			}
			var req Body
			if exists(filepath.Join(dir, "request.json")) {
				req = respReadBody(t, filepath.Join(dir, "request.json"))
			}
			call := respTestCall(req)
			var res Result
			if strings.HasSuffix(rel, ".sse") {
				s := OpenStream(conn, call)
				frames, _, serr := runStream(t, s, raw)
				if serr != nil {
					frames = append(frames, []byte("# the stream ended with: "+serr.Error()))
				}
				respGolden(t, filepath.Join(dir, "events.sse"), append(bytes.Join(frames, []byte("\n\n")), '\n'))
				assertSequence(t, frames)
				if SpeaksNatively(conn, APIResponses) && kind == "openai" {
					// OpenAI's own stream is relayed event for event, byte for byte.
					assert.Equal(t, strings.TrimSpace(string(raw)), strings.TrimSpace(string(bytes.Join(frames, []byte("\n\n")))))
				}
				res = s.Result()
			} else {
				var body []byte
				body, res, err = Respond(conn, call, raw)
				require.NoError(t, err)
				var b bytes.Buffer
				require.NoError(t, json.Indent(&b, body, "", "  "), "the answer is JSON")
				respGolden(t, filepath.Join(dir, "response.json"), append(b.Bytes(), '\n'))
			}
			respGolden(t, filepath.Join(dir, "result.json"), resultJSON(t, res))
		})
	}
	require.NotZero(t, ran)
}

// assertSequence holds a Responses event stream to the API's rules: every
// event names its type in its event line and its data, and the sequence
// numbers count up from 0 without a gap.
func assertSequence(t *testing.T, frames [][]byte) {
	t.Helper()
	var want int64
	for _, f := range frames {
		if bytes.HasPrefix(f, []byte("#")) {
			continue
		}
		name, data, ok := bytes.Cut(f, []byte("\ndata: "))
		require.True(t, ok, "an event has its data: %s", f)
		var ev struct {
			Type string `json:"type"`
			Seq  *int64 `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal(data, &ev), "%s", data)
		assert.Equal(t, "event: "+ev.Type, string(name))
		if ev.Seq == nil {
			continue // an upstream's own event relayed as it came
		}
		assert.Equal(t, want, *ev.Seq, "sequence_number of %s", ev.Type)
		want = *ev.Seq + 1
	}
}

// A request that the chat shape cannot carry is taken by every upstream
// that speaks the Responses API and refused, located, by the others.
func TestResponsesUntranslatableRefusedOnlyWhereTranslated(t *testing.T) {
	body, err := ParseBody([]byte(`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`))
	require.NoError(t, err)
	require.Nil(t, ParseResponses(body), "the gateway's check leaves it to the upstreams")
	in := &Inbound{API: APIResponses, Request: body}
	for _, kind := range Kinds {
		conn, err := NewFor(&profiles.Upstream{Connector: kind, Region: "us-east-1", APIKeyEnv: "SLUICE_TEST_KEY"}, "")
		require.NoError(t, err)
		native, err := TranslateFor(conn, in, body, &compiler.Plan{DecidedModel: "openai/gpt-5"}, &compiler.Outcome{NativeModel: "gpt-5"})
		if SpeaksNatively(conn, APIResponses) {
			require.NoError(t, err, kind)
			assert.Equal(t, "/responses", native.Path, kind)
			assert.Contains(t, string(native.Body), `"web_search"`, kind)
			continue
		}
		var te *TranslateError
		require.True(t, errors.As(err, &te), kind)
		assert.Equal(t, CodeUnsupportedParameter, te.Code)
		assert.Equal(t, "/tools/0/type", te.Param)
	}
}

// The native Responses request of each upstream that speaks the API: the
// routing knobs in that endpoint's own members, store false where the
// upstream is stateless, and a continuation refused where nothing is
// stored.
func TestResponsesNativeTranslate(t *testing.T) {
	plan := &compiler.Plan{DecidedModel: "openai/gpt-5", Session: "s-1"}
	out := &compiler.Outcome{NativeModel: "openai/gpt-5", Chain: []string{"anthropic/claude-sonnet-4.5"},
		Providers: compiler.Providers{Allowed: []string{"openai", "azure"}}}
	body, err := ParseBody([]byte(`{"model":"gpt-5","input":"hi","store":true}`))
	require.NoError(t, err)
	cases := []struct {
		kind, want string
		degraded   []string
		affinity   string
	}{
		{"openai", `{"input":"hi","model":"openai/gpt-5","prompt_cache_key":"s-1","store":true}`, nil, "prompt_cache_key"},
		{"openrouter", `{"input":"hi","model":"openai/gpt-5","models":["anthropic/claude-sonnet-4.5"],"provider":{"only":["openai","azure"]},"session_id":"s-1","store":false}`, []string{DegradedStore}, "session_id"},
		{"vercel", `{"input":"hi","model":"openai/gpt-5","providerOptions":{"gateway":{"only":["openai","azure"],"models":["anthropic/claude-sonnet-4.5"]}},"store":false}`, []string{DegradedStore}, ""},
	}
	for _, c := range cases {
		conn, err := New(c.kind)
		require.NoError(t, err)
		native, err := TranslateFor(conn, &Inbound{API: APIResponses}, body, plan, out)
		require.NoError(t, err, c.kind)
		assert.Equal(t, "/responses", native.Path)
		assert.JSONEq(t, c.want, string(native.Body), c.kind)
		assert.Equal(t, c.degraded, native.Degraded, c.kind)
		assert.Equal(t, c.affinity, native.Affinity, c.kind)
		assert.Equal(t, c.kind == "openai", ResponsesStateful(conn), c.kind)
	}
	cont, err := ParseBody([]byte(`{"model":"gpt-5","input":"more","previous_response_id":"resp_1"}`))
	require.NoError(t, err)
	for _, kind := range []string{"openrouter", "vercel"} {
		conn, _ := New(kind)
		_, err := TranslateFor(conn, &Inbound{API: APIResponses}, cont, plan, out)
		var te *TranslateError
		require.True(t, errors.As(err, &te), kind)
		assert.Equal(t, "/previous_response_id", te.Param)
	}
}

// The marketplaces take a Messages request natively, with the routing
// knobs their Messages endpoint documents (OpenRouter: its chat members;
// Vercel: none), and the caller's anthropic-beta values.
func TestMessagesMarketplacesNative(t *testing.T) {
	plan := &compiler.Plan{DecidedModel: "anthropic/claude-sonnet-4.5"}
	out := &compiler.Outcome{NativeModel: "anthropic/claude-sonnet-4.5", Providers: compiler.Providers{Preferred: []string{"anthropic"}, Denied: []string{"google-vertex"}}}
	body, err := ParseBody([]byte(`{"model":"claude-sonnet-4-5","max_tokens":9,"context_management":{"edits":[]},"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`))
	require.NoError(t, err)
	in := &Inbound{API: APIMessages, Beta: []string{"context-management-2025-06-27"}}
	or, _ := New("openrouter")
	native, err := TranslateFor(or, in, body, plan, out)
	require.NoError(t, err)
	assert.Equal(t, "/messages", native.Path)
	assert.JSONEq(t, `{"context_management":{"edits":[]},"max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"model":"anthropic/claude-sonnet-4.5","provider":{"order":["anthropic"],"ignore":["google-vertex"]}}`, string(native.Body))
	assert.Equal(t, "context-management-2025-06-27", native.Header.Get("Anthropic-Beta"))
	assert.Equal(t, "enabled", native.Header.Get("X-Openrouter-Metadata"))
	assert.Empty(t, openRouterHeaders.Get("Anthropic-Beta"), "the shared headers are never changed")

	vc, _ := New("vercel")
	assert.Equal(t, compiler.Capabilities{}, CapabilitiesFor(vc, APIMessages), "no routing knob is documented on the gateway's Messages endpoint")
	native, err = TranslateFor(vc, in, body, plan, &compiler.Outcome{NativeModel: "anthropic/claude-sonnet-4.5"})
	require.NoError(t, err)
	assert.Equal(t, "/messages", native.Path)
	assert.Contains(t, string(native.Body), `"context_management"`)
	assert.Equal(t, "native", Asked(or, APIMessages))
	assert.Equal(t, "via chat", func() string { c, _ := New("openai"); return Asked(c, APIMessages) }())
}

// BenchmarkResponsesStreamTextDelta is a translated Responses stream's
// steady state: Anthropic's text delta told as a chat chunk, then as a
// response.output_text.delta event.
func BenchmarkResponsesStreamTextDelta(b *testing.B) {
	call := respTestCall(nil)
	s := OpenStream(anthTestConnector(), call)
	emit := func([]byte) error { return nil }
	_, err := s.Event([]byte("message_start"), []byte(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`), emit)
	require.NoError(b, err)
	event := []byte("content_block_delta")
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, this is a typical \"delta\" of a few words.\n"}}`)
	_, err = s.Event(event, data, emit) // opens the message item
	require.NoError(b, err)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Event(event, data, emit); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseResponses: seeded from the corpus's requests, the gateway's
// shallow check is never stricter than the translation (what it refuses,
// the translation refuses too; the corpus holds the two to the same member
// on its cases), and a request the translation takes comes out as a JSON
// chat body.
func FuzzParseResponses(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join(respCorpus, "*", "request.json"))
	for _, p := range dirs {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		body, err := ParseBody(raw)
		if err != nil {
			return
		}
		shallow := ParseResponses(body)
		chat, _, terr := chatFromResponses(body)
		var full *TranslateError
		if terr != nil {
			if !errors.As(terr, &full) || full.Code == "" || full.Message == "" {
				t.Fatalf("a translation error without code or message: %v", terr)
			}
		}
		switch {
		case full == nil && shallow != nil:
			t.Fatalf("the shallow check refuses what translates: %v", shallow)
		case full == nil && !json.Valid(encodeBody(chat)):
			t.Fatalf("the translation is not JSON")
		}
	})
}
