package connectors

import "encoding/json"

// Wire types of the OpenAI chat-completions API: the request members a
// connector that rewrites requests (anthropic) decodes, and the answer it
// writes back. The OpenAI-shaped upstreams relay these bodies as they are;
// what is read back from their answers is completionHead (openaishape.go).

// oaiMessage is one message of a chat-completions request.
type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	// Refusal is an assistant message's refusal, replayed from an answer
	// the model declined (its content is then null).
	Refusal *string `json:"refusal"`
	// ReasoningDetails is an assistant message's reasoning, replayed from
	// an answer (or joined from a stream's deltas) as the marketplaces
	// write it: an array of reasoning.text and reasoning.encrypted entries.
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
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
// only tool calls, as in the chat-completions API. Reasoning and
// ReasoningDetails are the members the marketplaces add for a model's
// reasoning (OpenRouter and the Vercel AI Gateway name them so): both are
// present when the answer reasoned, absent otherwise.
type oaiOutMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
	// Reasoning is the reasoning text, every reasoning.text entry's text
	// joined.
	Reasoning        *string              `json:"reasoning,omitempty"`
	ReasoningDetails []oaiReasoningDetail `json:"reasoning_details,omitempty"`
	ToolCalls        []oaiOutToolCall     `json:"tool_calls,omitempty"`
}

// oaiReasoningDetail is one entry of reasoning_details, in the marketplaces'
// member order: a reasoning.text entry has text and signature, a
// reasoning.encrypted entry data. Index is the entry's place among the
// answer's reasoning entries, which the deltas of a stream name too.
type oaiReasoningDetail struct {
	Type      string  `json:"type"`
	Text      *string `json:"text,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
	Format    string  `json:"format"`
	Index     int     `json:"index"`
}

// oaiOutToolCall is a tool call the connectors write: one of an answer, or
// one of an assistant message a translated Messages request replays.
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
		// CacheWriteTokens is written (as OpenRouter does) only when a
		// translated answer created cache entries.
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	} `json:"prompt_tokens_details"`
}
