package connectors

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateChatErrors = flag.Bool("update-chat-errors", false, "rewrite the golden files of ChatError (testdata/connectors/chat_errors)")

// TestChatErrorCorpus: every recorded Anthropic error answer, retold for a
// chat-completions caller, matches its golden file in
// testdata/connectors/chat_errors/anthropic, and keeps the upstream's
// message and type as they are.
func TestChatErrorCorpus(t *testing.T) {
	recs, err := filepath.Glob("../testdata/errors/anthropic/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	out := filepath.Join("..", "testdata", "connectors", "chat_errors", "anthropic")
	if *updateChatErrors {
		require.NoError(t, os.MkdirAll(out, 0o755))
	}
	for _, p := range recs {
		name := filepath.Base(p)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			var rec struct {
				Status int             `json:"status"`
				Body   json.RawMessage `json:"body"`
			}
			require.NoError(t, json.Unmarshal(raw, &rec))
			got := ChatError(rec.Status, rec.Body)
			var in, told struct {
				Error struct {
					Message string          `json:"message"`
					Type    string          `json:"type"`
					Code    json.RawMessage `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body, &in))
			require.NoError(t, json.Unmarshal(got, &told))
			assert.Equal(t, in.Error.Message, told.Error.Message, "the upstream's message, unchanged")
			assert.Equal(t, in.Error.Type, told.Error.Type, "the upstream's type, unchanged")
			assert.Equal(t, "null", string(told.Error.Code), "Anthropic's errors carry no code")
			golden(t, *updateChatErrors, out, name, indentJSON(t, got))
		})
	}
}

// TestChatError: a code and a param the upstream gave are carried over as
// given; a body that is no error object becomes the message, typed by the
// status.
func TestChatError(t *testing.T) {
	for _, tc := range []struct {
		status     int
		body, want string
	}{
		{400, `{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`,
			`{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`},
		{429, `{"error":{"message":"slow down","code":429}}`, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":429}}`},
		{502, `upstream connect error`, `{"error":{"message":"upstream connect error","type":"api_error","param":null,"code":null}}`},
	} {
		assert.JSONEq(t, tc.want, string(ChatError(tc.status, []byte(tc.body))), tc.body)
	}
}
