package connectors

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicegw/sluice/compiler"
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
