// Package converse holds the wire types of Amazon Bedrock's Converse API
// (POST /model/{modelId}/converse) and ConverseStream
// (POST /model/{modelId}/converse-stream) that sluice reads and writes: the
// request a chat-completions request is translated into, the answer, and
// the stream's events (each the JSON payload of one event-stream frame,
// named by its :event-type header). It imports nothing of sluice's.
//
// The shapes follow the Amazon Bedrock Runtime API reference (Converse,
// ConverseStream, ContentBlock, ToolConfiguration, TokenUsage) and the
// answers recorded in testdata/recorded/bedrock (converse-*).
package converse

import "encoding/json"

// --- Request -----------------------------------------------------------------

// Request is a Converse request body. The model is the path's, never the
// body's. Field order is the order on the wire.
type Request struct {
	Messages        []Message        `json:"messages"`
	System          []SystemBlock    `json:"system,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
}

// Message is one turn: role "user" or "assistant", a list of blocks.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// SystemBlock is a system prompt block (text).
type SystemBlock struct {
	Text string `json:"text"`
}

// ContentBlock is a union: exactly one member is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *Image            `json:"image,omitempty"`
	ToolUse          *ToolUse          `json:"toolUse,omitempty"`
	ToolResult       *ToolResult       `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
}

// Image is an image block: its format (png, jpeg, gif or webp) and its
// bytes, base64-encoded on the wire.
type Image struct {
	Format string      `json:"format"`
	Source ImageSource `json:"source"`
}

// ImageSource is where an image's bytes are: inline (base64).
type ImageSource struct {
	Bytes string `json:"bytes"`
}

// ToolUse is a tool call of the assistant: its id, the tool's name and
// the input object.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResult is the result of a tool call, in a user turn.
type ToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	// Status is "success" or "error"; omitted, the call succeeded.
	Status string `json:"status,omitempty"`
}

// ToolResultContent is a block of a tool result (text).
type ToolResultContent struct {
	Text string `json:"text"`
}

// ReasoningContent is a reasoning block: its text and signature, or the
// redacted content (base64).
type ReasoningContent struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitempty"`
	RedactedContent string         `json:"redactedContent,omitempty"`
}

// ReasoningText is a reasoning block's text and signature.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// InferenceConfig holds the sampling parameters every model takes.
type InferenceConfig struct {
	MaxTokens     int64           `json:"maxTokens,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"topP,omitempty"`
	StopSequences []string        `json:"stopSequences,omitempty"`
}

// ToolConfig declares the tools and how the model may use them.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is a tool definition (a union of which toolSpec is the one sluice
// writes).
type Tool struct {
	ToolSpec ToolSpec `json:"toolSpec"`
}

// ToolSpec is a function tool: its name, description and JSON Schema.
type ToolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"inputSchema"`
}

// InputSchema wraps a tool's JSON Schema.
type InputSchema struct {
	JSON json.RawMessage `json:"json"`
}

// ToolChoice is a union: auto ({}), any ({}) or a named tool.
type ToolChoice struct {
	Auto *struct{}  `json:"auto,omitempty"`
	Any  *struct{}  `json:"any,omitempty"`
	Tool *NamedTool `json:"tool,omitempty"`
}

// NamedTool names the tool the model must use.
type NamedTool struct {
	Name string `json:"name"`
}

// --- Answer ------------------------------------------------------------------

// Response is a Converse answer.
type Response struct {
	Output struct {
		Message *OutMessage `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage"`
}

// OutMessage is the assistant's message of an answer.
type OutMessage struct {
	Role    string     `json:"role"`
	Content []OutBlock `json:"content"`
}

// OutBlock is a content block of an answer: text, a tool call or
// reasoning; other members (citations, ...) are not read.
type OutBlock struct {
	Text             *string       `json:"text"`
	ToolUse          *ToolUse      `json:"toolUse"`
	ReasoningContent *OutReasoning `json:"reasoningContent"`
}

// OutReasoning is an answer's reasoning block.
type OutReasoning struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature"`
	} `json:"reasoningText"`
	RedactedContent *string `json:"redactedContent"`
}

// Usage is the token usage of an answer (and of a stream's metadata
// event). inputTokens counts the input not read from or written to the
// prompt cache; the cache's reads and writes are reported beside it.
type Usage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// --- Stream events (the payloads of ConverseStream's frames) -----------------

// Event names (the frames' :event-type header).
const (
	EventMessageStart      = "messageStart"
	EventContentBlockStart = "contentBlockStart"
	EventContentBlockDelta = "contentBlockDelta"
	EventContentBlockStop  = "contentBlockStop"
	EventMessageStop       = "messageStop"
	EventMetadata          = "metadata"
)

// BlockStart is a contentBlockStart event: a tool call's id and name.
type BlockStart struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
}

// MessageStop is a messageStop event.
type MessageStop struct {
	StopReason string `json:"stopReason"`
}

// Metadata is a metadata event: the usage.
type Metadata struct {
	Usage *Usage `json:"usage"`
}
