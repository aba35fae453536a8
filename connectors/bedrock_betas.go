package connectors

// bedrockBetas are the anthropic-beta flags Amazon Bedrock accepts in a
// Messages body's anthropic_beta list, each with its source. Bedrock
// refuses a body naming a flag it does not know (400 "invalid beta flag"),
// where Anthropic's own API ignores it: Claude Code's own flags
// (claude-code-20250219, advanced-tool-use-2025-11-20, mcp-servers-2025-12-04,
// extended-cache-ttl-2025-04-11) are refused there, as BerriAI/litellm PR
// #19373 and anthropics/claude-code issue #56595 report, so a flag outside
// the table is not sent. Acceptance also varies by model (Claude Opus 4.7
// takes interleaved thinking alone, anthropics/claude-code issue #49370);
// the table is the union the user guide documents.
var bedrockBetas = map[string]string{
	"computer-use-2024-10-22":          "AWS Bedrock user guide, Anthropic Claude Messages API, Request and Response (model-parameters-anthropic-claude-messages-request-response): anthropic_beta",
	"computer-use-2025-01-24":          "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): computer use",
	"token-efficient-tools-2025-02-19": "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): token-efficient tool use",
	"output-128k-2025-02-19":           "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): outputs between 64K and 128K tokens",
	"interleaved-thinking-2025-05-14":  "AWS Bedrock user guide, Extended thinking (claude-messages-extended-thinking): interleaved thinking",
	"dev-full-thinking-2025-05-14":     "AWS Bedrock user guide, Extended thinking (claude-messages-extended-thinking), as listed in BerriAI/litellm PR #19877",
	"context-1m-2025-08-07":            "AWS Bedrock user guide, Anthropic Claude Messages API: 1M-token context window, as listed in BerriAI/litellm PR #19877",
	"context-management-2025-06-27":    "AWS Bedrock user guide, Anthropic Claude Messages API: context management, as listed in BerriAI/litellm PR #19877",
	"effort-2025-11-24":                "AWS Bedrock user guide, Anthropic Claude Messages API: effort, as listed in BerriAI/litellm PR #19877",
	"tool-search-tool-2025-10-19":      "AWS Bedrock user guide, Anthropic Claude Messages API: tool search, as listed in BerriAI/litellm PR #19877",
	"tool-examples-2025-10-29":         "AWS Bedrock user guide, Anthropic Claude Messages API: tool use examples, as listed in BerriAI/litellm PR #19877",
}
