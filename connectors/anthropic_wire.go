package connectors

import (
	"encoding/json"
)

// Wire types of the direct Anthropic connector: the Messages API's request,
// response and stream events, and the few OpenAI chat-completions shapes the
// connector decodes from requests or writes into answers. The translation
// itself lives in anthropic.go.

// anthropicVersion is the Messages API version the connector speaks.
const anthropicVersion = "2023-06-01"

// anthDefaultMaxTokens is sent when the request sets no limit: the Messages
// API requires max_tokens, the chat-completions API does not.
const anthDefaultMaxTokens = 4096

// --- Messages API request ----------------------------------------------------

// anthRequest is a Messages API request body. Field order is the order on the
// wire, so the same request always compiles to the same bytes.
type anthRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int64           `json:"max_tokens"`
	System        anthContent     `json:"system,omitempty"`
	Messages      []anthMessage   `json:"messages"`
	Metadata      *anthMetadata   `json:"metadata,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"top_p,omitempty"`
	TopK          json.RawMessage `json:"top_k,omitempty"`
	Tools         []anthTool      `json:"tools,omitempty"`
	ToolChoice    *anthToolChoice `json:"tool_choice,omitempty"`
}

// anthMessage is one turn; roles alternate (consecutive same-role turns are
// merged before sending).
type anthMessage struct {
	Role    string      `json:"role"`
	Content anthContent `json:"content"`
}

// anthContent is a list of content blocks. It encodes as a plain string when
// it is one text block without a cache marker (the Messages API accepts both
// forms; the string is what a hand-written request would send).
type anthContent []anthBlock

// MarshalJSON implements [json.Marshaler].
func (c anthContent) MarshalJSON() ([]byte, error) {
	if len(c) == 1 && c[0].Type == "text" && len(c[0].CacheControl) == 0 {
		return anthMarshal(c[0].Text)
	}
	return anthMarshal([]anthBlock(c))
}

// anthBlock is a content block of any type: text, image, tool_use or
// tool_result. Members not used by a type stay empty and are omitted.
type anthBlock struct {
	Type      string           `json:"type"`
	Text      string           `json:"text,omitempty"`
	Source    *anthImageSource `json:"source,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     json.RawMessage  `json:"input,omitempty"`
	ToolUseID string           `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: a JSON string or an array of text
	// blocks.
	Content      json.RawMessage `json:"content,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// anthImageSource is an image block's source: base64 data or a URL.
type anthImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// anthMetadata is the request's metadata object.
type anthMetadata struct {
	UserID string `json:"user_id"`
}

// anthTool is a client tool definition.
type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// anthToolChoice is how the model may use the tools: auto, any, tool (with a
// name) or none.
type anthToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// --- Messages API response ---------------------------------------------------

// anthResponse is a Messages API message (a non-streaming answer, or the
// skeleton in a stream's message_start event).
type anthResponse struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    []anthRespBlock `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      anthUsage       `json:"usage"`
	Error      *anthError      `json:"error"`
}

// anthRespBlock is a content block of an answer. Types other than text and
// tool_use (thinking, server tool blocks, ...) are skipped.
type anthRespBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthUsage is the token usage of an answer. Pointers tell a member that is
// absent from one that is zero (a stream's message_delta repeats only some).
type anthUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// anthError is the error object of an error answer or an error event.
type anthError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// --- Messages API stream events ----------------------------------------------

// anthStartEvent is a message_start event.
type anthStartEvent struct {
	Message anthResponse `json:"message"`
}

// anthBlockStartEvent is a content_block_start event.
type anthBlockStartEvent struct {
	Index        int           `json:"index"`
	ContentBlock anthRespBlock `json:"content_block"`
}

// anthMessageDeltaEvent is a message_delta event: the stop reason and the
// cumulative usage.
type anthMessageDeltaEvent struct {
	Delta struct {
		StopReason *string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthUsage `json:"usage"`
}

// anthErrorEvent is an error event (and the body of an error answer).
type anthErrorEvent struct {
	Error anthError `json:"error"`
}

// --- OpenAI chat-completions shapes ------------------------------------------

// oaiMessage is one message of a chat-completions request.
type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

// oaiPart is one content part of a message.
type oaiPart struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Refusal      *string         `json:"refusal"`
	ImageURL     json.RawMessage `json:"image_url"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// oaiImageURL is an image_url part's object form.
type oaiImageURL struct {
	URL string `json:"url"`
}

// oaiToolCall is an assistant message's tool call.
type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// oaiTool is a tool definition of a request.
type oaiTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// oaiNamedToolChoice is the object form of tool_choice.
type oaiNamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// oaiCompletion is a chat.completion answer.
type oaiCompletion struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   oaiUsage    `json:"usage"`
}

// oaiChoice is a completion's only choice.
type oaiChoice struct {
	Index        int             `json:"index"`
	Message      oaiOutMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// oaiOutMessage is the answer's message. Content is null when the answer is
// only tool calls, as in the chat-completions API.
type oaiOutMessage struct {
	Role      string           `json:"role"`
	Content   *string          `json:"content"`
	Refusal   *string          `json:"refusal"`
	ToolCalls []oaiOutToolCall `json:"tool_calls,omitempty"`
}

// oaiOutToolCall is a tool call of the answer.
type oaiOutToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// oaiUsage is a completion's usage.
type oaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

var anthNull = json.RawMessage("null")
