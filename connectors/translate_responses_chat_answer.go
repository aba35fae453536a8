package connectors

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sluicegw/sluice/connectors/wire/responses"
)

// The translation of a chat-completions answer into a Responses API
// response, for a Responses request served by an upstream that does not
// speak the Responses API: the text becomes a message item, each tool call
// a function_call item; the usage is told in the Responses form (cached
// tokens inside the input, as in the chat shape). The response echoes the
// request's parameters as the live API does, and says store false: nothing
// was stored upstream.

// respAnswer translates a chat.completion body into a response object.
func respAnswer(chat []byte, call *Call) ([]byte, error) {
	var a chatAnswerIn
	if err := json.Unmarshal(chat, &a); err != nil {
		return nil, fmt.Errorf("connectors: decode chat answer: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, fmt.Errorf("connectors: the chat answer has no choice")
	}
	c := a.Choices[0]
	r := respSkeleton(call, a.ID, a.Model, a.Created)
	finish := ""
	if c.FinishReason != nil {
		finish = *c.FinishReason
	}
	r.Status, r.IncompleteDetails = respStatus(finish)
	text := contentText(c.Message.Content)
	if text == "" && c.Message.Refusal != nil {
		text = *c.Message.Refusal
	}
	if text != "" {
		r.Output = append(r.Output, respMessageItem(respItemID("msg", a.ID, 0), text, responses.StatusCompleted))
	}
	for _, tc := range c.Message.ToolCalls {
		r.Output = append(r.Output, respFunctionItem(tc.ID, tc.Function.Name, tc.Function.Arguments, responses.StatusCompleted))
	}
	r.Usage = respUsage(a.Usage)
	return json.Marshal(r)
}

// respStatus is the status of a response that ended for a chat finish
// reason: incomplete for the token cap or a content filter, completed
// otherwise.
func respStatus(finish string) (string, *responses.IncompleteDetails) {
	switch finish {
	case "length":
		return responses.StatusIncomplete, &responses.IncompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		return responses.StatusIncomplete, &responses.IncompleteDetails{Reason: "content_filter"}
	}
	return responses.StatusCompleted, nil
}

// respUsage tells a chat usage in the Responses form.
func respUsage(u *headUsage) *responses.Usage {
	if u == nil {
		return nil
	}
	out := &responses.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	return out
}

// respItemID derives an output item's id from the chat answer's id, so the
// same answer always tells the same ids.
func respItemID(prefix, chatID string, n int) string {
	id := strings.TrimPrefix(strings.TrimPrefix(chatID, "chatcmpl-"), "msg_")
	if id == "" {
		id = "sluice"
	}
	if n > 0 {
		return fmt.Sprintf("%s_%s_%d", prefix, id, n)
	}
	return prefix + "_" + id
}

// respMessageItem is an assistant message output item with its text.
func respMessageItem(id, text, status string) (b json.RawMessage) {
	// Off the stack (OffStack): a stream's items are encoded at the bottom
	// of the relay.
	OffStack(func() { b = marshalMessageItem(id, text, status) })
	return b
}

func marshalMessageItem(id, text, status string) json.RawMessage {
	b, _ := json.Marshal(responses.Message{ID: id, Type: responses.ItemMessage, Status: status, Role: "assistant",
		Content: []responses.OutputText{{Type: "output_text", Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}, Text: text}}})
	return b
}

// respFunctionItem is a function_call output item; its id is the call's,
// prefixed as the live API's are.
func respFunctionItem(callID, name, args, status string) (b json.RawMessage) {
	OffStack(func() { b = marshalFunctionItem(callID, name, args, status) }) // see respMessageItem
	return b
}

func marshalFunctionItem(callID, name, args, status string) json.RawMessage {
	b, _ := json.Marshal(responses.FunctionCall{ID: "fc_" + strings.TrimPrefix(callID, "call_"), Type: responses.ItemFunctionCall,
		Status: status, Arguments: args, CallID: callID, Name: name})
	return b
}

// respSkeleton is a response object before its output: its id and creation
// time (the chat answer's), the model as the caller asked for it (or what
// served instead), and the request's parameters echoed with the API's
// defaults for those it left out.
func respSkeleton(call *Call, chatID, reported string, created int64) responses.Response {
	var req Body
	if call != nil && call.Inbound != nil {
		req = call.Inbound.Request
	}
	echo := func(k, def string) json.RawMessage {
		if v, ok := req[k]; ok && !anthIsNull(v) {
			return v
		}
		return json.RawMessage(def)
	}
	r := responses.Response{
		ID:                respItemID("resp", chatID, 0),
		Object:            responses.Object,
		CreatedAt:         created,
		Status:            responses.StatusInProgress,
		Instructions:      echo("instructions", "null"),
		MaxOutputTokens:   echo("max_output_tokens", "null"),
		Model:             messageModel(call, reported),
		Output:            []json.RawMessage{},
		ParallelToolCalls: string(echo("parallel_tool_calls", "true")) != "false",
		Reasoning:         echo("reasoning", `{"effort":null,"summary":null}`),
		Temperature:       echo("temperature", "1.0"),
		Text:              echo("text", `{"format":{"type":"text"}}`),
		ToolChoice:        echo("tool_choice", `"auto"`),
		Tools:             echo("tools", "[]"),
		TopP:              echo("top_p", "1.0"),
		User:              echo("user", "null"),
		Metadata:          echo("metadata", "{}"),
	}
	if r.CreatedAt == 0 {
		r.CreatedAt = time.Now().Unix()
	}
	return r
}

// ResponsesError rewrites an upstream's error answer into the Responses
// API's error shape (the chat completions API's: {"error": {...}}), for a
// Responses request served by an upstream that does not speak the
// Responses API: the upstream's message, and the type the OpenAI APIs use
// for the status.
func ResponsesError(status int, body []byte) []byte {
	msg := upstreamErrorMessage(body)
	typ := "invalid_request_error"
	switch {
	case status == 401:
		typ = "authentication_error"
	case status == 403:
		typ = "permission_error"
	case status == 404:
		typ = "not_found_error"
	case status == 429:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	b, _ := json.Marshal(responses.ErrorBody{Error: responses.Error{Message: msg, Type: typ}})
	return b
}
