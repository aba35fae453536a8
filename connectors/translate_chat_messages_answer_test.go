package connectors

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnthropicResponseCorpus(t *testing.T) {
	c := anthTestConnector()
	dirs, answers := anthAnswerCases(t, "response.json")
	for i, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			call := anthCaseCall(t, dir)
			raw, err := os.ReadFile(answers[i])
			require.NoError(t, err)
			out, res, err := c.Response(call, raw)
			if err != nil {
				var se *StreamError
				require.True(t, errors.As(err, &se), "error is not a *StreamError: %v", err)
				golden(t, *updateAnthropic, dir, "error.txt", []byte(err.Error()+"\n"))
				golden(t, *updateAnthropic, dir, "openai.json", nil)
				return
			}
			assert.Equal(t, "anthropic", res.ServedProvider)
			var head struct {
				Object  string `json:"object"`
				Created int64  `json:"created"`
				Model   string `json:"model"`
			}
			require.NoError(t, json.Unmarshal(out, &head))
			assert.Equal(t, "chat.completion", head.Object)
			assert.Equal(t, anthCreated.Unix(), head.Created)
			assert.Equal(t, echoModel(call, res.ServedModel), head.Model, "the answer names the model asked for when the one sent served")
			// The answer reads back the same through the OpenAI-shaped reader.
			var back Result
			require.NoError(t, readHead(out, &back))
			assert.Equal(t, res.Usage, back.Usage)
			assert.Equal(t, res.FinishReason, back.FinishReason)
			golden(t, *updateAnthropic, dir, "openai.json", indentJSON(t, out))
			golden(t, *updateAnthropic, dir, "result.json", resultJSON(t, res))
			golden(t, *updateAnthropic, dir, "error.txt", nil)
		})
	}
}

func TestAnthropicResponseErrors(t *testing.T) {
	c := anthTestConnector()
	for _, body := range []string{`not json`, `{"type":"completion"}`, `[]`} {
		_, res, err := c.Response(anthTestCall(), []byte(body))
		assert.Error(t, err, body)
		assert.Equal(t, "anthropic", res.ServedProvider)
	}
	_, _, err := c.Response(anthTestCall(), []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
	var se *StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, StreamError{Type: "rate_limit_error", Message: "slow down", Status: 429}, *se)
}

// The production clock stamps answers with the current time.
func TestAnthropicResponseCreatedIsNow(t *testing.T) {
	before := time.Now().Unix()
	out, _, err := newAnthropic().Response(anthTestCall(), []byte(`{"id":"m","type":"message","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	require.NoError(t, err)
	var head struct{ Created int64 }
	require.NoError(t, json.Unmarshal(out, &head))
	assert.GreaterOrEqual(t, head.Created, before)
	assert.LessOrEqual(t, head.Created, time.Now().Unix())
}

func TestAnthropicFinishReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter", "something_new": "stop",
	} {
		assert.Equal(t, want, anthFinish(&stop), stop)
	}
	assert.Equal(t, "stop", anthFinish(nil))
}
