package connectors

import "testing"

// TestOpenRouterAnswerCorpus reads back testdata/connectors/openrouter: the
// provider the marketplace names on every answer and chunk, and its attempt
// report, are read into the result and never relayed.
func TestOpenRouterAnswerCorpus(t *testing.T) {
	runAnswerCorpus(t, "openrouter", []string{"provider", "openrouter_metadata"}, nil)
}
