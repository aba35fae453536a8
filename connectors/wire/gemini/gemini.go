// Package gemini holds the wire types of Google's generateContent API, as
// Vertex AI serves it for Gemini models (POST
// .../publishers/google/models/{model}:generateContent, and
// :streamGenerateContent?alt=sse, whose events each carry one
// [Response]): the request a translation writes and the answer and stream
// chunks it reads back. Member names are the REST API's (lower camel case).
// It imports nothing of sluice's.
package gemini

import "encoding/json"

// Request is a generateContent request body. The model is in the path.
type Request struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// Content is one turn: a role ("user" or "model"; a system instruction's
// role is not read) and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a content: exactly one of its data members is set.
type Part struct {
	Text             *string           `json:"text,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	// Thought marks a part of the model's thinking (a thought summary).
	Thought bool `json:"thought,omitempty"`
	// ThoughtSignature is the opaque signature of the model's thinking a
	// part carries.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// Blob is inline data: its media type and its bytes in base64.
type Blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData is data named by URI (a Cloud Storage object).
type FileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a call of a declared function the model asks for.
type FunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a function's result given back to the model, tied
// to its call by the function's name.
type FunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool is a set of function declarations.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
}

// FunctionDeclaration declares one function: its parameters are a Schema
// object (an OpenAPI subset, types upper-case).
type FunctionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolConfig says how the model may call functions.
type ToolConfig struct {
	FunctionCallingConfig FunctionCallingConfig `json:"functionCallingConfig"`
}

// FunctionCallingConfig is the function calling mode ("AUTO", "ANY",
// "NONE") and, for ANY, the functions the model may call.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig holds the sampling and output knobs.
type GenerationConfig struct {
	Temperature      json.RawMessage `json:"temperature,omitempty"`
	TopP             json.RawMessage `json:"topP,omitempty"`
	TopK             json.RawMessage `json:"topK,omitempty"`
	CandidateCount   *int64          `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int64          `json:"maxOutputTokens,omitempty"`
	StopSequences    []string        `json:"stopSequences,omitempty"`
	PresencePenalty  json.RawMessage `json:"presencePenalty,omitempty"`
	FrequencyPenalty json.RawMessage `json:"frequencyPenalty,omitempty"`
	Seed             json.RawMessage `json:"seed,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
}

// Response is a generateContent answer, and each event of a stream.
type Response struct {
	Candidates     []Candidate     `json:"candidates"`
	PromptFeedback *PromptFeedback `json:"promptFeedback"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	// Error is set on an error answer, and on an in-band stream error.
	Error *Error `json:"error"`
}

// Candidate is one candidate answer.
type Candidate struct {
	Content      Content `json:"content"`
	FinishReason string  `json:"finishReason"`
	Index        int     `json:"index"`
}

// PromptFeedback says why a prompt was blocked (no candidate then).
type PromptFeedback struct {
	BlockReason string `json:"blockReason"`
}

// UsageMetadata is an answer's token usage. promptTokenCount counts the
// cached part too; thoughtsTokenCount is billed as output beside
// candidatesTokenCount.
type UsageMetadata struct {
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount *int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      *int64 `json:"thoughtsTokenCount"`
	TotalTokenCount         *int64 `json:"totalTokenCount"`
}

// ErrorBody is Google APIs' error answer.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is the error: its HTTP status code, message and canonical status
// name ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", ...).
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}
