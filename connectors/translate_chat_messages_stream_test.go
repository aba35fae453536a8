package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnthropicStreamCorpus(t *testing.T) {
	c := anthTestConnector()
	dirs, answers := anthAnswerCases(t, "stream.sse")
	for i, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			call := anthCaseCall(t, dir)
			raw, err := os.ReadFile(answers[i])
			require.NoError(t, err)
			s := c.NewStream(call)
			chunks, done, err := runStream(t, s, raw)
			var lines bytes.Buffer
			for i, ch := range chunks {
				if !bytes.Equal(ch, doneData) {
					assert.True(t, json.Valid(ch), "chunk %d is not JSON: %s", i, ch)
				}
				lines.Write(ch)
				lines.WriteByte('\n')
			}
			golden(t, *updateAnthropic, dir, "chunks.jsonl", lines.Bytes())
			if err != nil {
				var se *StreamError
				require.True(t, errors.As(err, &se), "error is not a *StreamError: %v", err)
				assert.False(t, done)
				golden(t, *updateAnthropic, dir, "error.txt", []byte(err.Error()+"\n"))
			} else {
				assert.True(t, done, "stream ended without message_stop")
				require.Greater(t, len(chunks), 1)
				assert.Equal(t, doneData, chunks[len(chunks)-1])
				golden(t, *updateAnthropic, dir, "error.txt", nil)
				// The usage chunk, last before the end, goes to a caller
				// that asked for it, and only to one.
				usage := 0
				for _, ch := range chunks {
					if bytes.Contains(ch, []byte(`"choices":[]`)) {
						usage++
					}
				}
				if call.UsageAdded {
					assert.Zero(t, usage, "a usage chunk the caller did not ask for")
				} else {
					assert.Equal(t, 1, usage)
					assert.Contains(t, string(chunks[len(chunks)-2]), `"choices":[],"usage":{`)
				}
			}
			res := s.Result()
			assert.Equal(t, "anthropic", res.ServedProvider)
			if err != nil {
				// The caller was told: the last payload is the error, and the
				// result records it.
				assert.Equal(t, string(chunks[len(chunks)-1]), res.StreamError)
				assert.Equal(t, "error", res.FinishReason)
			} else {
				assert.Empty(t, res.StreamError)
				assert.Positive(t, res.Usage.CompletionTokens, "the result has the usage, relayed or not")
			}
			golden(t, *updateAnthropic, dir, "result.json", resultJSON(t, res))

			// Events after the end change nothing.
			if done {
				d, err := s.Event(nil, []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"late"}}`),
					func([]byte) error { t.Fatal("emitted after the end"); return nil })
				assert.True(t, d)
				assert.NoError(t, err)
			}
		})
	}
}

// The stream joins back into the non-streaming answer's content: the text
// deltas and the tool arguments concatenate to the recorded values.
func TestAnthropicStreamReassembles(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(anthCorpus, "stream_tool_use", "stream.sse"))
	require.NoError(t, err)
	chunks, done, err := runStream(t, anthTestConnector().NewStream(anthTestCall()), raw)
	require.NoError(t, err)
	require.True(t, done)
	var text strings.Builder
	args := map[int]*strings.Builder{}
	ids := map[int]string{}
	var finish []string
	for _, ch := range chunks[:len(chunks)-1] {
		var c struct {
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(ch, &c))
		assert.Equal(t, "anthropic/claude-sonnet-4.5", c.Model, "a dated snapshot of the native id is the decided model")
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if args[tc.Index] == nil {
					args[tc.Index] = &strings.Builder{}
				}
				if tc.ID != "" {
					ids[tc.Index] = tc.ID
				}
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
		}
	}
	assert.Equal(t, "Okay, let's check the weather for San Francisco, CA:", text.String())
	require.Len(t, args, 2)
	assert.JSONEq(t, `{"location": "San Francisco, CA", "unit": "fahrenheit"}`, args[0].String())
	assert.JSONEq(t, `{}`, args[1].String())
	assert.Equal(t, map[int]string{0: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", 1: "toolu_01V2"}, ids)
	assert.Equal(t, []string{"tool_calls"}, finish)
}

func TestAnthropicStreamProtocolErrors(t *testing.T) {
	start := []byte(`{"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":1}}}`)
	cases := []struct {
		name   string
		events []string
	}{
		{"delta before start", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"not JSON", []string{string(start), `{"type":`}},
		{"second start", []string{string(start), string(start)}},
		{"arguments for a text block", []string{string(start), `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`}},
		{"thinking for a text block", []string{string(start), `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}`}},
		{"signature for a redacted block", []string{string(start), `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwK"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`}},
		{"thinking for no block", []string{string(start), `{"type":"content_block_delta","index":5,"delta":{"type":"thinking_delta","thinking":"x"}}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := anthTestConnector().NewStream(anthTestCall())
			var err error
			for _, e := range tc.events {
				if _, err = s.Event(nil, []byte(e), func([]byte) error { return nil }); err != nil {
					break
				}
			}
			assert.ErrorIs(t, err, ErrAnthropicStream)
		})
	}
}

// An emit failure (the client went away) ends the translation with that error.
func TestAnthropicStreamEmitError(t *testing.T) {
	gone := errors.New("client gone")
	s := anthTestConnector().NewStream(anthTestCall())
	_, err := s.Event([]byte("message_start"), []byte(`{"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-5"}}`),
		func([]byte) error { return gone })
	assert.ErrorIs(t, err, gone)
}

// The event name stands in for a data payload that has no type member.
func TestAnthropicStreamEventName(t *testing.T) {
	s := anthTestConnector().NewStream(anthTestCall())
	var got []string
	emit := func(p []byte) error { got = append(got, string(p)); return nil }
	_, err := s.Event([]byte("message_start"), []byte(`{"message":{"id":"m","model":"claude-sonnet-4-5"}}`), emit)
	require.NoError(t, err)
	done, err := s.Event([]byte("message_stop"), []byte(`{}`), emit)
	require.NoError(t, err)
	assert.True(t, done)
	assert.Len(t, got, 3) // role, usage, [DONE]
}

// A caller that did not ask for usage gets none; the result has it.
func TestAnthropicStreamUsageNotAsked(t *testing.T) {
	call := anthTestCall()
	call.UsageAdded = true
	s := anthTestConnector().NewStream(call)
	var got []string
	emit := func(p []byte) error { got = append(got, string(p)); return nil }
	_, err := s.Event(nil, []byte(`{"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":7,"output_tokens":1}}}`), emit)
	require.NoError(t, err)
	_, err = s.Event(nil, []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`), emit)
	require.NoError(t, err)
	done, err := s.Event(nil, []byte(`{"type":"message_stop"}`), emit)
	require.NoError(t, err)
	assert.True(t, done)
	require.Len(t, got, 3) // role, finish, [DONE]
	assert.Contains(t, got[1], `"finish_reason":"stop"`)
	assert.Equal(t, "[DONE]", got[2])
	assert.Equal(t, Usage{PromptTokens: 7, CompletionTokens: 3}, s.Result().Usage)
}

// FuzzAnthropicStream feeds any event stream to the translation, for a
// caller that asked for usage and one that did not (usageAdded): every chunk
// is JSON, and the second caller never gets a usage chunk.
func FuzzAnthropicStream(f *testing.F) {
	dirs, answers := anthAnswerCases(f, "stream.sse")
	for i, path := range answers {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, anthCaseCall(f, dirs[i]).UsageAdded)
	}
	c := anthTestConnector()
	f.Fuzz(func(t *testing.T, b []byte, usageAdded bool) {
		call := anthTestCall()
		call.UsageAdded = usageAdded
		s := c.NewStream(call)
		chunks, _, _ := runStream(t, s, b)
		for i, ch := range chunks {
			if !bytes.Equal(ch, doneData) && !json.Valid(ch) {
				t.Fatalf("chunk %d is not JSON: %s", i, ch)
			}
			if usageAdded && bytes.Contains(ch, []byte(`"choices":[],"usage"`)) {
				t.Fatalf("chunk %d is a usage chunk the caller did not ask for: %s", i, ch)
			}
		}
		_ = s.Result()
	})
}

// BenchmarkAnthropicStreamTextDelta measures one text delta, the event of
// which a stream is mostly made.
func BenchmarkAnthropicStreamTextDelta(b *testing.B) {
	s := anthTestConnector().NewStream(anthTestCall())
	emit := func([]byte) error { return nil }
	_, err := s.Event([]byte("message_start"), []byte(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`), emit)
	require.NoError(b, err)
	event := []byte("content_block_delta")
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, this is a typical \"delta\" of a few words.\n"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Event(event, data, emit); err != nil {
			b.Fatal(err)
		}
	}
}
