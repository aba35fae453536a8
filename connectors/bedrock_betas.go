package connectors

// bedrockBetas are the anthropic-beta flags Amazon Bedrock accepts in a
// Messages body's anthropic_beta list, each with the page of the Amazon
// Bedrock user guide that documents it. A flag outside the table is not
// sent (Bedrock refuses a body naming a flag it does not know, where
// Anthropic's own API ignores it).
var bedrockBetas = map[string]string{
	"computer-use-2024-10-22":          "AWS Bedrock user guide, Anthropic Claude Messages API, Request and Response (model-parameters-anthropic-claude-messages-request-response): anthropic_beta",
	"computer-use-2025-01-24":          "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): computer use beta",
	"token-efficient-tools-2025-02-19": "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): token-efficient tool use",
	"output-128k-2025-02-19":           "AWS Bedrock user guide, Anthropic Claude 3.7 Sonnet (model-parameters-anthropic-claude-37): outputs between 64K and 128K tokens in beta",
	"interleaved-thinking-2025-05-14":  "AWS Bedrock user guide, Extended thinking (claude-messages-extended-thinking): interleaved thinking",
	"context-1m-2025-08-07":            "AWS Bedrock user guide, Anthropic Claude Messages API, Request and Response: 1M-token context window (Claude Sonnet 4)",
}
