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

// TestAppendStripped: members are removed by exact name at the top level
// only, the rest is copied byte for byte and in order; anything the walk
// cannot take exactly is refused (and left to encoding/json by stripMembers).
func TestAppendStripped(t *testing.T) {
	names := []string{"provider", "openrouter_metadata"}
	tests := []struct {
		name, in, want string
		refused        bool
	}{
		{name: "first member", in: `{"provider":"A","id":"x"}`, want: `{"id":"x"}`},
		{name: "last member", in: `{"id":"x","provider":"A"}`, want: `{"id":"x"}`},
		{name: "middle member, order kept", in: `{"z":1,"provider":"A","a":[1,{"b":null}]}`, want: `{"z":1,"a":[1,{"b":null}]}`},
		{name: "every member", in: `{"provider":"A","openrouter_metadata":{"attempt":2}}`, want: `{}`},
		{name: "nested names stay", in: `{"choices":[{"provider":"A"}],"m":{"openrouter_metadata":1}}`, want: `{"choices":[{"provider":"A"}],"m":{"openrouter_metadata":1}}`},
		{name: "a value that spells a name stays", in: `{"content":"\"provider\""}`, want: `{"content":"\"provider\""}`},
		{name: "repeated name, all removed", in: `{"provider":"A","id":1,"provider":"B"}`, want: `{"id":1}`},
		{name: "other case stays", in: `{"Provider":"A"}`, want: `{"Provider":"A"}`},
		{name: "whitespace between members dropped, inside values kept", in: " {\n \"id\" : \"x\" ,\n \"provider\" : \"A\",\n \"m\": [1, 2]\n}\n", want: `{"id" : "x","m": [1, 2]}`},
		{name: "empty object", in: ` {} `, want: `{}`},
		{name: "escaped key refused", in: `{"provid\u0065r":"A"}`, refused: true},
		{name: "not an object", in: `["provider"]`, refused: true},
		{name: "truncated", in: `{"provider":"A","id":`, refused: true},
		{name: "trailing garbage", in: `{"provider":"A"} x`, refused: true},
		{name: "extra closing brace", in: `{"provider":null}}`, refused: true},
		{name: "missing comma", in: `{"provider":"A" "id":1}`, refused: true},
		{name: "invalid UTF-8", in: "{\"id\":\"\xff\",\"provider\":\"A\"}", refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("prefix:")
			got, ok := appendStripped(dst, []byte(tc.in), names)
			require.Equal(t, !tc.refused, ok)
			if tc.refused {
				require.Equal(t, "prefix:", string(got), "dst unchanged")
				return
			}
			require.Equal(t, "prefix:"+tc.want, string(got))
		})
	}
}

// stripReference is what stripping means: decode, delete the names, compare
// as values.
func stripReference(t testing.TB, b []byte, names []string) (map[string]any, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return nil, false
	}
	for _, n := range names {
		delete(m, n)
	}
	return m, true
}

// FuzzStripMembers holds the byte-level strip to the meaning of stripping:
// what it returns decodes to the input's members without the names, and it
// only accepts valid JSON. Seeded from the OpenAI-shaped corpora.
func FuzzStripMembers(f *testing.F) {
	for _, kind := range []string{"openai", "openrouter", "vercel"} {
		for _, dir := range caseDirs(f, filepath.Join("../testdata/connectors", kind), "*") {
			if b, err := os.ReadFile(filepath.Join(dir, "answer.json")); err == nil {
				f.Add(b)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "stream.sse")); err == nil {
				for _, line := range bytes.Split(b, []byte("\n")) {
					if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
						f.Add(data)
					}
				}
			}
		}
	}
	names := []string{"provider", "openrouter_metadata", "providerMetadata"}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := appendStripped(nil, b, names)
		want, valid := stripReference(t, b, names)
		if ok {
			require.True(t, json.Valid(b), "accepted invalid JSON: %q", b)
			require.True(t, valid, "accepted a non-object: %q", b)
			have, valid := stripReference(t, got, nil)
			require.True(t, valid, "produced invalid JSON from %q: %q", b, got)
			require.Equal(t, want, have, "from %q", b)
		}
		// stripMembers, whichever path it takes, leaves no name at the top.
		out := stripMembers(b, names...)
		if valid {
			have, ok := stripReference(t, out, nil)
			require.True(t, ok, "stripMembers produced invalid JSON from %q: %q", b, out)
			require.Equal(t, want, have, "stripMembers of %q", b)
		} else {
			require.Equal(t, b, out, "an input that is not an object is returned as it was")
		}
	})
}
