package connectors

import (
	"flag"
	"net/http"
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
// stream.sse (a recorded event stream) and chunks.jsonl; answers and streams
// also record result.json, what the connector read back.
const anthCorpus = "../testdata/connectors/anthropic"

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
