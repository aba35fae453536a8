package request

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
)

// inboundOutcome is a messages or embeddings case's outcome, as its .want
// file spells it.
func inboundOutcome(api string, raw []byte) string {
	parse := ParseEmbeddings
	if api == "messages" {
		parse = func(raw []byte) (*Request, *apierr.Error) { return ParseMessages(raw, nil) }
	}
	r, e := parse(raw)
	if e != nil {
		p := e.Param
		if p == "" {
			p = "-"
		}
		return fmt.Sprintf("error %d %s %s", e.Status(), e.Code, p)
	}
	if api == "messages" {
		// What a translation (onto an upstream without a Messages
		// endpoint) would refuse: the gateway leaves it to that upstream.
		u := "-"
		if untranslatable, _ := connectors.ParseMessages(r.Body); untranslatable != nil {
			u = untranslatable.Param
		}
		return fmt.Sprintf("ok model=%s stream=%t routing=%t untranslatable=%s", r.Model, r.Stream, r.Routing != nil, u)
	}
	return fmt.Sprintf("ok model=%s tokens=%d", r.Model, r.PromptTokens)
}

func TestInboundCorpus(t *testing.T) {
	for _, api := range []string{"messages", "embeddings"} {
		files, err := filepath.Glob(filepath.Join(corpus, api, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			t.Run(api+"/"+strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
				raw, err := os.ReadFile(f)
				require.NoError(t, err)
				want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".want")
				require.NoError(t, err)
				require.Equal(t, strings.TrimSpace(string(want)), inboundOutcome(api, raw))
			})
		}
	}
}

func TestMessagesKeepTheCallersSpellingAndBeta(t *testing.T) {
	r, e := ParseMessages([]byte(`{"model":" Claude-Sonnet-4-5 ","max_tokens":5,"messages":[{"role":"user","content":"x"}],"routing":{"fallbacks":[]}}`),
		[]string{"interleaved-thinking-2025-05-14"})
	require.Nil(t, e)
	require.Equal(t, "claude-sonnet-4-5", r.Model)
	require.Equal(t, "Claude-Sonnet-4-5", r.Inbound.Model)
	require.Equal(t, []string{"interleaved-thinking-2025-05-14"}, r.Inbound.Beta)
	require.NotContains(t, r.Body, "routing")
	require.Greater(t, r.PromptTokens, 0)
}

// FuzzParseInbound checks that every Messages or embeddings body is either
// accepted with a model and an inbound API, or refused with a 4xx status.
func FuzzParseInbound(f *testing.F) {
	for _, api := range []string{"messages", "embeddings"} {
		files, _ := filepath.Glob(filepath.Join(corpus, api, "*.json"))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			f.Add(api == "messages", b)
		}
	}
	f.Fuzz(func(t *testing.T, messages bool, raw []byte) {
		var r *Request
		var e *apierr.Error
		if messages {
			r, e = ParseMessages(raw, nil)
		} else {
			r, e = ParseEmbeddings(raw)
		}
		if e != nil {
			if e.Status() < 400 || e.Status() > 499 || e.Code == "" {
				t.Fatalf("refusal %d %q", e.Status(), e.Code)
			}
			return
		}
		if r.Model == "" || r.Inbound == nil || r.Body == nil {
			t.Fatalf("accepted without model or API: %+v", r)
		}
	})
}
