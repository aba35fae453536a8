package connectors

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/wire/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateAnthropic = flag.Bool("update-anthropic", false, "rewrite the anthropic connector's golden files")

// anthCorpus is the connector's corpus: one directory per case holding
// request.json (a chat-completions body) and native.json or error.txt,
// response.json (a Messages answer) and openai.json or error.txt, or
// stream.sse (an event stream) and chunks.jsonl; answers and streams also
// record result.json, what the connector read back. A case may hold both a
// request and its answer: a stream is then read under the translation's
// [Call] (whether the caller asked for usage).
//
// A case may take its answer from testdata/recorded instead: recorded.txt
// names the recorded answer (a .json answer or a .sse stream) on its first
// line and, on a second, the Messages request the live upstream was sent
// (.request.json), which the case's request.json must translate to, up to
// the equivalent spellings [anthEquivalent] lists.
const anthCorpus = "../testdata/connectors/anthropic"

// anthRecordedDir is where recorded.txt names its files from.
const anthRecordedDir = "../testdata/recorded"

// anthRecorded reads a case's recorded.txt: the recorded answer's path and
// the recorded request's ("" when it names none). Both are "" when the case
// has no recorded.txt.
func anthRecorded(t testing.TB, dir string) (answer, request string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "recorded.txt"))
	if os.IsNotExist(err) {
		return "", ""
	}
	require.NoError(t, err)
	lines := strings.Fields(string(raw))
	require.NotEmpty(t, lines, "%s/recorded.txt names no answer", dir)
	require.LessOrEqual(t, len(lines), 2, "%s/recorded.txt: an answer and at most one request", dir)
	answer = filepath.Join(anthRecordedDir, lines[0])
	if len(lines) == 2 {
		require.True(t, strings.HasSuffix(lines[1], ".request.json"), "%s/recorded.txt: the second line names a request", dir)
		request = filepath.Join(anthRecordedDir, lines[1])
	}
	return answer, request
}

// anthAnswerCases lists the corpus's cases of one kind of answer, name
// "response.json" or "stream.sse": the directories holding that file, and
// those whose recorded.txt names a recorded answer of its extension. It
// returns each case's directory and the answer's path.
func anthAnswerCases(t testing.TB, name string) (dirs, answers []string) {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(anthCorpus, "*"))
	require.NoError(t, err)
	for _, dir := range all {
		path := filepath.Join(dir, name)
		if rec, _ := anthRecorded(t, dir); rec != "" {
			if filepath.Ext(rec) != filepath.Ext(name) {
				continue
			}
			_, err := os.Stat(path)
			require.True(t, os.IsNotExist(err), "%s has both %s and a recorded answer", dir, name)
			path = rec
		} else if _, err := os.Stat(path); err != nil {
			continue
		}
		dirs, answers = append(dirs, dir), append(answers, path)
	}
	require.NotEmpty(t, dirs, "no %s in %s", name, anthCorpus)
	return dirs, answers
}

// anthCaseCall is the call a case's answer is read under: the test call,
// with UsageAdded as the translation of the case's request.json sets it,
// when the case has one.
func anthCaseCall(t testing.TB, dir string) *Call {
	t.Helper()
	call := anthTestCall()
	raw, err := os.ReadFile(filepath.Join(dir, "request.json"))
	if os.IsNotExist(err) {
		return call
	}
	require.NoError(t, err)
	body, err := ParseBody(raw)
	require.NoError(t, err)
	native, err := anthTestConnector().Translate(body, call.Plan, call.Outcome)
	require.NoError(t, err, "the request of an answer case translates")
	call.UsageAdded = native.UsageAdded
	return call
}

// anthCreated is the fixed clock of the golden answers.
var anthCreated = time.Unix(1760000000, 0)

func anthTestConnector() *anthropic {
	return &anthropic{now: func() time.Time { return anthCreated }}
}

// anthTestCall is the check's outcome for the decided model on this upstream:
// the catalog's native id.
func anthTestCall() *Call {
	return &Call{
		Plan:    &compiler.Plan{DecidedModel: "anthropic/claude-sonnet-4.5"},
		Outcome: &compiler.Outcome{NativeModel: "claude-sonnet-4-5", Degraded: []string{}},
	}
}

func anthMust(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestAnthropicConnector(t *testing.T) {
	c, err := New("anthropic")
	require.NoError(t, err)
	assert.Equal(t, "anthropic", c.Kind())
	assert.Equal(t, compiler.Capabilities{DirectProvider: "anthropic"}, c.Capabilities())

	h := http.Header{}
	c.Authorize(h, "sk-ant-test")
	assert.Equal(t, "sk-ant-test", h.Get("x-api-key"))
	assert.Equal(t, "2023-06-01", h.Get("anthropic-version"))
	assert.Empty(t, h.Get("Authorization"))

	h = http.Header{}
	c.Authorize(h, "")
	assert.Empty(t, h.Values("x-api-key"))
	assert.Equal(t, "2023-06-01", h.Get("anthropic-version"))
}

// The turn after a tool call replays the answer's assistant message as a
// client received it (the non-streaming message, or a stream's deltas
// joined), after the first turn's messages: each next-turn case's request
// is its first turn's, so its translation is what the live upstream was
// sent for the next turn (recorded.txt), thinking blocks and signatures
// included.
func TestAnthropicReasoningReplay(t *testing.T) {
	for _, tc := range []struct{ first, next string }{
		{"recorded-nonstream-thinking-tooluse-claude-sonnet-4", "recorded-nonstream-thinking-after-toolresult-claude-sonnet-4"},
		{"recorded-stream-thinking-tooluse-claude-sonnet-4", "recorded-stream-thinking-after-toolresult-claude-sonnet-4"},
	} {
		t.Run(tc.next, func(t *testing.T) {
			var first, next struct {
				Messages []json.RawMessage `json:"messages"`
			}
			for _, r := range []struct {
				dir string
				dst any
			}{{tc.first, &first}, {tc.next, &next}} {
				raw, err := os.ReadFile(filepath.Join(anthCorpus, r.dir, "request.json"))
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(raw, r.dst))
			}
			require.Len(t, next.Messages, len(first.Messages)+2, "the first turn, the assistant's message and the tool's")
			for i, m := range first.Messages {
				assert.JSONEq(t, string(m), string(next.Messages[i]), "message %d is the first turn's", i)
			}
			assert.JSONEq(t, string(anthClientMessage(t, filepath.Join(anthCorpus, tc.first))), string(next.Messages[len(first.Messages)]),
				"the assistant message is the answer as the client received it")
			_, rec := anthRecorded(t, filepath.Join(anthCorpus, tc.next))
			require.NotEmpty(t, rec, "the next turn's recorded request is named")
		})
	}
}

// Every answer case that reasoned goes round: the assistant message a client
// assembles from the translated answer (the message, or a stream's deltas
// joined), sent back, translates into the blocks the upstream answered with
// — reasoning blocks first and in order, with their text, signature or data
// unchanged, then the text, then the tool calls.
func TestAnthropicReasoningRoundTrip(t *testing.T) {
	c := anthTestConnector()
	call := anthTestCall()
	reasoned := 0
	for _, name := range []string{"response.json", "stream.sse"} {
		dirs, answers := anthAnswerCases(t, name)
		for i, dir := range dirs {
			raw, err := os.ReadFile(answers[i])
			require.NoError(t, err)
			var blocks []messages.ResponseBlock
			if name == "stream.sse" {
				blocks = anthStreamBlocks(t, raw)
			} else {
				var m messages.Response
				require.NoError(t, json.Unmarshal(raw, &m))
				blocks = m.Content
			}
			want := anthReplayBlocks(t, blocks)
			if want == "" {
				continue // no reasoning
			}
			reasoned++
			t.Run(filepath.Base(dir), func(t *testing.T) {
				msg := anthClientMessage(t, dir)
				body, err := ParseBody([]byte(`{"messages":[{"role":"user","content":"q"},` + string(msg) + `]}`))
				require.NoError(t, err)
				native, err := c.Translate(body, call.Plan, call.Outcome)
				require.NoError(t, err)
				var got struct {
					Messages []struct {
						Content json.RawMessage `json:"content"`
					} `json:"messages"`
				}
				require.NoError(t, json.Unmarshal(native.Body, &got))
				require.Len(t, got.Messages, 2)
				assert.JSONEq(t, want, string(got.Messages[1].Content))
			})
		}
	}
	assert.GreaterOrEqual(t, reasoned, 10, "the corpus's answers that reasoned")
}

// anthReplayBlocks is the content an answer's blocks come back as when its
// message is replayed, as JSON: the reasoning blocks in order, then the texts
// joined into one text block, then the tool calls; "" when the answer has no
// reasoning block.
func anthReplayBlocks(t testing.TB, blocks []messages.ResponseBlock) string {
	t.Helper()
	var reasoning, tools []map[string]any
	text := ""
	for _, b := range blocks {
		switch b.Type {
		case "thinking":
			reasoning = append(reasoning, map[string]any{"type": b.Type, "thinking": b.Thinking, "signature": b.Signature})
		case "redacted_thinking":
			reasoning = append(reasoning, map[string]any{"type": b.Type, "data": b.Data})
		case "text":
			text += b.Text
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			tools = append(tools, map[string]any{"type": b.Type, "id": b.ID, "name": b.Name, "input": input})
		}
	}
	if len(reasoning) == 0 {
		return ""
	}
	out := reasoning
	if text != "" {
		out = append(out, map[string]any{"type": "text", "text": text})
	}
	b, err := json.Marshal(append(out, tools...))
	require.NoError(t, err)
	return string(b)
}

// anthStreamBlocks joins an event stream's content blocks as the upstream
// documents them: each block as it starts, its text, thinking and tool input
// deltas appended, its signature set.
func anthStreamBlocks(t testing.TB, sse []byte) []messages.ResponseBlock {
	t.Helper()
	var blocks []messages.ResponseBlock
	var input []string
	at := map[int]int{}
	r := NewSSEReader(bytes.NewReader(sse))
	for {
		_, data, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var e struct {
			Type         string                 `json:"type"`
			Index        int                    `json:"index"`
			ContentBlock messages.ResponseBlock `json:"content_block"`
			Delta        struct {
				Text        string `json:"text"`
				Thinking    string `json:"thinking"`
				Signature   string `json:"signature"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal(data, &e))
		switch e.Type {
		case "content_block_start":
			at[e.Index] = len(blocks)
			blocks, input = append(blocks, e.ContentBlock), append(input, "")
		case "content_block_delta":
			b := &blocks[at[e.Index]]
			b.Text += e.Delta.Text
			b.Thinking += e.Delta.Thinking
			b.Signature += e.Delta.Signature
			input[at[e.Index]] += e.Delta.PartialJSON
		case "content_block_stop":
			if i := at[e.Index]; input[i] != "" {
				blocks[i].Input = json.RawMessage(input[i])
			}
		}
	}
	return blocks
}

// anthClientMessage is the assistant message a client holds after a case's
// answer: the translated answer's message (openai.json), or the message it
// joins from the translated stream's deltas (chunks.jsonl) — the content and
// reasoning texts concatenated, the reasoning_details entries of every delta
// one after the other, the tool calls' pieces joined by index.
func anthClientMessage(t testing.TB, dir string) json.RawMessage {
	t.Helper()
	if raw, err := os.ReadFile(filepath.Join(dir, "openai.json")); err == nil {
		var answer struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(raw, &answer))
		require.Len(t, answer.Choices, 1)
		return answer.Choices[0].Message
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chunks.jsonl"))
	require.NoError(t, err)
	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var msg struct {
		Role             string            `json:"role"`
		Content          *string           `json:"content"`
		Reasoning        *string           `json:"reasoning,omitempty"`
		ReasoningDetails []json.RawMessage `json:"reasoning_details,omitempty"`
		ToolCalls        []toolCall        `json:"tool_calls,omitempty"`
	}
	msg.Role = "assistant"
	join := func(dst **string, s *string) {
		if s != nil {
			if *dst == nil {
				*dst = new(string)
			}
			**dst += *s
		}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		if line == string(doneData) {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          *string           `json:"content"`
					Reasoning        *string           `json:"reasoning"`
					ReasoningDetails []json.RawMessage `json:"reasoning_details"`
					ToolCalls        []struct {
						Index int `json:"index"`
						toolCall
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &chunk), line)
		for _, c := range chunk.Choices {
			d := c.Delta
			join(&msg.Content, d.Content)
			join(&msg.Reasoning, d.Reasoning)
			msg.ReasoningDetails = append(msg.ReasoningDetails, d.ReasoningDetails...)
			for _, tc := range d.ToolCalls {
				for len(msg.ToolCalls) <= tc.Index {
					msg.ToolCalls = append(msg.ToolCalls, toolCall{})
				}
				to := &msg.ToolCalls[tc.Index]
				if tc.ID != "" {
					to.ID, to.Type = tc.ID, tc.Type
				}
				to.Function.Name += tc.Function.Name
				to.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	return b
}
