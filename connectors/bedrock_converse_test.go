package connectors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
)

var updateConverse = flag.Bool("update-converse", false, "rewrite the bedrock connector's Converse golden files")

// converseCorpus is the Converse dialect's corpus: one directory per case,
// holding any of
//
//   - model.txt, the native model sent to (default
//     us.meta.llama3-3-70b-instruct-v1:0); beta.txt, the anthropic-beta
//     flags the check kept, one a line;
//   - request.json (chat), messages.json (Messages) or responses.json
//     (Responses), and native.json, messages-native.json or
//     responses-native.json: the Converse request each becomes (path,
//     body, what was degraded), or error.json when it is refused;
//   - recorded.txt, naming a recorded Converse answer under
//     testdata/recorded/bedrock/converse (a .json answer, a .chunks.txt
//     stream encoded into event-stream frames here, or an .eventstream
//     stream): the chat answer openai.json or chunks.jsonl, the Messages
//     caller's messages-answer.json or messages.sse, the Responses caller's
//     responses-answer.json or responses.sse, and result.json, what was read
//     back (the same for every caller).
const converseCorpus = "../testdata/connectors/bedrock-converse"

// converseRecorded is where the recorded Converse answers are.
const converseRecorded = "../testdata/recorded/bedrock/converse"

func converseTestConnector(t testing.TB) *bedrock {
	t.Helper()
	b := bedrockTestConnector(t)
	b.converse.anth.now = func() time.Time { return anthCreated }
	b.converse.newID = func() string { return "chatcmpl-bedrock-test" }
	return b
}

// converseFrames encodes a .chunks.txt stream (one {"<event type>":
// payload} a line) as event-stream frames, as ConverseStream sends them.
func converseFrames(t testing.TB, chunks []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	sc := bufio.NewScanner(bytes.NewReader(chunks))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &ev))
		require.Len(t, ev, 1, "one event a line: %s", line)
		for typ, payload := range ev {
			var msg eventstream.Message
			msg.Headers.Set(":event-type", eventstream.StringValue(typ))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Payload = payload
			require.NoError(t, enc.Encode(&out, msg))
		}
	}
	require.NoError(t, sc.Err())
	return out.Bytes()
}

// converseRecording reads a recorded answer; a stream comes back as
// event-stream frames.
func converseRecording(t testing.TB, name string) (body []byte, stream bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(converseRecorded, name))
	require.NoError(t, err)
	switch {
	case strings.HasSuffix(name, ".chunks.txt"):
		return converseFrames(t, raw), true
	case strings.HasSuffix(name, ".eventstream"):
		return raw, true
	}
	return raw, false
}

// converseNativeJSON is a translation as a golden file.
func converseNativeJSON(t *testing.T, n *Native, err error) (string, []byte) {
	t.Helper()
	if err != nil {
		var te *TranslateError
		require.ErrorAs(t, err, &te)
		b, _ := json.Marshal(map[string]string{"code": te.Code, "param": te.Param, "message": te.Message})
		return "error", indentJSON(t, b)
	}
	b, err := json.Marshal(struct {
		Path     string          `json:"path"`
		Body     json.RawMessage `json:"body"`
		Degraded []string        `json:"degraded,omitempty"`
	}{n.Path, n.Body, n.Degraded})
	require.NoError(t, err)
	return "native", indentJSON(t, b)
}

func TestBedrockConverseCorpus(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(converseCorpus, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := converseTestConnector(t)
			model := "us.meta.llama3-3-70b-instruct-v1:0"
			if b, err := os.ReadFile(filepath.Join(dir, "model.txt")); err == nil {
				model = strings.TrimSpace(string(b))
			}
			require.Same(t, c.converse, Dialect(c, model), "a model that is not Anthropic's is spoken to through Converse")
			call := &Call{Plan: &compiler.Plan{DecidedModel: "meta/llama-3.3-70b-instruct"}, Outcome: &compiler.Outcome{NativeModel: model, Degraded: []string{}}}
			if b, err := os.ReadFile(filepath.Join(dir, "beta.txt")); err == nil {
				// The flags the check kept (those in Bedrock's table).
				call.Outcome.Betas = strings.Fields(string(b))
			}
			for _, in := range []struct {
				file, prefix string
				api          API
			}{{"request.json", "", APIChat}, {"messages.json", "messages-", APIMessages}, {"responses.json", "responses-", APIResponses}} {
				raw, err := os.ReadFile(filepath.Join(dir, in.file))
				if err != nil {
					continue
				}
				body, err := ParseBody(raw)
				require.NoError(t, err)
				var inbound *Inbound
				if in.api != APIChat {
					inbound = &Inbound{API: in.api, Model: "meta/llama-3.3-70b-instruct", Request: body}
				}
				n, err := TranslateFor(c, inbound, body, call.Plan, call.Outcome)
				kind, got := converseNativeJSON(t, n, err)
				other := map[string]string{"native": "error", "error": "native"}[kind]
				golden(t, *updateConverse, dir, in.prefix+kind+".json", got)
				golden(t, *updateConverse, dir, in.prefix+other+".json", nil)
				if err == nil && in.api == APIChat {
					call.UsageAdded = n.UsageAdded
				}
			}
			rec, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
			if err != nil {
				return
			}
			answer, stream := converseRecording(t, strings.TrimSpace(string(rec)))
			var first Result
			for i, in := range []struct {
				prefix string
				api    API
			}{{"", APIChat}, {"messages", APIMessages}, {"responses", APIResponses}} {
				ccall := *call
				name := "openai"
				if in.api != APIChat {
					ccall.Inbound = &Inbound{API: in.api, Model: "meta/llama-3.3-70b-instruct", Request: Body{}}
					name = in.prefix + "-answer"
				}
				var res Result
				if !stream {
					out, r, err := Respond(c, &ccall, answer)
					require.NoError(t, err)
					golden(t, *updateConverse, dir, name+".json", indentJSON(t, out))
					res = r
				} else {
					s := OpenStream(c, &ccall)
					chunks, done, err := bedrockRun(t, s, answer)
					var lines bytes.Buffer
					for _, ch := range chunks {
						lines.Write(ch)
						lines.WriteByte('\n')
					}
					ext := map[API]string{APIChat: "chunks.jsonl", APIMessages: "messages.sse", APIResponses: "responses.sse"}[in.api]
					golden(t, *updateConverse, dir, ext, lines.Bytes())
					res = s.Result()
					if res.StreamError == "" {
						require.NoError(t, err)
						assert.True(t, done, "the stream ends")
					} else {
						require.Error(t, err, "an in-band error fails the stream")
					}
				}
				assert.Equal(t, bedrockProvider, res.ServedProvider)
				if i == 0 {
					first = res
					golden(t, *updateConverse, dir, "result.json", resultJSON(t, res))
				} else {
					assert.Equal(t, first.Usage, res.Usage, "every caller's row reads the same usage")
					assert.Equal(t, first.ServedModel, res.ServedModel)
				}
			}
		})
	}
}

// Anthropic's models stay the bedrock connector's own (the Messages API
// over InvokeModel), with or without an inference profile's prefix; every
// other model goes through Converse, and the answer's errors are Bedrock's
// own shape for every caller API.
func TestBedrockConverseDialect(t *testing.T) {
	c := converseTestConnector(t)
	for _, m := range []string{"anthropic.claude-3-haiku-20240307-v1:0", "us.anthropic.claude-haiku-4-5-20251001-v1:0", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "apac.anthropic.claude-sonnet-4-20250514-v1:0"} {
		assert.Same(t, c, Dialect(c, m), m)
	}
	for _, m := range []string{"us.meta.llama3-3-70b-instruct-v1:0", "mistral.mistral-large-2407-v1:0", "eu.amazon.nova-pro-v1:0", "openai.gpt-oss-120b-1:0"} {
		d := Dialect(c, m)
		assert.Same(t, c.converse, d, m)
		for _, api := range []API{APIChat, APIMessages, APIResponses} {
			assert.False(t, ErrorsNative(d, api), "%s %s: Bedrock's {\"message\"} errors are retold", m, api)
		}
		assert.Equal(t, "via converse", Asked(d, APIChat))
		assert.Equal(t, "via chat, as converse", Asked(d, APIMessages))
		assert.Equal(t, "via chat, as converse", Asked(d, APIResponses))
	}
}

func FuzzConverseStream(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(converseRecorded, "*"))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(p, ".chunks.txt"):
			frames := converseFrames(f, raw)
			f.Add(frames, false)
			f.Add(frames[:len(frames)/2], false)
		case strings.HasSuffix(p, ".eventstream"):
			f.Add(raw, false)
		case strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".meta.json"):
			f.Add(raw, true)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, whole bool) {
		c := converseTestConnector(t)
		call := &Call{Plan: &compiler.Plan{DecidedModel: "m"}, Outcome: &compiler.Outcome{NativeModel: "us.meta.llama3-3-70b-instruct-v1:0"}}
		if whole {
			out, _, err := Respond(c, call, raw)
			if err == nil {
				require.True(t, json.Valid(out), "a read answer is JSON: %s", out)
			}
			return
		}
		s := OpenStream(c, call)
		chunks, _, _ := bedrockRun(t, s, raw)
		for _, ch := range chunks {
			require.True(t, bytes.Equal(ch, doneData) || json.Valid(ch), "every chunk is JSON: %s", ch)
		}
		_ = s.Result()
	})
}

// Converse's inputTokens counts the input the prompt cache neither read
// nor wrote; prompt_tokens is the sum, the cache's reads and writes
// reported inside it, as the anthropic connector counts them (the usage
// members of testdata/recorded/bedrock/converse's sources: inputTokens 13,
// outputTokens 4, cacheReadInputTokens 3, cacheWriteInputTokens 2, as
// vercel/ai's issue-19686-usage-raw.json reports them).
func TestConverseUsageCache(t *testing.T) {
	c := converseTestConnector(t)
	call := &Call{Plan: &compiler.Plan{DecidedModel: "amazon/nova-pro"}, Outcome: &compiler.Outcome{NativeModel: "us.amazon.nova-pro-v1:0"}}
	answer := []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"guardrail_intervened","usage":{"inputTokens":13,"outputTokens":4,"totalTokens":22,"cacheReadInputTokens":3,"cacheWriteInputTokens":2}}`)
	out, res, err := Respond(c, call, answer)
	require.NoError(t, err)
	assert.Equal(t, Usage{PromptTokens: 18, CompletionTokens: 4, CachedTokens: 3, CacheWriteTokens: 2}, res.Usage)
	assert.Equal(t, "content_filter", res.FinishReason)
	assert.Equal(t, "us.amazon.nova-pro-v1:0", res.ServedModel, "Converse names no model: the id sent is the one that served")
	assert.Contains(t, string(out), `"prompt_tokens":18`)
	assert.Contains(t, string(out), `"cached_tokens":3`)
}

// BenchmarkConverseStream reads a recorded ConverseStream (the live one,
// 6 frames) through the bedrock connector's event-stream reader and the
// Converse dialect's chat stream; the figure is per frame.
func BenchmarkConverseStream(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(converseRecorded, "converse-stream-live-eu-claude-sonnet-4-6.eventstream"))
	if err != nil {
		b.Fatal(err)
	}
	c := converseTestConnector(b)
	call := &Call{Plan: &compiler.Plan{DecidedModel: "m"}, Outcome: &compiler.Outcome{NativeModel: "us.meta.llama3-3-70b-instruct-v1:0"}}
	emit := func([]byte) error { return nil }
	frames := 0
	b.ReportAllocs()
	for b.Loop() {
		r := newBedrockEventReader(bytes.NewReader(raw))
		s := c.converse.NewStream(call)
		for {
			ev, data, err := r.Next()
			if err != nil {
				break
			}
			frames++
			if _, err := s.Event(ev, data, emit); err != nil {
				b.Fatal(err)
			}
		}
		r.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
}

// BenchmarkConverseTranslate translates a small chat request (a system
// prompt, a user turn, a token limit) into a Converse request.
func BenchmarkConverseTranslate(b *testing.B) {
	c := converseTestConnector(b)
	body, err := ParseBody([]byte(`{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant"},{"role":"user","content":"Say hi in Portuguese"}],"max_tokens":400}`))
	if err != nil {
		b.Fatal(err)
	}
	out := &compiler.Outcome{NativeModel: "us.meta.llama3-3-70b-instruct-v1:0"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.converse.Translate(body, nil, out); err != nil {
			b.Fatal(err)
		}
	}
}
