package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/chat"
)

// The translation of a Messages API request into the chat-completions
// shape, for the upstreams that do not speak the Messages API: the inverse
// of the anthropic connector's request translation, so that what one writes
// the other reads (thinking blocks become reasoning_details entries and
// back, tool_use blocks tool calls, tool_result blocks tool messages).
// The turns themselves are translated in translate_messages_chat_turns.go,
// the gateway's shallow check is translate_messages_chat_check.go, and the
// answer and the stream come back through translate_messages_chat_answer.go
// and translate_messages_chat_stream.go.

// What a Messages request loses on an upstream that cannot carry it,
// recorded in routing_degraded beside the check's own items.
const (
	// DegradedCacheControl: the request's prompt-cache breakpoints were not
	// sent (the upstream takes no cache_control).
	DegradedCacheControl = "cache_control"
	// DegradedThinking: the request asked for extended thinking, which the
	// upstream cannot be asked for.
	DegradedThinking = "thinking"
)

// dialect is what an OpenAI-shaped upstream takes of what a Messages request
// carries beyond plain chat.
type dialect struct {
	// cacheControl: cache_control on content parts and tools is read.
	cacheControl bool
	// reasoning: the marketplaces' reasoning object (and an assistant
	// message's reasoning_details) is read.
	reasoning bool
}

// fullDialect keeps everything: the marketplaces' dialect, and the one a
// request is validated in.
var fullDialect = dialect{cacheControl: true, reasoning: true}

// dialectOf is the dialect of a connector kind. OpenRouter and the Vercel
// AI Gateway take cache_control on content parts and a reasoning object
// (both recorded in requests they answered); OpenAI's own API takes
// neither.
func dialectOf(kind string) dialect {
	switch kind {
	case "openrouter", "vercel":
		return fullDialect
	}
	return dialect{}
}

// ParseMessages validates a Messages API request body (sluice's routing
// member removed). err is the caller's mistake — a member the Messages API
// itself would refuse — as an invalid_request [TranslateError] with the
// JSON pointer of the member at fault. untranslatable, when set, is what
// has no equivalent in the chat shape (code unsupported_parameter): an
// upstream that speaks the Messages API takes the request, every other
// refuses it with this error.
func ParseMessages(body Body) (untranslatable, err *TranslateError) {
	_, _, e := chatFromMessages(body, fullDialect)
	var te *TranslateError
	switch {
	case e == nil:
		return nil, nil
	case !errors.As(e, &te):
		return nil, invalidRequest("", "%s", e.Error())
	case te.Code == CodeUnsupportedParameter:
		return te, nil
	}
	return nil, te
}

// ParseCountTokens is [ParseMessages] for a token count, whose request is a
// Messages request without max_tokens.
func ParseCountTokens(body Body) (untranslatable, err *TranslateError) {
	if _, ok := body["max_tokens"]; ok {
		return nil, invalidRequest("/max_tokens", "a token count takes no max_tokens")
	}
	withCap := make(Body, len(body)+1)
	for k, v := range body {
		withCap[k] = v
	}
	withCap["max_tokens"] = json.RawMessage("1")
	return ParseMessages(withCap)
}

// chatFromMessages translates a Messages request into a chat-completions
// body in an upstream's dialect, and lists what the dialect could not carry
// (sorted). A malformed request fails with code invalid_request, before any
// unsupported_parameter error: members are read in sorted order, and the
// first untranslatable member is reported only once every member has been
// checked, so the error a request gets is always the same one.
func chatFromMessages(body Body, d dialect) (Body, []string, error) {
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := msgTranslation{d: d, out: make(Body, len(body)+2)}
	var system []json.RawMessage
	for _, k := range keys {
		v := body[k]
		p := "/" + k
		var err error
		switch k {
		case "model":
			var m string
			if json.Unmarshal(v, &m) != nil || strings.TrimSpace(m) == "" {
				return nil, nil, invalidRequest(p, "model must be a non-empty string")
			}
			t.out[k] = v
		case "max_tokens":
			if _, err = anthPositiveInt(v, k, false); err == nil {
				t.out[k] = v
			}
		case "messages":
			err = t.messages(v)
		case "system":
			system, err = t.system(v)
		case "metadata":
			err = t.metadata(v)
		case "stop_sequences":
			var stops []string
			if json.Unmarshal(v, &stops) != nil {
				return nil, nil, invalidRequest(p, "stop_sequences must be an array of strings")
			}
			if len(stops) > 0 {
				t.out["stop"] = v
			}
		case "stream":
			var s bool
			if json.Unmarshal(v, &s) != nil {
				return nil, nil, invalidRequest(p, "stream must be a boolean")
			}
			t.out[k] = v
			if s {
				// The Messages API always reports a stream's usage.
				t.out["stream_options"] = json.RawMessage(`{"include_usage":true}`)
			}
		case "temperature", "top_p", "top_k":
			var f float64
			if json.Unmarshal(v, &f) != nil {
				return nil, nil, invalidRequest(p, "%s must be a number", k)
			}
			t.out[k] = v
		case "tools":
			err = t.tools(v)
		case "tool_choice":
			err = t.toolChoice(v)
		case "thinking":
			err = t.thinking(v)
		case "service_tier":
			// A capacity hint of the Messages API: nothing to send elsewhere,
			// and the answer means the same without it.
		case "context_management":
			// The upstream editing the context for the caller (clearing old
			// tool results) is an economy: the answer to the request as sent
			// is still the answer.
			if !anthIsNull(v) {
				t.lose(DegradedContextManagement)
			}
		default:
			t.unsupported(p, "%q has no equivalent in the chat-completions request the upstream is sent", k)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	for _, k := range [...]string{"model", "max_tokens", "messages"} {
		if _, ok := body[k]; !ok {
			return nil, nil, invalidRequest("/"+k, "%s is required", k)
		}
	}
	if t.first != nil {
		return nil, nil, t.first
	}
	if len(system) > 0 {
		t.msgs = append(system, t.msgs...)
	}
	t.out["messages"] = joinArray(t.msgs)
	var lost []string
	for _, l := range [...]string{DegradedCacheControl, DegradedContextManagement, DegradedThinking} {
		if t.lost[l] {
			lost = append(lost, l)
		}
	}
	return t.out, lost, nil
}

// msgTranslation is one Messages request on its way into the chat shape.
type msgTranslation struct {
	d    dialect
	out  Body
	msgs []json.RawMessage
	verdict
}

// verdict is what a translation found it cannot carry: the members it
// degrades (lost, recorded in routing_degraded) and the first one it
// refuses, reported once the whole request has been read (first), so that
// a malformed member later in the request is reported before it.
type verdict struct {
	lost  map[string]bool
	first *TranslateError
}

// unsupported records an untranslatable member and lets the reading go on.
func (v *verdict) unsupported(p, format string, args ...any) {
	if v.first == nil {
		v.first = unsupportedParameter(p, format, args...)
	}
}

// lose records what the target cannot carry.
func (v *verdict) lose(what string) {
	if v.lost == nil {
		v.lost = map[string]bool{}
	}
	v.lost[what] = true
}

// chatMsg is one chat message the translation writes. Content is written
// as it is: a string, an array of parts, or null.
type chatMsg struct {
	Role             string                 `json:"role"`
	Content          json.RawMessage        `json:"content"`
	ToolCalls        []chat.OutToolCall     `json:"tool_calls,omitempty"`
	ToolCallID       string                 `json:"tool_call_id,omitempty"`
	ReasoningDetails []chat.ReasoningDetail `json:"reasoning_details,omitempty"`
}

// chatPart is one content part the translation writes.
type chatPart struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	ImageURL     *chat.ImageURL  `json:"image_url,omitempty"`
	File         *chatFile       `json:"file,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// chatFile is a file part's file: a PDF as a data URL.
type chatFile struct {
	Filename string `json:"filename"`
	FileData string `json:"file_data"`
}

// chatToolDef is a tool definition.
type chatToolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// joinArray writes messages already encoded as one JSON array, as
// anthMarshal would without scanning each again: null for none.
func joinArray(msgs []json.RawMessage) json.RawMessage {
	if msgs == nil {
		return json.RawMessage("null")
	}
	n := 2
	for _, m := range msgs {
		n += len(m) + 1
	}
	b := append(make([]byte, 0, n), '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		if m == nil {
			m = json.RawMessage("null")
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// metadata translates metadata.user_id into the chat shape's user.
func (t *msgTranslation) metadata(v json.RawMessage) error {
	if anthIsNull(v) {
		return nil
	}
	var md struct {
		UserID *string `json:"user_id"`
	}
	if json.Unmarshal(v, &md) != nil {
		return invalidRequest("/metadata", "metadata must be an object")
	}
	if md.UserID != nil && *md.UserID != "" {
		t.out["user"] = mustString(*md.UserID)
	}
	return nil
}

// tools translates client tool definitions into function tools. A server
// tool (web search, code execution, ...) runs on the Messages API's own
// servers and has no equivalent elsewhere.
func (t *msgTranslation) tools(v json.RawMessage) error {
	var tools []struct {
		Type         string          `json:"type"`
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(v, &tools) != nil {
		return invalidRequest("/tools", "tools must be an array of tool objects")
	}
	out := make([]chatToolDef, 0, len(tools))
	for i, tl := range tools {
		p := "/tools/" + strconv.Itoa(i)
		if tl.Type != "" && tl.Type != "custom" {
			t.unsupported(p+"/type", "tool type %q is a server tool of the Messages API, with no equivalent elsewhere", tl.Type)
			continue
		}
		if tl.Name == "" {
			return invalidRequest(p+"/name", "a tool needs a name")
		}
		schema := bytes.TrimSpace(tl.InputSchema)
		if len(schema) == 0 || schema[0] != '{' {
			return invalidRequest(p+"/input_schema", "a tool needs an input_schema object")
		}
		cc, err := t.cacheControl(tl.CacheControl, p)
		if err != nil {
			return err
		}
		d := chatToolDef{Type: "function", CacheControl: cc}
		d.Function.Name, d.Function.Description, d.Function.Parameters = tl.Name, tl.Description, schema
		out = append(out, d)
	}
	if len(out) > 0 {
		b, _ := anthMarshal(out)
		t.out["tools"] = b
	}
	return nil
}

// toolChoice translates tool_choice: auto, any (the chat shape's
// "required"), one named tool, or none; disable_parallel_tool_use becomes
// parallel_tool_calls = false.
func (t *msgTranslation) toolChoice(v json.RawMessage) error {
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if json.Unmarshal(v, &tc) != nil {
		return invalidRequest("/tool_choice", "tool_choice must be an object")
	}
	switch tc.Type {
	case "auto":
		t.out["tool_choice"] = mustString("auto")
	case "any":
		t.out["tool_choice"] = mustString("required")
	case "none":
		t.out["tool_choice"] = mustString("none")
	case "tool":
		if tc.Name == "" {
			return invalidRequest("/tool_choice/name", "a tool_choice of type tool needs the tool's name")
		}
		b, _ := anthMarshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		t.out["tool_choice"] = b
	default:
		return invalidRequest("/tool_choice/type", "tool_choice type %q is not one of auto, any, tool, none", tc.Type)
	}
	if tc.DisableParallelToolUse {
		t.out["parallel_tool_calls"] = json.RawMessage("false")
	}
	return nil
}

// thinking translates extended thinking into the marketplaces' reasoning
// object: a budget becomes its max_tokens, adaptive thinking enables it.
// An upstream that takes no reasoning object loses it (a preference: the
// answer is still an answer).
func (t *msgTranslation) thinking(v json.RawMessage) error {
	if anthIsNull(v) {
		return nil
	}
	var th struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if json.Unmarshal(v, &th) != nil {
		return invalidRequest("/thinking", "thinking must be an object")
	}
	var reasoning string
	switch th.Type {
	case "disabled":
		return nil
	case "enabled":
		if th.BudgetTokens == nil || *th.BudgetTokens < 1 {
			return invalidRequest("/thinking/budget_tokens", "thinking of type enabled needs a positive budget_tokens")
		}
		reasoning = fmt.Sprintf(`{"max_tokens":%d}`, *th.BudgetTokens)
	case "adaptive":
		reasoning = `{"enabled":true}`
	default:
		return invalidRequest("/thinking/type", "thinking type %q is not one of enabled, adaptive, disabled", th.Type)
	}
	if !t.d.reasoning {
		t.lose(DegradedThinking)
		return nil
	}
	t.out["reasoning"] = json.RawMessage(reasoning)
	return nil
}

// partsContent is a content of parts: one text part without a cache marker
// is written as a plain string, as a hand-written request would.
func partsContent(parts []chatPart) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == "text" && parts[0].CacheControl == nil && parts[0].Text != nil {
		return mustString(*parts[0].Text)
	}
	b, _ := anthMarshal(parts)
	return b
}

// mustString encodes a string.
func mustString(s string) json.RawMessage {
	return jsonscan.AppendString(nil, s)
}
