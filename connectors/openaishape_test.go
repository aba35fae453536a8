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
// the connector refuses it) or stream.sse (a recorded event stream; golden
// chunks.jsonl), and result.json, what the connector read back. No relayed
// answer or chunk may keep a top-level member named in upstreamOnly: those
// are the upstream's routing reports, which never reach sluice's callers.
func runAnswerCorpus(t *testing.T, kind string, upstreamOnly ...string) {
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
	}
	for _, dir := range caseDirs(t, corpus, "*") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if raw, err := os.ReadFile(filepath.Join(dir, "answer.json")); err == nil {
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
			raw, err := os.ReadFile(filepath.Join(dir, "stream.sse"))
			require.NoError(t, err, "a case holds answer.json or stream.sse")
			s := c.NewStream(answerCall())
			chunks, done, err := runStream(t, s, raw)
			require.NoError(t, err)
			var lines bytes.Buffer
			for i, ch := range chunks {
				if !bytes.Equal(ch, doneData) {
					noUpstreamMembers(t, "chunk "+string(rune('0'+i)), ch)
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
