package gateway_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prompt caching on Bedrock end to end: a Messages request whose system
// prompt marks a cache breakpoint writes the prompt to Bedrock's cache the
// first time and reads it the second, streamed and not. The row counts the
// cache's tokens once — inside prompt_tokens, the reads in cached_tokens,
// whether the answer's usage or the stream's invocation metrics told them —
// and prices them at the catalog's amazon-bedrock cache prices (Claude
// Haiku 4.5: $1 in, $0.10 a cached read, $1.25 a cache write, $5 out per
// million).
func TestBedrockCacheUsage(t *testing.T) {
	h := newBedrockHarness(t, true)
	system := strings.Repeat("The incident runbook, section by section. ", 40)
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "messages", true: "messages stream"}[stream]
		t.Run(name, func(t *testing.T) {
			sys := name + ": " + system // a prefix of each case's own
			body := `{"model":"bedrock-haiku","max_tokens":100,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
				`,"system":[{"type":"text","text":` + jsonString(sys) + `,"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
			var wrote int64
			for turn, want := range []string{"write", "read"} {
				// Each turn's question differs (the cached system prompt
				// does not), so that sluice's own response cache does not
				// answer the second.
				resp, out := h.do("POST", "/v1/messages", secretChat, strings.Replace(body, `"hi"`, `"hi, turn `+want+`"`, 1), "Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
				require.Equal(t, 200, resp.StatusCode, "%s", out)
				u := answerUsage(t, out, stream)
				switch want {
				case "write":
					require.Positive(t, u.CacheCreation, "turn %d: %s", turn, out)
					assert.Zero(t, u.CacheRead)
					wrote = u.CacheCreation
				case "read":
					assert.Equal(t, wrote, u.CacheRead, "the second turn reads what the first wrote")
					assert.Zero(t, u.CacheCreation)
				}
				row := h.row(resp.Header.Get("X-Request-Id"))
				assert.Equal(t, "amazon-bedrock", row.ServedProvider)
				assert.Equal(t, u.Input+u.CacheRead+u.CacheCreation, row.PromptTokens, "the cache's tokens inside the prompt, once")
				assert.Equal(t, u.CacheRead, row.CachedTokens)
				assert.Equal(t, u.Output, row.CompletionTokens)
				assert.Equal(t, u.CacheRead > 0, row.CacheDiscountApplied)
				wantCost := (float64(u.Input)*1.0 + float64(u.CacheRead)*0.1 + float64(u.CacheCreation)*1.25 + float64(u.Output)*5.0) / 1e6
				assert.InDelta(t, wantCost, row.CostUSD, 1e-12, "turn %d (%s)", turn, want)
			}
		})
	}
}

// messagesUsage is a Messages answer's usage.
type messagesUsage struct {
	Input         int64 `json:"input_tokens"`
	Output        int64 `json:"output_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
}

// answerUsage reads the usage a Messages client was told: the message's,
// or a stream's message_start usage with message_delta's output count.
func answerUsage(t *testing.T, body []byte, stream bool) messagesUsage {
	t.Helper()
	var u messagesUsage
	if !stream {
		var m struct{ Usage messagesUsage }
		require.NoError(t, json.Unmarshal(body, &m), "%s", body)
		return m.Usage
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type    string
			Message struct{ Usage messagesUsage }
			Usage   *messagesUsage
		}
		require.NoError(t, json.Unmarshal(data, &ev), "%s", data)
		switch ev.Type {
		case "message_start":
			u = ev.Message.Usage
		case "message_delta":
			if ev.Usage != nil {
				u.Output = ev.Usage.Output
			}
		}
	}
	return u
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
