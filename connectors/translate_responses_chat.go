package connectors

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/chat"
)

// The translation of a Responses API request into the chat-completions
// shape, for an upstream that does not speak the Responses API (Anthropic's,
// whose connector then writes the chat request as a Messages request).
//
// Every member of the request has one of three classes, listed in the
// README's translation table:
//   - carried: it has a chat equivalent and is translated (input items,
//     instructions, function tools, tool_choice, text.format, ...);
//   - degraded: it only asks for an economy or a refinement the chat shape
//     cannot carry (prompt_cache_key, reasoning, service_tier, ...); it is
//     dropped and recorded in routing_degraded, because the answer is still
//     the answer to the request;
//   - refused: its loss would change the answer (a built-in tool, a stored
//     conversation, a file input); the request is refused, located, by
//     every upstream that would need the translation.

// What a Responses request loses on an upstream that does not speak the
// Responses API, recorded in routing_degraded.
const (
	// DegradedReasoning: reasoning effort or summary, or reasoning items
	// of an earlier turn, were not sent.
	DegradedReasoning = "reasoning"
	// DegradedPromptCacheKey: the request's cache-routing key was not sent.
	DegradedPromptCacheKey = "prompt_cache_key"
	// DegradedServiceTier: the request's service tier was not sent.
	DegradedServiceTier = "service_tier"
	// DegradedStore: the request asked for the response to be stored; the
	// translated answer is not stored anywhere.
	DegradedStore = "store"
	// DegradedMetadata: the request's metadata was not sent.
	DegradedMetadata = "metadata"
	// DegradedInclude: extra output the request asked for (include) is not
	// in the translated answer.
	DegradedInclude = "include"
	// DegradedTextVerbosity: the request's text.verbosity was not sent.
	DegradedTextVerbosity = "text.verbosity"
	// DegradedTruncation: the request's truncation strategy was not sent.
	DegradedTruncation = "truncation"
	// DegradedContextManagement: the request's context management (the
	// upstream editing the context for it) was not sent.
	DegradedContextManagement = "context_management"
)

// ParseResponses checks a Responses API request body (sluice's routing
// member removed) for what every upstream would refuse, with the JSON
// pointer of the member at fault: a model, an input (a non-empty string or
// list of items, each an object of a known role when it is a message), a
// positive max_output_tokens, a boolean stream. The check is shallow on
// purpose: a request passed natively is validated by its upstream, and one
// translated is read whole by its translation, which refuses what it
// cannot carry (unsupported_parameter) or read (invalid_request) there —
// the request is read deeply once, and only where that is needed.
func ParseResponses(body Body) *TranslateError {
	// In the translation's order: members sorted, the required ones
	// missing after.
	if in, ok := body["input"]; ok {
		if err := checkInput(jsonscan.TrimSpace(in)); err != nil {
			return err
		}
	}
	if v, ok := body["max_output_tokens"]; ok && !anthIsNull(v) {
		if _, err := anthPositiveInt(v, "max_output_tokens", true); err != nil {
			return err.(*TranslateError)
		}
	}
	if m, ok := body["model"]; ok {
		m = jsonscan.TrimSpace(m)
		if len(m) < 2 || m[0] != '"' || len(bytes.TrimSpace(jsonscan.StringContent(m))) == 0 {
			return invalidRequest("/model", "model must be a non-empty string")
		}
	}
	if v, ok := body["stream"]; ok {
		if s := string(jsonscan.TrimSpace(v)); s != "true" && s != "false" {
			return invalidRequest("/stream", "stream must be a boolean")
		}
	}
	for _, k := range [...]string{"model", "input"} {
		if _, ok := body[k]; !ok {
			return invalidRequest("/"+k, "%s is required", k)
		}
	}
	return nil
}

// checkInput is [ParseResponses]'s check of the input. It scans; an input
// the scan finds at fault is read again by the translation itself
// (respTranslation.input), whose verdict is the one given, so that the two
// never differ where a scan and encoding/json read a body differently (a
// member written twice, a member name in another case).
func checkInput(in []byte) *TranslateError {
	if scanInput(in) == nil {
		return nil
	}
	t := respTranslation{out: Body{}}
	return asTranslateError(t.input(in), "/input")
}

// scanInput is checkInput's scan.
func scanInput(in []byte) *TranslateError {
	if len(in) > 0 && in[0] == '"' {
		if len(in) <= 2 {
			return invalidRequest("/input", "input must not be empty")
		}
	} else {
		if !json.Valid(in) {
			return invalidRequest("/input", "input must be a string or an array of input items (objects)")
		}
		var bad *TranslateError
		n, ok := eachElement(in, func(i int, it []byte) bool {
			p := "/input/" + strconv.Itoa(i)
			if len(it) == 0 || it[0] != '{' {
				bad = invalidRequest("/input", "input must be a string or an array of input items (objects)")
				return false
			}
			typ := string(jsonscan.StringContent(jsonscan.Member(it, "type")))
			role := jsonscan.Member(it, "role")
			switch {
			case typ == "" && role == nil:
				bad = invalidRequest(p+"/type", "an input item needs a type")
			case typ == "" || typ == "message":
				switch string(jsonscan.StringContent(role)) {
				case "user", "system", "developer", "assistant":
				default:
					var r string
					_ = json.Unmarshal(role, &r)
					bad = invalidRequest(p+"/role", "unsupported role %q (user, assistant, system or developer)", r)
				}
			}
			return bad == nil
		})
		switch {
		case bad != nil:
			return bad
		case !ok:
			return invalidRequest("/input", "input must be a string or an array of input items (objects)")
		case n == 0:
			return invalidRequest("/input", "input must not be empty")
		}
	}
	return nil
}

// respTranslation is one Responses request on its way into the chat shape.
type respTranslation struct {
	out  Body
	msgs []json.RawMessage
	// pending is the assistant message being assembled from consecutive
	// output items (text, then function calls), written when another role
	// begins.
	pending *chatMsg
	verdict
}

// flush writes the pending assistant message.
func (t *respTranslation) flush() {
	if t.pending == nil {
		return
	}
	if t.pending.Content == nil {
		t.pending.Content = json.RawMessage("null")
	}
	m, _ := json.Marshal(t.pending)
	t.msgs = append(t.msgs, m)
	t.pending = nil
}

func (t *respTranslation) add(m chatMsg) {
	t.flush()
	b, _ := json.Marshal(m)
	t.msgs = append(t.msgs, b)
}

// chatFromResponses translates a Responses request into a chat-completions
// body, and lists what it could not carry (sorted). As for the Messages
// translation, members are read in sorted order and a malformed member
// fails before any untranslatable one is reported.
func chatFromResponses(body Body) (Body, []string, error) {
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := respTranslation{out: make(Body, len(body)+2)}
	var instructions json.RawMessage
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
		case "input":
			err = t.input(v)
		case "instructions":
			var s *string
			if json.Unmarshal(v, &s) != nil {
				return nil, nil, invalidRequest(p, "instructions must be a string")
			}
			if s != nil && *s != "" {
				instructions = mustString(*s)
			}
		case "max_output_tokens":
			var n *int64
			if json.Unmarshal(v, &n) != nil || (n != nil && *n < 1) {
				return nil, nil, invalidRequest(p, "max_output_tokens must be a positive integer")
			}
			if n != nil {
				t.out["max_tokens"] = v
			}
		case "temperature", "top_p":
			var f *float64
			if json.Unmarshal(v, &f) != nil {
				return nil, nil, invalidRequest(p, "%s must be a number", k)
			}
			if f != nil {
				t.out[k] = v
			}
		case "stream":
			var s bool
			if json.Unmarshal(v, &s) != nil {
				return nil, nil, invalidRequest(p, "stream must be a boolean")
			}
			t.out[k] = v
			if s {
				// A Responses stream always ends with the usage.
				t.out["stream_options"] = json.RawMessage(`{"include_usage":true}`)
			}
		case "stream_options":
			// include_obfuscation only pads the deltas; nothing to carry.
		case "tools":
			err = t.tools(v)
		case "tool_choice":
			err = t.toolChoice(v)
		case "parallel_tool_calls":
			var b *bool
			if json.Unmarshal(v, &b) != nil {
				return nil, nil, invalidRequest(p, "parallel_tool_calls must be a boolean")
			}
			if b != nil {
				t.out[k] = v
			}
		case "text":
			err = t.text(v)
		case "user":
			var u *string
			if json.Unmarshal(v, &u) != nil {
				return nil, nil, invalidRequest(p, "user must be a string")
			}
			if u != nil {
				t.out[k] = v
			}
		case "safety_identifier":
			var u *string
			if json.Unmarshal(v, &u) != nil {
				return nil, nil, invalidRequest(p, "safety_identifier must be a string")
			}
			if u != nil && body["user"] == nil {
				t.out["user"] = v
			}
		case "store":
			var b *bool
			if json.Unmarshal(v, &b) != nil {
				return nil, nil, invalidRequest(p, "store must be a boolean")
			}
			if b != nil && *b {
				t.lose(DegradedStore)
			}
		case "reasoning":
			if !anthIsNull(v) {
				var r struct {
					Effort  *string `json:"effort"`
					Summary *string `json:"summary"`
				}
				if json.Unmarshal(v, &r) != nil {
					return nil, nil, invalidRequest(p, "reasoning must be an object")
				}
				if r.Effort != nil || r.Summary != nil {
					t.lose(DegradedReasoning)
				}
			}
		case "include":
			var inc []string
			if json.Unmarshal(v, &inc) != nil {
				return nil, nil, invalidRequest(p, "include must be an array of strings")
			}
			if len(inc) > 0 {
				t.lose(DegradedInclude)
			}
		case "metadata", "client_metadata":
			// The caller's own annotations (Codex sends client_metadata):
			// nothing the model reads.
			if !anthIsNull(v) {
				var m map[string]string
				if json.Unmarshal(v, &m) != nil {
					return nil, nil, invalidRequest(p, "metadata must be an object of strings")
				}
				if len(m) > 0 {
					t.lose(DegradedMetadata)
				}
			}
		case "prompt_cache_key", "prompt_cache_retention":
			if !anthIsNull(v) {
				t.lose(DegradedPromptCacheKey)
			}
		case "service_tier":
			if !anthIsNull(v) {
				t.lose(DegradedServiceTier)
			}
		case "truncation":
			var s *string
			if json.Unmarshal(v, &s) != nil {
				return nil, nil, invalidRequest(p, `truncation must be "auto" or "disabled"`)
			}
			if s != nil && *s == "auto" {
				t.lose(DegradedTruncation)
			}
		case "context_management":
			if !anthIsNull(v) {
				t.lose(DegradedContextManagement)
			}
		case "previous_response_id", "conversation":
			if !anthIsNull(v) {
				t.unsupported(p, "%q continues a response stored by an upstream that speaks the Responses API; this upstream cannot", k)
			}
		case "background":
			var b *bool
			if json.Unmarshal(v, &b) != nil {
				return nil, nil, invalidRequest(p, "background must be a boolean")
			}
			if b != nil && *b {
				t.unsupported(p, "a background response needs an upstream that speaks the Responses API")
			}
		default:
			if !anthIsNull(v) {
				t.unsupported(p, "%q has no equivalent in the chat-completions request the upstream is sent", k)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	for _, k := range [...]string{"model", "input"} {
		if _, ok := body[k]; !ok {
			return nil, nil, invalidRequest("/"+k, "%s is required", k)
		}
	}
	t.flush()
	if t.first != nil {
		return nil, nil, t.first
	}
	if instructions != nil {
		m, _ := json.Marshal(chatMsg{Role: "system", Content: instructions})
		t.msgs = append([]json.RawMessage{m}, t.msgs...)
	}
	if len(t.msgs) == 0 {
		return nil, nil, invalidRequest("/input", "input has no item to send")
	}
	t.out["messages"] = joinArray(t.msgs)
	lost := make([]string, 0, len(t.lost))
	for l := range t.lost {
		lost = append(lost, l)
	}
	sort.Strings(lost)
	if len(lost) == 0 {
		lost = nil
	}
	return t.out, lost, nil
}

// respItem is an input item, any type: the members the translation reads.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// respPart is a content part of an input message.
type respPart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
	Refusal  *string `json:"refusal"`
}

// input translates the input: a string (one user message) or a list of
// items.
func (t *respTranslation) input(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return invalidRequest("/input", "input must not be empty")
		}
		t.add(chatMsg{Role: "user", Content: mustString(s)})
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		return invalidRequest("/input", "input must be a string or an array of input items")
	}
	if len(items) == 0 {
		return invalidRequest("/input", "input must not be empty")
	}
	for i, raw := range items {
		p := "/input/" + strconv.Itoa(i)
		var it respItem
		if json.Unmarshal(raw, &it) != nil {
			return invalidRequest(p, "an input item must be an object")
		}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			if err := t.message(it, p); err != nil {
				return err
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return invalidRequest(p, "a function_call item needs call_id, name and arguments")
			}
			if t.pending == nil {
				t.pending = &chatMsg{Role: "assistant"}
			}
			tc := chat.OutToolCall{ID: it.CallID, Type: "function"}
			tc.Function.Name = it.Name
			tc.Function.Arguments = *it.Arguments
			t.pending.ToolCalls = append(t.pending.ToolCalls, tc)
		case "function_call_output":
			if it.CallID == "" || len(it.Output) == 0 {
				return invalidRequest(p, "a function_call_output item needs call_id and output")
			}
			out, err := outputText(it.Output, p+"/output")
			if err != nil {
				return err
			}
			t.add(chatMsg{Role: "tool", ToolCallID: it.CallID, Content: mustString(out)})
		case "reasoning":
			// An earlier turn's reasoning, opaque to any other upstream.
			t.lose(DegradedReasoning)
		case "":
			return invalidRequest(p+"/type", "an input item needs a type")
		default:
			t.unsupported(p+"/type", "input item %q has no equivalent in the chat-completions request the upstream is sent", typ)
		}
	}
	return nil
}

// message translates a message item.
func (t *respTranslation) message(it respItem, p string) error {
	role := it.Role
	switch role {
	case "user", "system", "developer", "assistant":
	default:
		return invalidRequest(p+"/role", "unsupported role %q (user, assistant, system or developer)", role)
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		if role == "assistant" {
			t.assistantText(s)
			return nil
		}
		t.add(chatMsg{Role: role, Content: mustString(s)})
		return nil
	}
	var parts []respPart
	if json.Unmarshal(it.Content, &parts) != nil {
		return invalidRequest(p+"/content", "content must be a string or an array of content parts")
	}
	if role == "assistant" {
		var text strings.Builder
		for j, part := range parts {
			pp := p + "/content/" + strconv.Itoa(j)
			switch part.Type {
			case "output_text", "input_text":
				if part.Text == nil {
					return invalidRequest(pp+"/text", "a text part needs its text")
				}
				text.WriteString(*part.Text)
			case "refusal":
				if part.Refusal != nil {
					text.WriteString(*part.Refusal)
				}
			default:
				return invalidRequest(pp+"/type", "an assistant message's part must be output_text or refusal, not %q", part.Type)
			}
		}
		t.assistantText(text.String())
		return nil
	}
	out := make([]chatPart, 0, len(parts))
	for j, part := range parts {
		pp := p + "/content/" + strconv.Itoa(j)
		switch part.Type {
		case "input_text", "output_text":
			if part.Text == nil {
				return invalidRequest(pp+"/text", "a text part needs its text")
			}
			out = append(out, chatPart{Type: "text", Text: part.Text})
		case "input_image":
			if part.ImageURL == nil {
				t.unsupported(pp, "an image by file_id has no equivalent in the chat-completions request the upstream is sent")
				continue
			}
			img := &chat.ImageURL{URL: *part.ImageURL}
			out = append(out, chatPart{Type: "image_url", ImageURL: img})
		case "input_file", "input_audio":
			t.unsupported(pp+"/type", "content part %q has no equivalent in the chat-completions request the upstream is sent", part.Type)
		default:
			return invalidRequest(pp+"/type", "unknown content part type %q", part.Type)
		}
	}
	content, _ := json.Marshal(out)
	t.add(chatMsg{Role: role, Content: content})
	return nil
}

// assistantText starts an assistant message with its text; the function
// calls that follow join it.
func (t *respTranslation) assistantText(s string) {
	t.flush()
	t.pending = &chatMsg{Role: "assistant", Content: mustString(s)}
}

// outputText is a function_call_output's output as text: a string, or the
// text of its input_text parts.
func outputText(v json.RawMessage, p string) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	var parts []respPart
	if json.Unmarshal(v, &parts) != nil {
		return "", invalidRequest(p, "output must be a string or an array of content parts")
	}
	var b strings.Builder
	for j, part := range parts {
		if part.Type != "input_text" || part.Text == nil {
			return "", unsupportedParameter(p+"/"+strconv.Itoa(j), "only text tool output has an equivalent in the chat-completions request the upstream is sent")
		}
		b.WriteString(*part.Text)
	}
	return b.String(), nil
}

// respTool is a tool definition of a Responses request.
type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// tools translates the function tools; a built-in tool (web search, file
// search, code interpreter, MCP, computer use, ...) is refused, because the
// answer would not be the one asked for without it.
func (t *respTranslation) tools(v json.RawMessage) error {
	if anthIsNull(v) {
		return nil
	}
	var tools []respTool
	if json.Unmarshal(v, &tools) != nil {
		return invalidRequest("/tools", "tools must be an array of tool definitions")
	}
	out := make([]json.RawMessage, 0, len(tools))
	for i, tool := range tools {
		p := "/tools/" + strconv.Itoa(i)
		if tool.Type != "function" {
			t.unsupported(p+"/type", "tool type %q is built into the Responses API; the upstream this request would be translated for has no such tool", tool.Type)
			continue
		}
		if tool.Name == "" {
			return invalidRequest(p+"/name", "a function tool needs a name")
		}
		var def chatToolDef
		def.Type = "function"
		def.Function.Name = tool.Name
		def.Function.Description = tool.Description
		def.Function.Parameters = tool.Parameters
		if len(def.Function.Parameters) == 0 || anthIsNull(def.Function.Parameters) {
			def.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		b, _ := json.Marshal(def)
		out = append(out, b)
	}
	if len(out) > 0 {
		t.out["tools"] = joinArray(out)
	}
	return nil
}

// toolChoice translates tool_choice: "auto", "none", "required", or a named
// function.
func (t *respTranslation) toolChoice(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "auto", "none", "required":
			t.out["tool_choice"] = v
			return nil
		}
		return invalidRequest("/tool_choice", `tool_choice must be "auto", "none", "required" or a tool`)
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(v, &c) != nil {
		return invalidRequest("/tool_choice", `tool_choice must be "auto", "none", "required" or a tool`)
	}
	if c.Type != "function" {
		t.unsupported("/tool_choice/type", "tool_choice %q has no equivalent in the chat-completions request the upstream is sent", c.Type)
		return nil
	}
	var named chat.NamedToolChoice
	named.Type = "function"
	named.Function.Name = c.Name
	b, _ := json.Marshal(named)
	t.out["tool_choice"] = b
	return nil
}

// text translates text.format into response_format; text.verbosity is a
// refinement, degraded.
func (t *respTranslation) text(v json.RawMessage) error {
	if anthIsNull(v) {
		return nil
	}
	var tx struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
			Desc   string          `json:"description"`
		} `json:"format"`
		Verbosity *string `json:"verbosity"`
	}
	if json.Unmarshal(v, &tx) != nil {
		return invalidRequest("/text", "text must be an object")
	}
	if tx.Verbosity != nil {
		t.lose(DegradedTextVerbosity)
	}
	if tx.Format == nil {
		return nil
	}
	switch tx.Format.Type {
	case "text":
	case "json_object":
		t.out["response_format"] = json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		if tx.Format.Name == "" || len(tx.Format.Schema) == 0 {
			return invalidRequest("/text/format", "a json_schema format needs a name and a schema")
		}
		var js bytes.Buffer
		js.WriteString(`{"type":"json_schema","json_schema":{"name":`)
		js.Write(mustString(tx.Format.Name))
		if tx.Format.Desc != "" {
			js.WriteString(`,"description":`)
			js.Write(mustString(tx.Format.Desc))
		}
		js.WriteString(`,"schema":`)
		js.Write(tx.Format.Schema)
		if tx.Format.Strict != nil {
			js.WriteString(`,"strict":` + strconv.FormatBool(*tx.Format.Strict))
		}
		js.WriteString("}}")
		t.out["response_format"] = js.Bytes()
	default:
		return invalidRequest("/text/format/type", `text.format.type must be "text", "json_object" or "json_schema"`)
	}
	return nil
}
