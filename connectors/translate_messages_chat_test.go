package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

var updateMessages = flag.Bool("update-messages", false, "rewrite the Messages translation's golden files")

// msgCorpus holds the Messages translation's cases, one directory each:
//
//   - request.json, a Messages request, and chat.json (its translation in
//     the marketplaces' dialect and in OpenAI's, with what each lost) or
//     error.txt (ParseMessages' error: "invalid <code> <pointer>: …" or
//     "untranslatable <code> <pointer>: …");
//   - answer.json, a chat answer, and message.json, the Messages answer;
//   - recorded.txt naming a recorded chat answer (<upstream>/<file>.json)
//     or stream (.sse) under testdata/recorded, read by that upstream's
//     connector, and message.json or events.sse, what the caller receives.
const msgCorpus = "../testdata/connectors/messages"

// msgTestCall is the call a Messages answer case is read under: the caller
// wrote "claude-haiku-4-5", the catalog's model was decided.
func msgTestCall() *Call {
	return &Call{
		Plan:    &compiler.Plan{DecidedModel: "anthropic/claude-haiku-4.5"},
		Outcome: &compiler.Outcome{NativeModel: "anthropic/claude-haiku-4.5", Degraded: []string{}},
		Inbound: &Inbound{API: APIMessages, Model: "claude-haiku-4-5"},
	}
}

func msgCases(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(msgCorpus, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	return dirs
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// msgGolden compares got with the file, or rewrites it under -update-messages.
func msgGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateMessages {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file (run with -update-messages)")
	assert.Equal(t, string(want), string(got))
}

func TestMessagesRequestCorpus(t *testing.T) {
	ran := 0
	for _, dir := range msgCases(t) {
		req := filepath.Join(dir, "request.json")
		if !exists(req) {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(req)
			require.NoError(t, err)
			body, err := ParseBody(raw)
			require.NoError(t, err)
			untranslatable, perr := ParseMessages(body)
			shallow := CheckMessages(body, false)
			if perr == nil {
				assert.Nil(t, shallow, "what translates passes the gateway's check")
			} else if shallow != nil {
				// What the gateway refuses before any upstream is the
				// translation's own verdict, at the same member.
				assert.Equal(t, perr.Param, shallow.Param)
				assert.Equal(t, perr.Message, shallow.Message)
			}
			if perr != nil || untranslatable != nil {
				kind, e := "invalid", perr
				if perr == nil {
					kind, e = "untranslatable", untranslatable
				}
				got := fmt.Sprintf("%s %s %s: %s\n", kind, e.Code, e.Param, e.Message)
				require.False(t, exists(filepath.Join(dir, "chat.json")), "a case with an error has no chat.json")
				msgGolden(t, filepath.Join(dir, "error.txt"), []byte(got))
				return
			}
			require.False(t, exists(filepath.Join(dir, "error.txt")), "the request translates, but the case expects an error")
			out := map[string]any{}
			for _, kind := range []string{"openrouter", "openai"} {
				chat, lost, err := chatFromMessages(body, dialectOf(kind))
				require.NoError(t, err)
				var v any
				require.NoError(t, json.Unmarshal(encodeBody(chat), &v))
				if lost == nil {
					lost = []string{}
				}
				out[kind] = map[string]any{"body": v, "degraded": lost}
				// Whatever the dialect, the chat body is one the chat path
				// reads: valid, with the model, the cap and the messages.
				for _, k := range []string{"model", "max_tokens", "messages"} {
					assert.Contains(t, chat, k)
				}
			}
			b, err := json.MarshalIndent(out, "", "  ")
			require.NoError(t, err)
			msgGolden(t, filepath.Join(dir, "chat.json"), append(b, '\n'))
		})
	}
	require.Greater(t, ran, 5)
}

// Every request the live Messages API was recorded receiving parses, and
// goes round: translated into the chat shape and back by the anthropic
// connector, its messages, system prompt, tools and tool choice are what
// they were (up to the spellings anthEquivalent treats as one).
func TestMessagesRecordedRequestsRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(anthRecordedDir, "anthropic", "*.request.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	c := anthTestConnector()
	call := anthTestCall()
	for _, f := range files {
		if strings.Contains(f, "count-tokens") {
			continue // a token count, not a message: no max_tokens
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			body, err := ParseBody(raw)
			require.NoError(t, err)
			untranslatable, perr := ParseMessages(body)
			require.Nil(t, perr, "a request the live API answered is valid")
			if untranslatable != nil {
				t.Logf("untranslatable: %s", untranslatable)
				return
			}
			chat, _, err := chatFromMessages(body, fullDialect)
			require.NoError(t, err)
			native, err := c.Translate(chat, call.Plan, call.Outcome)
			require.NoError(t, err, "the chat translation translates back")
			keep := func(b []byte) string {
				var m map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(b, &m))
				kept := map[string]json.RawMessage{}
				for _, k := range []string{"messages", "system", "tools", "tool_choice", "stop_sequences", "max_tokens", "temperature", "top_p", "top_k"} {
					if v, ok := m[k]; ok {
						kept[k] = v
					}
				}
				out, err := json.Marshal(kept)
				require.NoError(t, err)
				return anthEquivalent(t, out)
			}
			assert.Equal(t, keep(raw), keep(native.Body))
		})
	}
}

// msgReadAnswer reads a case's answer as the caller receives it: the
// connector of the recording's upstream (openai for a hand-written answer)
// reads it, and the translation writes the Messages answer or events.
func msgReadAnswer(t *testing.T, dir string) (name string, got []byte, res Result) {
	t.Helper()
	kind, path := "openai", filepath.Join(dir, "answer.json")
	if exists(filepath.Join(dir, "recorded.txt")) {
		rec, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
		require.NoError(t, err)
		rel := strings.TrimSpace(string(rec))
		kind, _, _ = strings.Cut(rel, "/")
		path = filepath.Join(anthRecordedDir, rel)
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	conn, err := New(kind)
	require.NoError(t, err)
	call := msgTestCall()
	if strings.HasSuffix(path, ".sse") {
		frames, _, serr := runStream(t, streamViaChat(conn, call), raw)
		if serr != nil {
			frames = append(frames, []byte("# the stream ended with: "+serr.Error()))
		}
		return "events.sse", bytes.Join(frames, []byte("\n\n")), Result{}
	}
	msg, res, err := respondViaChat(conn, call, raw)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, msg, "", "  "), "the answer is JSON")
	return "message.json", append(b.Bytes(), '\n'), res
}

func TestMessagesAnswerCorpus(t *testing.T) {
	ran := 0
	for _, dir := range msgCases(t) {
		if !exists(filepath.Join(dir, "answer.json")) && !exists(filepath.Join(dir, "recorded.txt")) {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			name, got, _ := msgReadAnswer(t, dir)
			msgGolden(t, filepath.Join(dir, name), got)
			if name == "events.sse" {
				checkEventGrammar(t, got)
			}
		})
	}
	require.Greater(t, ran, 5)
}

// Every chat answer and stream the upstreams were recorded sending becomes
// Messages events in the API's grammar, carrying what a chat client would
// have assembled: the same text, the same tool calls with the same
// arguments, and the usage.
func TestMessagesFromEveryRecordedChatStream(t *testing.T) {
	for _, kind := range []string{"openrouter", "vercel", "openai"} {
		files, err := filepath.Glob(filepath.Join(anthRecordedDir, kind, "*.sse"))
		require.NoError(t, err)
		for _, f := range files {
			t.Run(kind+"/"+filepath.Base(f), func(t *testing.T) {
				raw, err := os.ReadFile(f)
				require.NoError(t, err)
				conn, err := New(kind)
				require.NoError(t, err)
				chunks, _, chatErr := runStream(t, conn.NewStream(&Call{}), raw)
				frames, _, msgErr := runStream(t, streamViaChat(conn, msgTestCall()), raw)
				assert.Equal(t, chatErr != nil, msgErr != nil, "both end the same way: %v / %v", chatErr, msgErr)
				got := checkEventGrammar(t, bytes.Join(frames, []byte("\n\n")))
				want := assembleChat(t, chunks)
				assert.Equal(t, want.text, got.text, "text")
				assert.Equal(t, want.tools, got.tools, "tool calls")
				if chatErr == nil && want.usage != nil {
					assert.Equal(t, want.usage.CompletionTokens, got.output, "output tokens")
				}
			})
		}
	}
}

// assembled is what a client puts together from a stream.
type assembled struct {
	text   string
	tools  []string // name(input), in order
	usage  *headUsage
	output int64
}

// assembleChat joins chat chunks as a chat client does.
func assembleChat(t *testing.T, chunks [][]byte) assembled {
	var a assembled
	type call struct{ name, args string }
	var calls []*call
	for _, ch := range chunks {
		if bytes.Equal(ch, doneData) {
			continue
		}
		var (
			c      msgChunk
			usage  *headUsage
			choice msgChoice
			d      msgDelta
		)
		hasChoice, err := decodeChunk(ch, &c, &usage, &choice, &d)
		require.NoError(t, err)
		if usage != nil {
			a.usage = usage
		}
		if !hasChoice {
			continue
		}
		if d.Content != nil {
			a.text += *d.Content
		}
		for _, raw := range d.ToolCalls {
			var tc chatToolCallIn
			require.NoError(t, json.Unmarshal(raw, &tc))
			for len(calls) <= tc.Index {
				calls = append(calls, &call{})
			}
			calls[tc.Index].name += tc.Function.Name
			calls[tc.Index].args += tc.Function.Arguments
		}
	}
	for _, c := range calls {
		a.tools = append(a.tools, c.name+"("+normJSON(c.args)+")")
	}
	return a
}

func normJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// checkEventGrammar checks a Messages event stream — message_start first;
// content blocks opened, fed and closed one at a time with indexes counting
// up; message_delta then message_stop last, or an error event last — and
// returns what a client assembles from it.
func checkEventGrammar(t *testing.T, sse []byte) assembled {
	t.Helper()
	var a assembled
	if len(sse) == 0 {
		return a
	}
	events := bytes.Split(sse, []byte("\n\n"))
	open, next := -1, 0
	var tool, args strings.Builder
	var toolOpen bool
	var names []string
	for i, ev := range events {
		if bytes.HasPrefix(ev, []byte("# ")) {
			require.Equal(t, len(events)-1, i, "the test's note comes last")
			continue
		}
		name, data, ok := bytes.Cut(ev, []byte("\ndata: "))
		require.True(t, ok, "event %d has an event line and a data line: %q", i, ev)
		require.True(t, bytes.HasPrefix(name, []byte("event: ")), "%q", ev)
		n := string(bytes.TrimPrefix(name, []byte("event: ")))
		names = append(names, n)
		var e struct {
			Type         string             `json:"type"`
			Index        *int               `json:"index"`
			ContentBlock json.RawMessage    `json:"content_block"`
			Delta        json.RawMessage    `json:"delta"`
			Usage        *messages.OutUsage `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(data, &e), "%s", data)
		require.Equal(t, n, e.Type, "the event line names the data's type")
		if i == 0 && n != "error" {
			require.Equal(t, "message_start", n, "a stream begins with message_start (or fails at once)")
		}
		switch n {
		case "content_block_start":
			require.Equal(t, -1, open, "one block at a time")
			require.Equal(t, next, *e.Index)
			open = next
			var b struct{ Type, Name string }
			require.NoError(t, json.Unmarshal(e.ContentBlock, &b))
			toolOpen = b.Type == "tool_use"
			if toolOpen {
				tool.Reset()
				args.Reset()
				tool.WriteString(b.Name)
			}
		case "content_block_delta":
			require.Equal(t, open, *e.Index)
			var d struct{ Type, Text, PartialJSON string }
			var raw map[string]any
			require.NoError(t, json.Unmarshal(e.Delta, &raw))
			require.NoError(t, json.Unmarshal(e.Delta, &d))
			switch d.Type {
			case "text_delta":
				a.text += raw["text"].(string)
			case "input_json_delta":
				require.True(t, toolOpen)
				args.WriteString(raw["partial_json"].(string))
			}
		case "content_block_stop":
			require.Equal(t, open, *e.Index)
			if toolOpen {
				a.tools = append(a.tools, tool.String()+"("+normJSON(args.String())+")")
			}
			open, toolOpen = -1, false
			next++
		case "message_delta":
			require.Equal(t, -1, open, "blocks end before the message does")
			require.NotNil(t, e.Usage)
			a.output = e.Usage.OutputTokens
		case "message_stop":
			require.Equal(t, len(events)-1, i, "message_stop ends the stream")
			require.Equal(t, "message_delta", names[len(names)-2])
		case "error":
			last := len(events) - 1
			if bytes.HasPrefix(events[last], []byte("# ")) {
				last--
			}
			require.Equal(t, last, i, "an error event ends the stream")
		}
	}
	return a
}

func TestMessagesNativeTranslate(t *testing.T) {
	c := anthTestConnector()
	call := anthTestCall()
	body, err := ParseBody([]byte(`{"model":"claude-sonnet-4-5-20250929","max_tokens":99,"container":"c","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	in := &Inbound{API: APIMessages, Beta: []string{"interleaved-thinking-2025-05-14", "fine-grained-tool-streaming-2025-05-14"}}
	call.Outcome.Betas = in.Beta // the check kept every flag (Anthropic takes them all)
	native, err := TranslateFor(c, in, body, call.Plan, call.Outcome)
	require.NoError(t, err)
	assert.Equal(t, "/messages", native.Path)
	assert.JSONEq(t, `{"model":"claude-sonnet-4-5","max_tokens":99,"container":"c","messages":[{"role":"user","content":"hi"}]}`, string(native.Body),
		"only the model changes: members the chat shape has no room for go through")
	assert.Equal(t, "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14", native.Header.Get("anthropic-beta"))
	assert.Empty(t, native.Degraded)

	// Only what the check kept is sent, never the inbound list itself.
	kept := *call.Outcome
	kept.Betas = []string{"interleaved-thinking-2025-05-14"}
	native, err = TranslateFor(c, in, body, call.Plan, &kept)
	require.NoError(t, err)
	assert.Equal(t, "interleaved-thinking-2025-05-14", native.Header.Get("anthropic-beta"))
	kept.Betas = nil
	native, err = TranslateFor(c, in, body, call.Plan, &kept)
	require.NoError(t, err)
	assert.Empty(t, native.Header.Get("anthropic-beta"))

	// The request is untranslatable (container has no chat equivalent):
	// every upstream that would need the translation refuses it, located.
	for _, kind := range []string{"openai"} {
		conn, err := New(kind)
		require.NoError(t, err)
		_, err = TranslateFor(conn, in, body, &compiler.Plan{DecidedModel: "anthropic/claude-sonnet-4.5"}, &compiler.Outcome{NativeModel: "anthropic/claude-sonnet-4.5"})
		var te *TranslateError
		require.True(t, errors.As(err, &te), kind)
		assert.Equal(t, "/container", te.Param)
		assert.Equal(t, CodeUnsupportedParameter, te.Code)
	}
}

// The translated path carries the budget's cap and records what the
// dialect lost.
func TestMessagesTranslatedCarriesCapAndLosses(t *testing.T) {
	body, err := ParseBody([]byte(`{"model":"m","max_tokens":7,"thinking":{"type":"enabled","budget_tokens":5},"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	in := &Inbound{API: APIMessages}
	plan, out := &compiler.Plan{DecidedModel: "openai/gpt-4o"}, &compiler.Outcome{NativeModel: "gpt-4o"}
	conn, _ := New("openai")
	native, err := TranslateFor(conn, in, body, plan, out)
	require.NoError(t, err)
	assert.Equal(t, []string{DegradedCacheControl, DegradedThinking}, native.Degraded)
	assert.Equal(t, []string{DegradedCacheControl, "chain", DegradedThinking}, MergeDegraded([]string{"chain"}, native))
	var sent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(native.Body, &sent))
	assert.Equal(t, "7", string(sent["max_completion_tokens"]))
	assert.NotContains(t, sent, "reasoning")
	assert.NotContains(t, string(native.Body), "cache_control")

	conn, _ = New("openrouter") // the marketplaces' dialect, kept for the translated path
	native, err = translateViaChat(conn, in, body, plan, out)
	require.NoError(t, err)
	assert.Empty(t, native.Degraded)
	require.NoError(t, json.Unmarshal(native.Body, &sent))
	assert.JSONEq(t, `{"max_tokens":5}`, string(sent["reasoning"]))
	assert.Contains(t, string(native.Body), `"cache_control":{"type":"ephemeral"}`)
}

// The native relay passes every recorded Messages stream through event by
// event, byte for byte, and reads back what the translation reads.
func TestMessagesNativeRelaysRecordedStreams(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(anthRecordedDir, "anthropic", "*.sse"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	c := anthTestConnector()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			call := msgTestCall()
			frames, done, err := runStream(t, OpenStream(c, call), raw)
			require.NoError(t, err)
			require.True(t, done)
			var want [][]byte
			r := NewSSEReader(bytes.NewReader(raw))
			for {
				ev, data, err := r.Next()
				if err != nil {
					break
				}
				want = append(want, AppendEvent(nil, string(ev), data))
			}
			require.Equal(t, len(want), len(frames))
			for i := range want {
				assert.Equal(t, string(want[i]), string(frames[i]))
			}
			s := OpenStream(c, call)
			_, _, _ = runStream(t, s, raw)
			tr := c.NewStream(anthTestCall())
			_, _, _ = runStream(t, tr, raw)
			assert.Equal(t, tr.Result(), s.Result())
		})
	}
	// A non-streaming answer comes back as it was sent.
	answers, _ := filepath.Glob(filepath.Join(anthRecordedDir, "anthropic", "nonstream-*.json"))
	for _, f := range answers {
		if strings.HasSuffix(f, ".meta.json") || strings.HasSuffix(f, ".request.json") {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		body, res, err := Respond(c, msgTestCall(), raw)
		require.NoError(t, err, f)
		assert.Equal(t, raw, body)
		assert.NotEmpty(t, res.ServedModel)
		assert.Greater(t, res.Usage.PromptTokens, int64(0))
		// The shallow read-back reads what the translation reads.
		_, tr, err := c.Response(anthTestCall(), raw)
		require.NoError(t, err, f)
		assert.Equal(t, tr, res, f)
	}
}

func TestErrorTypeForStatus(t *testing.T) {
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
		403: "permission_error", 404: "not_found_error", 413: "request_too_large", 422: "invalid_request_error",
		429: "rate_limit_error", 500: "api_error", 502: "api_error", 504: "timeout_error", 529: "overloaded_error", 418: "invalid_request_error"} {
		assert.Equal(t, typ, ErrorTypeForStatus(status), "%d", status)
	}
}

// msgFuzzSeeds are the corpus's and the recordings' Messages requests.
func msgFuzzSeeds(f *testing.F) {
	var files []string
	dirs, _ := filepath.Glob(filepath.Join(msgCorpus, "*", "request.json"))
	files = append(files, dirs...)
	recorded, _ := filepath.Glob(filepath.Join(anthRecordedDir, "anthropic", "*.request.json"))
	files = append(files, recorded...)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseMessages: whatever the body, parsing never panics, an error
// carries a code and a pointer into the body, and a request that parses
// translates in every dialect into a chat body the chat path reads.
func FuzzParseMessages(f *testing.F) {
	msgFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		body, err := ParseBody(raw)
		if err != nil {
			return
		}
		untranslatable, perr := ParseMessages(body)
		for _, e := range []*TranslateError{untranslatable, perr} {
			if e != nil && (e.Code == "" || e.Message == "") {
				t.Fatalf("an error without code or message: %#v", e)
			}
		}
		// The gateway's shallow check is never stricter than the
		// translation: what it refuses, the translation refuses too.
		if shallow := CheckMessages(body, false); perr == nil && shallow != nil {
			t.Fatalf("the shallow check refuses what translates: %v", shallow)
		}
		if perr != nil || untranslatable != nil {
			return
		}
		for _, kind := range []string{"openrouter", "openai"} {
			chat, _, err := chatFromMessages(body, dialectOf(kind))
			if err != nil {
				t.Fatalf("%s: a request that parses fails to translate: %v", kind, err)
			}
			if !json.Valid(encodeBody(chat)) {
				t.Fatalf("%s: the translation is not JSON", kind)
			}
		}
	})
}

// FuzzMessagesStream: whatever a chat upstream streams, the Messages events
// written keep the API's grammar (checked on the events written so far
// when the stream fails).
func FuzzMessagesStream(f *testing.F) {
	for _, kind := range []string{"openrouter", "openai"} {
		files, _ := filepath.Glob(filepath.Join(anthRecordedDir, kind, "*.sse"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, sse []byte) {
		conn, _ := New("openrouter")
		frames, _, _ := runStream(t, streamViaChat(conn, msgTestCall()), sse)
		for _, fr := range frames {
			name, data, ok := bytes.Cut(fr, []byte("\ndata: "))
			if !ok || !bytes.HasPrefix(name, []byte("event: ")) || !json.Valid(data) {
				t.Fatalf("not an event: %q", fr)
			}
		}
	})
}

func TestMessagesError(t *testing.T) {
	for _, tc := range []struct {
		status     int
		body, want string
	}{
		{429, `{"error":{"message":"Rate limit exceeded: free-models-per-day","code":429}}`,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit exceeded: free-models-per-day"}}`},
		{400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"This model's maximum context length is 128000 tokens."}}`},
		{503, `{"error":"no providers"}`, `{"type":"error","error":{"type":"overloaded_error","message":"no providers"}}`},
		{502, `upstream exploded`, `{"type":"error","error":{"type":"api_error","message":"upstream exploded"}}`},
	} {
		assert.JSONEq(t, tc.want, string(MessagesError(tc.status, []byte(tc.body))))
	}
}

// A token count goes to the count's path of an upstream that speaks the
// Messages API, without max_tokens; any other upstream is sent nothing.
func TestCountTokensTranslate(t *testing.T) {
	body, err := ParseBody([]byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	untranslatable, perr := ParseCountTokens(body)
	require.Nil(t, perr)
	require.Nil(t, untranslatable)
	in := &Inbound{API: APICountTokens}
	call := anthTestCall()
	native, err := TranslateFor(anthTestConnector(), in, body, call.Plan, call.Outcome)
	require.NoError(t, err)
	assert.Equal(t, CountTokensPath, native.Path)
	assert.JSONEq(t, `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`, string(native.Body))
	conn, _ := New("openrouter")
	native, err = TranslateFor(conn, in, body, call.Plan, call.Outcome)
	require.NoError(t, err)
	assert.Empty(t, native.Path)
	assert.Empty(t, native.Body)

	_, perr = ParseCountTokens(Body{"model": json.RawMessage(`"m"`), "max_tokens": json.RawMessage(`1`), "messages": json.RawMessage(`[{"role":"user","content":"x"}]`)})
	require.NotNil(t, perr)
	assert.Equal(t, "/max_tokens", perr.Param)
}

// A translated answer names the model as the caller wrote it when the
// upstream reports the model asked for under another id the catalog knows.
func TestMessagesModelNamedAsAsked(t *testing.T) {
	call := msgTestCall()
	assert.Equal(t, "claude-haiku-4-5", messageModel(call, "anthropic/claude-haiku-4.5"))
	assert.Equal(t, "anthropic/claude-4.5-haiku-20251001", messageModel(call, "anthropic/claude-4.5-haiku-20251001"), "without the catalog's names")
	call.Resolve = func(id string) string {
		if id == "anthropic/claude-4.5-haiku-20251001" {
			return "anthropic/claude-haiku-4.5"
		}
		return ""
	}
	assert.Equal(t, "claude-haiku-4-5", messageModel(call, "anthropic/claude-4.5-haiku-20251001"))
	assert.Equal(t, "openai/gpt-4o", messageModel(call, "openai/gpt-4o"), "a substitution stays visible")
}
