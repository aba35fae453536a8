package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

// secretClaude is the key the inbound tests add for a Claude Code user: team
// ml, on the Anthropic upstream.
const secretClaude = "sk-sluice-test-claude"

// inboundCases holds the Messages and embeddings API's cases, one file a
// case (see inboundCase).
const inboundCases = "../testdata/inbound"

// inboundCase is one request through the gateway on the Messages or the
// embeddings API, against the simulator, and what must come of it.
type inboundCase struct {
	// API is "messages", "count_tokens", "embeddings", "responses" or "chat".
	API string `json:"api"`
	// Key is the demo key sending it: chat (team ml, the marketplace),
	// batch (team ml, OpenAI), finance (the Vercel AI Gateway), research,
	// or claude (team ml, Anthropic).
	Key string `json:"key"`
	// Auth is how the key is sent: "x-api-key" (the default on the
	// Messages API), "bearer" (elsewhere) or "none".
	Auth    string            `json:"auth"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`

	Status int `json:"status"`
	// Header holds answer headers that must have these values ("" for
	// absent).
	Header map[string]string `json:"header"`
	// Error is the error body's type and sluice code (either may be "").
	Error *struct {
		Type string `json:"type"`
		Code string `json:"code"`
	} `json:"error"`
	// Events are the stream's event names in order, consecutive repeats
	// folded into one.
	Events []string `json:"events"`
	// Contains are strings the answer must hold, Absent strings it must not.
	Contains []string `json:"contains"`
	Absent   []string `json:"absent"`
	// Sent are strings the upstream request's body must hold, NotSent
	// strings it must not; SentPath is the path it was sent to.
	Sent     []string `json:"sent"`
	NotSent  []string `json:"not_sent"`
	SentPath string   `json:"sent_path"`
	// Row holds the request-log columns that must have these values.
	Row map[string]any `json:"row"`
}

func inboundHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, claudeKeyEdit())
}

// claudeKeyEdit is the config edit that adds the claude key (secretClaude)
// to the demo configuration.
func claudeKeyEdit() [2]string {
	claude := "[[keys]]\nid = \"k-claude\"\nsha256 = \"" + profiles.HashSecret(secretClaude) + "\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"anthropic\"\n\n"
	return [2]string{"[[keys]]\nid = \"k-analyst\"", claude + "[[keys]]\nid = \"k-analyst\""}
}

var inboundSecrets = map[string]string{"chat": secretChat, "batch": secretBatch, "finance": secretFinance,
	"research": secretResearch, "claude": secretClaude}

// TestInboundCases runs every case of testdata/inbound: add a case there,
// not a test function.
func TestInboundCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(inboundCases, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	h := inboundHarness(t)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var c inboundCase
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&c))
			runInboundCase(t, h, c)
		})
	}
}

func runInboundCase(t *testing.T, h *harness, c inboundCase) {
	t.Helper()
	path := map[string]string{"messages": "/v1/messages", "count_tokens": "/v1/messages/count_tokens",
		"embeddings": "/v1/embeddings", "chat": "/v1/chat/completions", "responses": "/v1/responses"}[c.API]
	require.NotEmpty(t, path, "api %q", c.API)
	secret, ok := inboundSecrets[c.Key]
	require.True(t, ok, "key %q", c.Key)
	auth := c.Auth
	if auth == "" {
		auth = "bearer"
		if c.API == "messages" || c.API == "count_tokens" {
			auth = "x-api-key"
		}
	}
	hdr := []string{"Content-Type", "application/json"}
	switch auth {
	case "x-api-key":
		hdr = append(hdr, "x-api-key", secret)
	case "bearer":
		hdr = append(hdr, "Authorization", "Bearer "+secret)
	}
	for k, v := range c.Headers {
		hdr = append(hdr, k, v)
	}
	h.sent.take()
	resp, answer := h.do(http.MethodPost, path+c.Query, "", string(c.Body), hdr...)
	require.Equal(t, c.Status, resp.StatusCode, "%s", answer)
	text := string(answer)
	for k, v := range c.Header {
		assert.Equal(t, v, resp.Header.Get(k), "header %s", k)
	}
	for _, s := range c.Contains {
		assert.Contains(t, text, s)
	}
	for _, s := range c.Absent {
		assert.NotContains(t, text, s)
	}
	if c.Error != nil {
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type string `json:"type"`
				Code any    `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(answer, &e), text)
		if c.API == "messages" || c.API == "count_tokens" {
			assert.Equal(t, "error", e.Type, "the Messages API's error shape")
		}
		if c.Error.Type != "" {
			assert.Equal(t, c.Error.Type, e.Error.Type, text)
		}
		if c.Error.Code != "" {
			assert.Equal(t, c.Error.Code, e.Error.Code, text)
		}
	}
	if c.Events != nil {
		assert.Equal(t, c.Events, eventNames(answer), text)
	}
	sent := h.sent.take()
	if c.SentPath != "" || c.Sent != nil || c.NotSent != nil {
		require.NotEmpty(t, sent, "nothing was sent upstream")
		last := sent[len(sent)-1]
		if c.SentPath != "" {
			assert.True(t, strings.HasSuffix(strings.SplitN(last.URL, "?", 2)[0], c.SentPath), "sent to %s", last.URL)
		}
		for _, s := range c.Sent {
			assert.Contains(t, string(last.Body), s)
		}
		for _, s := range c.NotSent {
			assert.NotContains(t, string(last.Body), s)
		}
	}
	if c.Row != nil {
		row := h.row(resp.Header.Get("X-Request-Id"))
		b, err := json.Marshal(row)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		for k, want := range c.Row {
			require.Contains(t, got, k, "row column")
			assert.Equal(t, want, got[k], "row %s", k)
		}
	}
}

// eventNames lists a stream's event names, consecutive repeats folded.
func eventNames(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	return out
}

// A budget lowers the token cap of a Messages request passed natively, in
// the caller's own body, and a capped answer is not kept; an uncapped one is
// replayed to the same Messages request, and only to it.
func TestMessagesBudgetCapAndCache(t *testing.T) {
	claude := "[[keys]]\nid = \"k-claude\"\nsha256 = \"" + profiles.HashSecret(secretClaude) +
		"\"\norg = \"acme\"\nteam = \"ml\"\nproject = \"claude-code\"\nupstream = \"anthropic\"\nmonthly_budget_usd = 0.001\n\n"
	h := newHarness(t, [2]string{"[[keys]]\nid = \"k-analyst\"", claude + "[[keys]]\nid = \"k-analyst\""})
	send := func(maxTokens int) (*http.Response, []byte) {
		body := `{"model":"claude-haiku-4-5","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"Hello"}]}`
		return h.do(http.MethodPost, "/v1/messages", "", body, "Content-Type", "application/json", "x-api-key", secretClaude)
	}

	h.sent.take()
	resp, raw := send(100000)
	require.Equal(t, 200, resp.StatusCode, string(raw))
	sent := h.sent.take()
	require.Len(t, sent, 1)
	var native struct {
		MaxTokens int `json:"max_tokens"`
	}
	require.NoError(t, json.Unmarshal(sent[0].Body, &native))
	assert.Greater(t, native.MaxTokens, 0)
	assert.Less(t, native.MaxTokens, 1000, "the budget pays for at most ~200 output tokens at $5/M")
	resp, _ = send(100000)
	assert.Empty(t, resp.Header.Get("X-Sluice-Cache"), "a capped answer is not kept")

	resp, _ = send(20)
	require.Empty(t, resp.Header.Get("X-Sluice-Cache"))
	resp, raw = send(20)
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "hit", resp.Header.Get("X-Sluice-Cache"))
	assert.Contains(t, string(raw), `"type":"message"`, "the Messages answer is replayed")
	row := h.row(resp.Header.Get("X-Request-Id"))
	assert.True(t, row.CacheHit)
	assert.Equal(t, "messages", row.API)
}
