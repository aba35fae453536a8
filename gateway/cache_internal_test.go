package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/connectors"
)

// TestCachedAnswerEncoding: an answer reads back as stored, its body the
// stored value's tail (not a copy); an entry in the JSON form of the
// version before still reads; a truncated or foreign value reads as a
// miss.
func TestCachedAnswerEncoding(t *testing.T) {
	a := &cachedAnswer{body: []byte(`{"id":"x","choices":[]}`), servedModel: "openai/gpt-4o", servedProvider: "azure", upstream: "market",
		usage: connectors.Usage{PromptTokens: 42, CompletionTokens: 12, CachedTokens: 7, CacheWriteTokens: 3, ReasoningTokens: 1 << 40}}
	enc := encodeCached(*a)
	got := decodeCached(enc)
	require.Equal(t, a, got)
	require.Same(t, &enc[len(enc)-len(a.body)], &got.body[0], "the body is read in place")
	old := []byte(`{"b":{"id":"x","choices":[]},"m":"openai/gpt-4o","p":"azure","u":"market","usage":{"prompt_tokens":42,"completion_tokens":12,"cached_tokens":7,"cache_write_tokens":3,"reasoning_tokens":1099511627776}}`)
	require.Equal(t, a, decodeCached(old))
	for _, bad := range [][]byte{nil, {}, {cachedFormat}, enc[:8], {2, 0, 0}, []byte("not an answer")} {
		require.Nil(t, decodeCached(bad), "%q", bad)
	}
}
