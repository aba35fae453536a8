package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
)

// TestEchoModel: a translated answer names the request's model for the id
// sent or a dated snapshot of it; anything else, a longer id with the same
// prefix included, as the upstream reported it.
func TestEchoModel(t *testing.T) {
	call := func(decided, native string) *Call {
		return &Call{Plan: &compiler.Plan{DecidedModel: decided}, Outcome: &compiler.Outcome{NativeModel: native}}
	}
	gpt := call("openai/gpt-4o", "gpt-4o")
	claude := call("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5")
	tests := []struct {
		call               *Call
		provider, reported string
		want               string
	}{
		{gpt, "openai", "gpt-4o", "openai/gpt-4o"},
		{gpt, "openai", "", "openai/gpt-4o"},
		{gpt, "openai", "gpt-4o-2024-08-06", "openai/gpt-4o"},
		{gpt, "openai", "gpt-4o-mini", "gpt-4o-mini"},
		{gpt, "openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"},
		{gpt, "openai", "gpt-4o-2024-8-6", "gpt-4o-2024-8-6"},
		{gpt, "openai", "gpt-4o-audio-preview", "gpt-4o-audio-preview"},
		{claude, "anthropic", "claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4.5"},
		{claude, "anthropic", "claude-sonnet-4-5-2025092", "claude-sonnet-4-5-2025092"},
		{claude, "anthropic", "claude-sonnet-4-5-1", "claude-sonnet-4-5-1"},
		{nil, "openai", "gpt-4o", "gpt-4o"},
	}
	for _, tc := range tests {
		t.Run(tc.reported, func(t *testing.T) {
			require.Equal(t, tc.want, echoModel(tc.call, tc.reported))
		})
	}
}
