// Package responses holds the wire types of the OpenAI Responses API
// (POST /v1/responses) that sluice reads and writes: the response object and
// its output items, its usage, the names of the streaming events, and the
// API's error body. It imports nothing of sluice's, so that every stage that
// speaks the API (the connectors' translations and read-back, the gateway's
// errors) shares one definition.
//
// The shapes follow OpenAI's published OpenAPI document and the answers
// recorded from the live API in testdata/recorded/openai/responses.
package responses

import "encoding/json"

// Response is a response object, in the member order the live API writes
// (the members sluice's translations fill; others pass through a native
// upstream untouched).
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *Error             `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    json.RawMessage    `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        json.RawMessage    `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	TopP               json.RawMessage    `json:"top_p"`
	Usage              *Usage             `json:"usage"`
	User               json.RawMessage    `json:"user"`
	Metadata           json.RawMessage    `json:"metadata"`
}

// Object is a response object's "object" member.
const Object = "response"

// The statuses of a response sluice writes.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// IncompleteDetails says why a response stopped early; Reason is
// "max_output_tokens" or "content_filter".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Usage is a response's token usage. InputTokens counts every input token,
// cached or not; OutputTokens counts reasoning tokens too.
type Usage struct {
	InputTokens         int64         `json:"input_tokens"`
	InputTokensDetails  InputDetails  `json:"input_tokens_details"`
	OutputTokens        int64         `json:"output_tokens"`
	OutputTokensDetails OutputDetails `json:"output_tokens_details"`
	TotalTokens         int64         `json:"total_tokens"`
	// Cost is the billed cost in USD that a marketplace adds to the usage
	// (absent from OpenAI's own answers).
	Cost *float64 `json:"cost,omitempty"`
}

// InputDetails is usage.input_tokens_details.
type InputDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputDetails is usage.output_tokens_details.
type OutputDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// The output item types sluice writes.
const (
	ItemMessage      = "message"
	ItemFunctionCall = "function_call"
	ItemReasoning    = "reasoning"
)

// Message is an output message item.
type Message struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []OutputText `json:"content"`
	Role    string       `json:"role"`
}

// OutputText is a message's output_text content part.
type OutputText struct {
	Type        string            `json:"type"`
	Annotations []json.RawMessage `json:"annotations"`
	Logprobs    []json.RawMessage `json:"logprobs"`
	Text        string            `json:"text"`
}

// FunctionCall is a function_call output item.
type FunctionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

// The streaming events, by their "type" (also the SSE event name).
const (
	EventCreated           = "response.created"
	EventInProgress        = "response.in_progress"
	EventCompleted         = "response.completed"
	EventIncomplete        = "response.incomplete"
	EventFailed            = "response.failed"
	EventOutputItemAdded   = "response.output_item.added"
	EventOutputItemDone    = "response.output_item.done"
	EventContentPartAdded  = "response.content_part.added"
	EventContentPartDone   = "response.content_part.done"
	EventOutputTextDelta   = "response.output_text.delta"
	EventOutputTextDone    = "response.output_text.done"
	EventFunctionArgsDelta = "response.function_call_arguments.delta"
	EventFunctionArgsDone  = "response.function_call_arguments.done"
	EventError             = "error"
)

// Terminal reports whether an event ends a stream: completed, incomplete,
// failed, or the stream's error event.
func Terminal(event string) bool {
	switch event {
	case EventCompleted, EventIncomplete, EventFailed, EventError:
		return true
	}
	return false
}

// Error is the error object of a failed response, and the "error" member of
// the API's error body.
type Error struct {
	Message string  `json:"message"`
	Type    string  `json:"type,omitempty"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ErrorBody is the API's error body: {"error": {...}}, the shape the chat
// completions API shares.
type ErrorBody struct {
	Error Error `json:"error"`
}

// ErrorEvent is a stream's error event.
type ErrorEvent struct {
	Type           string  `json:"type"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int64   `json:"sequence_number"`
}
