package simulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const converseRecorded = "../testdata/recorded/bedrock/converse"

// converseRecordedEvents reads every recorded ConverseStream (the
// .chunks.txt lines and the .eventstream frames) into the member names
// each event type was seen with.
func converseRecordedEvents(t *testing.T) map[string][]string {
	t.Helper()
	seen := map[string][]string{}
	add := func(typ string, payload []byte) {
		for _, k := range keys(t, payload) {
			if !slices.Contains(seen[typ], k) {
				seen[typ] = append(seen[typ], k)
			}
		}
	}
	chunks, _ := filepath.Glob(filepath.Join(converseRecorded, "*.chunks.txt"))
	for _, p := range chunks {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			var ev map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				for typ, payload := range ev {
					add(typ, payload)
				}
			}
		}
	}
	live, err := os.ReadFile(filepath.Join(converseRecorded, "converse-stream-live-eu-claude-sonnet-4-6.eventstream"))
	require.NoError(t, err)
	for _, f := range converseDecode(t, live) {
		add(f.typ, f.payload)
	}
	return seen
}

type converseFrame struct {
	typ     string
	payload []byte
}

func converseDecode(t *testing.T, b []byte) []converseFrame {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	var out []converseFrame
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		require.NoError(t, err)
		typ := ""
		for _, h := range msg.Headers {
			if h.Name == ":event-type" {
				typ = h.Value.String()
			}
		}
		out = append(out, converseFrame{typ, bytes.Clone(msg.Payload)})
	}
	return out
}

// A signed Converse request is answered in the recorded answers' shape (the
// same members), a ConverseStream one in event-stream frames whose event
// types and members are the recorded streams'; a tool call is told as
// the recordings tell one; an unsigned or tampered request is refused as
// InvokeModel's are.
func TestConverseShapesMatchRecordings(t *testing.T) {
	s := bedrockTestServer(t)
	const path = "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse"
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"Say hi"}]}],"system":[{"text":"Be brief"}],"inferenceConfig":{"maxTokens":4000}}`)

	var want []string
	answers, _ := filepath.Glob(filepath.Join(converseRecorded, "converse-nonstream-*.json"))
	for _, p := range answers {
		if strings.HasSuffix(p, ".meta.json") {
			continue
		}
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, k := range keys(t, raw) {
			if !slices.Contains(want, k) {
				want = append(want, k)
			}
		}
	}
	slices.Sort(want)
	resp := bedrockPost(t, s, path, body, bedrockTestCreds, "", false)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	assert.Equal(t, want, keys(t, got))
	var a struct {
		StopReason string `json:"stopReason"`
		Usage      struct {
			In    int `json:"inputTokens"`
			Out   int `json:"outputTokens"`
			Total int `json:"totalTokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(got, &a))
	assert.Equal(t, "end_turn", a.StopReason)
	assert.Equal(t, a.Usage.In+a.Usage.Out, a.Usage.Total)
	assert.Positive(t, a.Usage.In)

	seen := converseRecordedEvents(t)
	resp = bedrockPost(t, s, path+"-stream", body, bedrockTestCreds, "", false)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/vnd.amazon.eventstream", resp.Header.Get("Content-Type"))
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	frames := converseDecode(t, raw)
	require.NotEmpty(t, frames)
	var types []string
	for _, f := range frames {
		rec, ok := seen[f.typ]
		require.True(t, ok, "event type %q is recorded", f.typ)
		for _, k := range keys(t, f.payload) {
			assert.Contains(t, rec, k, "%s member %q is recorded", f.typ, k)
		}
		types = append(types, f.typ)
	}
	assert.Equal(t, "messageStart", types[0])
	assert.Equal(t, []string{"messageStop", "metadata"}, types[len(types)-2:])

	bad := bedrockPost(t, s, path, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"max_tokens":4000}`), bedrockTestCreds, "", true)
	assert.Equal(t, http.StatusForbidden, bad.StatusCode, "a body changed after signing")
	assert.Equal(t, "InvalidSignatureException", bad.Header.Get("X-Amzn-Errortype"))
	unknown := bedrockPost(t, s, path, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"model":"m"}`), bedrockTestCreds, "", false)
	assert.Equal(t, http.StatusBadRequest, unknown.StatusCode, "Converse takes no model member")
	assert.Equal(t, "ValidationException", unknown.Header.Get("X-Amzn-Errortype"))
}
