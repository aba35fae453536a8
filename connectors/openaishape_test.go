package connectors

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
)

var updateAnswers = flag.Bool("update-answers", false, "rewrite the golden files of the OpenAI-shaped connectors (testdata/connectors/{openai,openrouter,vercel})")

// answerCall is the call the OpenAI-shaped corpora are read back under:
// openai/gpt-4o decided, "gpt-4o" sent (only the direct connector uses it).
func answerCall() *Call {
	return &Call{
		Plan:    &compiler.Plan{DecidedModel: "openai/gpt-4o"},
		Outcome: &compiler.Outcome{NativeModel: "gpt-4o", Degraded: []string{}},
	}
}

// runAnswerCorpus reads back every case of testdata/connectors/<kind>, an
// OpenAI-shaped upstream's corpus: one directory per case holding
// answer.json (a non-streaming answer; golden relayed.json, or error.txt when
// the connector refuses it) or stream.sse (an event stream; golden
// chunks.jsonl; with a file usage-added, the caller did not ask for the
// usage the connector asked for) — or recorded.txt naming an answer under
// testdata/recorded that the live upstream sent — and result.json, what the
// connector read back. No relayed answer or chunk may keep a top-level member named in
// upstreamOnly, nor a member of a choice's message or delta named in
// choiceOnly: those are the upstream's routing reports, which never reach
// sluice's callers.
func runAnswerCorpus(t *testing.T, kind string, upstreamOnly, choiceOnly []string) {
	c, err := New(kind)
	require.NoError(t, err)
	corpus := filepath.Join("../testdata/connectors", kind)
	noUpstreamMembers := func(t *testing.T, what string, b []byte) {
		t.Helper()
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &top), "%s is not a JSON object: %s", what, b)
		for _, n := range upstreamOnly {
			assert.NotContains(t, top, n, "%s keeps the upstream's %q: %s", what, n, b)
		}
		var choices []map[string]map[string]json.RawMessage
		_ = json.Unmarshal(top["choices"], &choices)
		for _, c := range choices {
			for _, part := range []string{"message", "delta"} {
				for _, n := range choiceOnly {
					assert.NotContains(t, c[part], n, "%s keeps the upstream's %q in its choice's %s: %s", what, n, part, b)
				}
			}
		}
	}
	for _, dir := range caseDirs(t, corpus, "result.json") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			answer, stream := filepath.Join(dir, "answer.json"), filepath.Join(dir, "stream.sse")
			if ref, err := os.ReadFile(filepath.Join(dir, "recorded.txt")); err == nil {
				rec := filepath.Join("../testdata/recorded", strings.TrimSpace(string(ref)))
				answer, stream = rec, rec
			}
			if raw, err := os.ReadFile(answer); err == nil && strings.HasSuffix(answer, ".json") {
				relayed, res, err := c.Response(answerCall(), raw)
				if err != nil {
					golden(t, *updateAnswers, dir, "relayed.json", nil)
					golden(t, *updateAnswers, dir, "error.txt", []byte(err.Error()+"\n"))
					return
				}
				noUpstreamMembers(t, "the relayed answer", relayed)
				golden(t, *updateAnswers, dir, "relayed.json", append(bytes.Clone(relayed), '\n'))
				golden(t, *updateAnswers, dir, "error.txt", nil)
				golden(t, *updateAnswers, dir, "result.json", resultJSON(t, res))
				return
			}
			raw, err := os.ReadFile(stream)
			require.NoError(t, err, "a case holds answer.json, stream.sse or recorded.txt")
			// A case holding usage-added is a stream whose caller did not ask
			// for usage the connector asked for: none may reach the caller.
			call := answerCall()
			_, err = os.Stat(filepath.Join(dir, "usage-added"))
			call.UsageAdded = err == nil
			s := c.NewStream(call)
			chunks, done, err := runStream(t, s, raw)
			if strings.Contains(filepath.Base(dir), "error") {
				require.ErrorIs(t, err, ErrInBandError, "a stream ends with the upstream's error event")
			} else {
				require.NoError(t, err)
			}
			var lines bytes.Buffer
			for i, ch := range chunks {
				if !bytes.Equal(ch, doneData) {
					noUpstreamMembers(t, "chunk "+string(rune('0'+i)), ch)
					if call.UsageAdded {
						var top map[string]json.RawMessage
						require.NoError(t, json.Unmarshal(ch, &top))
						assert.True(t, top["usage"] == nil || string(top["usage"]) == "null", "usage the caller did not ask for is relayed: %s", ch)
					}
				}
				lines.Write(ch)
				lines.WriteByte('\n')
			}
			golden(t, *updateAnswers, dir, "chunks.jsonl", lines.Bytes())
			res := s.Result()
			if strings.Contains(filepath.Base(dir), "error") {
				assert.False(t, done, "an in-band error ends the stream without [DONE]")
				require.NotEmpty(t, chunks)
				assert.Equal(t, string(chunks[len(chunks)-1]), res.StreamError, "the result records the error event as relayed")
			} else {
				assert.True(t, done)
				assert.Empty(t, res.StreamError)
			}
			golden(t, *updateAnswers, dir, "result.json", resultJSON(t, res))
		})
	}
}
