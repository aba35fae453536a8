package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stored response is a placement restriction: its continuation, GET and
// DELETE go to the upstream that stored it, for the key that stored it,
// and nowhere else.
func TestStoredResponsesPlacedWhereStored(t *testing.T) {
	h := inboundHarness(t)
	post := func(secret, body string) (*http.Response, []byte) {
		return h.do(http.MethodPost, "/v1/responses", secret, body, "Content-Type", "application/json")
	}

	// The batch key's upstream is OpenAI, which stores responses.
	resp, answer := post(secretBatch, `{"model": "openai/gpt-4o", "input": "Remember the number 7."}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	var first struct {
		ID    string `json:"id"`
		Store bool   `json:"store"`
	}
	require.NoError(t, json.Unmarshal(answer, &first))
	require.NotEmpty(t, first.ID)
	require.True(t, first.Store, "OpenAI stores a response by default")
	h.sent.take()

	// The continuation goes to OpenAI with the id as it was sent.
	resp, answer = post(secretBatch, `{"model": "openai/gpt-4o", "input": "Which number?", "previous_response_id": "`+first.ID+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	sent := h.sent.take()
	require.Len(t, sent, 1, "one attempt, no failover")
	assert.Contains(t, sent[0].URL, "/openai/v1/responses")
	assert.Contains(t, string(sent[0].Body), first.ID)
	row := h.row(resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "responses", row.API)
	assert.Equal(t, "openai", row.Upstream)

	// Another key cannot continue, read or delete it. Its upstream (a
	// marketplace) stores no responses, which is all it is told, whatever
	// the id (TestStoredResponseHolderSurvivesRestart has a key on OpenAI).
	resp, answer = post(secretChat, `{"model": "openai/gpt-4o", "input": "Which number?", "previous_response_id": "`+first.ID+`"}`)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s", answer)
	assert.Contains(t, string(answer), `"code":"previous_response_elsewhere"`)
	assert.Empty(t, h.sent.take(), "nothing is sent for another key's response")
	resp, _ = h.do(http.MethodGet, "/v1/responses/"+first.ID, secretChat, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// GET and DELETE pass to the holder.
	resp, answer = h.do(http.MethodGet, "/v1/responses/"+first.ID, secretBatch, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	assert.Contains(t, string(answer), first.ID)
	assert.Equal(t, "openai", resp.Header.Get("X-Sluice-Upstream"))
	resp, answer = h.do(http.MethodDelete, "/v1/responses/"+first.ID, secretBatch, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	assert.Contains(t, string(answer), `"deleted"`)
	resp, _ = h.do(http.MethodGet, "/v1/responses/"+first.ID, secretBatch, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "forgotten once deleted")

	// store false: nothing recorded, nothing to continue through sluice.
	resp, answer = post(secretBatch, `{"model": "openai/gpt-4o", "input": "x", "store": false}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	var unstored struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(answer, &unstored))
	resp, _ = h.do(http.MethodGet, "/v1/responses/"+unstored.ID, secretBatch, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A continuation of a response sluice has no record of is refused as
	// another key's is, and sent nowhere: the upstream would continue any
	// tenant's response on the platform key.
	h.sent.take()
	resp, answer = post(secretBatch, `{"model": "openai/gpt-4o", "input": "x", "previous_response_id": "resp_unknown"}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", answer)
	assert.Contains(t, string(answer), `"code":"not_found"`)
	assert.Empty(t, h.sent.take())
}
