package connectors

import "testing"

// TestVercelAnswerCorpus reads back testdata/connectors/vercel: the routing
// report (final provider, attempts) is read into the result and never
// relayed.
func TestVercelAnswerCorpus(t *testing.T) {
	runAnswerCorpus(t, "vercel", nil, []string{"provider_metadata"})
}
