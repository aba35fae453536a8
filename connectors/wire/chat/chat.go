// Package chat holds the wire types of the OpenAI chat-completions API
// (POST /v1/chat/completions) that sluice decodes and writes: the request
// members a translation reads (messages, content parts, tool calls, tools,
// tool_choice) and the chat.completion answer it writes back, with the
// reasoning members the marketplaces (OpenRouter, the Vercel AI Gateway)
// add. It imports nothing of sluice's, so that every translation to and from
// the API shares one definition.
//
// The OpenAI-shaped upstreams relay these bodies as they are; what the
// connectors read back from their answers is scanned, not decoded into
// these types.
package chat

import "encoding/json"

// Message is one message of a chat-completions request.
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role string `json:"role"`
	// Content is a string, an array of [Part], or null.
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall `json:"tool_calls"`
	// ToolCallID is a tool message's call.
	ToolCallID *string `json:"tool_call_id"`
	// Refusal is an assistant message's refusal, replayed from an answer
	// the model declined (its content is then null).
	Refusal *string `json:"refusal"`
	// ReasoningDetails is an assistant message's reasoning, replayed from
	// an answer (or joined from a stream's deltas) as the marketplaces
	// write it: an array of reasoning.text and reasoning.encrypted entries.
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
}

// Part is one content part of a message: text, refusal or image_url, with
// the cache marker the marketplaces accept on a part.
type Part struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Refusal      *string         `json:"refusal"`
	ImageURL     json.RawMessage `json:"image_url"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// ImageURL is an image_url part's object form.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is an assistant message's tool call, as a request replays it.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// NamedToolChoice is the object form of tool_choice.
type NamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// Completion is a chat.completion answer.
type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// Choice is a completion's only choice.
type Choice struct {
	Index        int             `json:"index"`
	Message      OutMessage      `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// OutMessage is the answer's message. Content is null when the answer is
// only tool calls, as in the chat-completions API. Reasoning and
// ReasoningDetails are the members the marketplaces add for a model's
// reasoning (OpenRouter and the Vercel AI Gateway name them so): both are
// present when the answer reasoned, absent otherwise.
type OutMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
	// Reasoning is the reasoning text, every reasoning.text entry's text
	// joined.
	Reasoning        *string           `json:"reasoning,omitempty"`
	ReasoningDetails []ReasoningDetail `json:"reasoning_details,omitempty"`
	ToolCalls        []OutToolCall     `json:"tool_calls,omitempty"`
}

// ReasoningDetail is one entry of reasoning_details, in the marketplaces'
// member order: a reasoning.text entry has text and signature, a
// reasoning.encrypted entry data. Index is the entry's place among the
// answer's reasoning entries, which the deltas of a stream name too.
type ReasoningDetail struct {
	Type      string  `json:"type"`
	Text      *string `json:"text,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
	Format    string  `json:"format"`
	Index     int     `json:"index"`
}

// OutToolCall is a tool call the connectors write: one of an answer, or
// one of an assistant message a translated Messages request replays.
type OutToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Usage is a completion's usage.
type Usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
		// CacheWriteTokens is written (as OpenRouter does) only when a
		// translated answer created cache entries.
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	} `json:"prompt_tokens_details"`
	// CompletionTokensDetails is written only by a translated answer that
	// reports reasoning tokens.
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CompletionTokensDetails breaks the completion's tokens down.
type CompletionTokensDetails struct {
	// ReasoningTokens is the part of the completion spent thinking.
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// ErrorBody is the chat-completions API's error answer.
type ErrorBody struct {
	// Error is the error object.
	Error Error `json:"error"`
}

// Error is the error object of an [ErrorBody].
type Error struct {
	// Message says what went wrong.
	Message string `json:"message"`
	// Type is the error's type, e.g. invalid_request_error.
	Type string `json:"type"`
	// Param names the offending request member, or null.
	Param *string `json:"param"`
	// Code is the error's code (a string, a number, or null), as given.
	Code json.RawMessage `json:"code"`
}
