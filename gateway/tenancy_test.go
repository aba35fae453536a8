package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/profiles"
)

// TestBudgetPricesEveryChoice: a chat request's n asks for n completions,
// each of which may run to the cap, so the reservation prices them all. On a
// 0.0004 USD budget at gpt-4o-mini's highest output price (0.6 USD/Mtok,
// ~666 tokens), n = 4 lowers the cap to a quarter of that; a cap that fits
// four times is sent as asked; an n no cap can pay for is refused with
// budget_exhausted before any upstream is contacted.
func TestBudgetPricesEveryChoice(t *testing.T) {
	h := newHarness(t, batchKey("monthly_budget_usd = 0.0004\n"), [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	capSent := func() int {
		t.Helper()
		sent := h.sent.take()
		require.Len(t, sent, 1)
		var b struct {
			MaxTokens int `json:"max_completion_tokens"` // as the OpenAI connector sends it
			N         int `json:"n"`
		}
		require.NoError(t, json.Unmarshal(sent[0].Body, &b))
		require.Equal(t, 4, b.N, "n is sent as asked")
		return b.MaxTokens
	}
	resp, b := h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"n":4,"max_tokens":4000`))
	require.Equal(t, 200, resp.StatusCode, string(b))
	c := capSent()
	require.Greater(t, c, 150)
	require.LessOrEqual(t, c, 166, "four completions of the cap must fit the budget (one would be ~666)")

	resp, b = h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"n":4,"max_tokens":50`))
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Equal(t, 50, capSent(), "four completions of 50 fit: sent as asked")

	for _, n := range []string{"100000", "1e9"} {
		resp, b = h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"n":`+n))
		require.Equal(t, 402, resp.StatusCode, "n = %s: %s", n, b)
		var e errBody
		require.NoError(t, json.Unmarshal(b, &e))
		require.Equal(t, "budget_exhausted", e.Error.Code)
		require.Empty(t, h.sent.take(), "n = %s: nothing is sent", n)
	}
}

// TestCallerNamesBounded: a model name is the caller's to write, as long as
// the body allows. One that is no route alias, catalog slug or id the
// catalog knows is labelled "other" in the metrics (a label is kept until
// the process ends), and the row, the log line and the span keep at most
// its first 256 bytes and a marker. Known names keep their own label: a
// catalog slug, and a provider's own id as the slug it stands for.
func TestCallerNamesBounded(t *testing.T) {
	h := newHarness(t)
	before := scrape(t, h.srv)
	var ids []string
	for i := range 3 {
		name := fmt.Sprintf("zz-%d/", i) + strings.Repeat("a", 8<<10)
		resp, b := h.post(secretChat, chatBody(name, ""))
		require.Equal(t, 404, resp.StatusCode, "%.200s", b)
		ids = append(ids, resp.Header.Get(gateway.HeaderRequestID))
	}
	// OpenAI's own id, which chat completions do not resolve (refused), is
	// labelled as the catalog slug it stands for.
	resp, b := h.post(secretBatch, chatBody("gpt-4o-mini", `,"user":"native-id"`))
	require.Equal(t, 404, resp.StatusCode, "%.300s", b)
	for i, id := range ids {
		row := h.row(id)
		require.Equal(t, fmt.Sprintf("zz-%d/", i)+strings.Repeat("a", gateway.MaxRecorded-5)+fmt.Sprintf("…(%d bytes)", 5+8<<10), row.DecidedModel)
	}
	after := scrape(t, h.srv)
	require.NotContains(t, string(after), strings.Repeat("a", 100), "a caller's name became a label")
	require.Less(t, len(after)-len(before), 16<<10, "three refused requests grew /metrics by %d bytes", len(after)-len(before))
	require.Contains(t, string(after), `gen_ai_server_request_duration_seconds_count{error_type="model_not_in_catalog",gen_ai_operation_name="chat",gen_ai_provider_name="",gen_ai_request_model="other"} 3`)
	require.Contains(t, string(after), `gen_ai_server_request_duration_seconds_count{error_type="model_not_in_catalog",gen_ai_operation_name="chat",gen_ai_provider_name="",gen_ai_request_model="openai/gpt-4o-mini"} 1`)
	require.NotContains(t, h.logs.String(), strings.Repeat("a", gateway.MaxRecorded+1), "a caller's name was logged whole")
}

// secretGlobex is a key of another org on the OpenAI upstream, which
// stores responses: what it may not reach is what k-batch stored there.
const secretGlobex = "sk-sluice-test-globex"

func globexKeyEdit() [2]string {
	k := "[[keys]]\nid = \"k-globex\"\nsha256 = \"" + profiles.HashSecret(secretGlobex) + "\"\norg = \"globex\"\nteam = \"ops\"\nproject = \"bots\"\nupstream = \"openai\"\n\n"
	return [2]string{"[[keys]]\nid = \"k-analyst\"", k + "[[keys]]\nid = \"k-analyst\""}
}

// TestStoredResponseHolderSurvivesRestart: which key stored a response
// outlives the process (data_dir's state file, without Redis). After a
// restart the owner still continues, reads and deletes it; another org's
// key on the same upstream is told it does not exist and nothing is sent;
// a response nobody recorded is refused the same way, never sent on the
// platform key. GET and DELETE each write a row.
func TestStoredResponseHolderSurvivesRestart(t *testing.T) {
	h := newHarness(t, globexKeyEdit())
	post := func(secret, body string) (*http.Response, []byte) {
		return h.do(http.MethodPost, "/v1/responses", secret, body, "Content-Type", "application/json")
	}
	resp, answer := post(secretBatch, `{"model": "openai/gpt-4o", "input": "Remember the number 7."}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	var first struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(answer, &first))
	require.NotEmpty(t, first.ID)

	// A new server over the same directory: nothing of the first in memory.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Close(ctx))
	srv, err := gateway.New(gateway.Options{ConfigDir: h.dir, Transport: h.sent,
		UpstreamURLs: map[string]string{"openai": h.sim.URL("openai"), "market": h.sim.URL("openrouter")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	h.srv, h.ts.Config.Handler = srv, srv.Handler()
	h.sent.take()

	continueAs := func(secret, id string) (*http.Response, []byte) {
		return post(secret, `{"model": "openai/gpt-4o", "input": "Which number?", "previous_response_id": "`+id+`"}`)
	}
	// k-chat's upstream is a marketplace, which stores no responses: it is
	// told so whatever the id.
	for _, c := range []struct {
		secret, id string
		status     int
		code       string
	}{
		{secretGlobex, first.ID, 404, "not_found"},
		{secretBatch, "resp_never_stored", 404, "not_found"},
		{secretGlobex, "resp_never_stored", 404, "not_found"},
		{secretChat, first.ID, 422, "previous_response_elsewhere"},
		{secretChat, "resp_never_stored", 422, "previous_response_elsewhere"},
	} {
		resp, answer = continueAs(c.secret, c.id)
		require.Equal(t, c.status, resp.StatusCode, "%s continuing %s: %s", c.secret, c.id, answer)
		require.Contains(t, string(answer), `"code":"`+c.code+`"`)
		require.Empty(t, h.sent.take(), "%s continuing %s: nothing is sent", c.secret, c.id)
		resp, _ = h.do(http.MethodGet, "/v1/responses/"+c.id, c.secret, "")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Empty(t, h.sent.take())
	}
	refused := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "responses_get", refused.API)
	require.Equal(t, 404, refused.Status)
	require.Equal(t, "not_found", refused.RefusedCode)
	require.Equal(t, "k-chat", refused.KeyID)
	require.Equal(t, 0, refused.Attempts)

	resp, answer = continueAs(secretBatch, first.ID)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the owner continues after the restart: %s", answer)
	sent := h.sent.take()
	require.Len(t, sent, 1)
	require.Contains(t, sent[0].URL, "/openai/v1/responses")

	resp, answer = h.do(http.MethodGet, "/v1/responses/"+first.ID, secretBatch, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	got := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "responses_get", got.API)
	require.Equal(t, 200, got.Status)
	require.Equal(t, "openai", got.Upstream)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, "k-batch", got.KeyID)
	require.Empty(t, got.RefusedCode)

	resp, answer = h.do(http.MethodDelete, "/v1/responses/"+first.ID, secretBatch, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	del := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, "responses_delete", del.API)
	require.Equal(t, 200, del.Status)
	require.Equal(t, "openai", del.Upstream)
	h.sent.take()

	// Deleted, and forgotten in the file too: after another restart the
	// owner is refused, and nothing is sent.
	require.NoError(t, srv.Close(ctx))
	srv2, err := gateway.New(gateway.Options{ConfigDir: h.dir, Transport: h.sent,
		UpstreamURLs: map[string]string{"openai": h.sim.URL("openai"), "market": h.sim.URL("openrouter")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv2.Close(context.Background()) })
	h.srv, h.ts.Config.Handler = srv2, srv2.Handler()
	resp, answer = continueAs(secretBatch, first.ID)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", answer)
	require.Empty(t, h.sent.take())
}
