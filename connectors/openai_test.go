package connectors

import "testing"

// TestOpenAIAnswerCorpus reads back testdata/connectors/openai: answers are
// relayed unchanged, and the reported model maps back to a slug (the decided
// one for a dated snapshot of the model sent, "openai/<id>" otherwise).
func TestOpenAIAnswerCorpus(t *testing.T) {
	runAnswerCorpus(t, "openai", nil, nil)
}
