package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/gemini"
)

// The Gemini dialect's request translation: a chat-completions body becomes
// a generateContent body (package wire/gemini), the model in the path. The
// messages are converted in translate_chat_gemini_turns.go. The classes are
// translate_chat_messages.go's: what generateContent carries is written,
// what only hints (penalties are carried; storage and billing hints) is
// dropped, what would change the answer's meaning if lost (n > 1, logprobs,
// a non-function tool, an image by URL) is refused, located.

// geminiDropped are chat-completions members with no generateContent
// equivalent whose absence does not change what the answer means: storage
// and billing hints, the end user's id, a predicted output, and sluice's
// own routing object (already compiled into the plan).
var geminiDropped = map[string]bool{
	"store": true, "metadata": true, "service_tier": true, "prediction": true, "routing": true, "user": true,
}

// DegradedParallelToolCalls is recorded when a request asks for at most one
// tool call (parallel_tool_calls false) of an upstream that has no such
// knob (generateContent): the model may call several.
const DegradedParallelToolCalls = "parallel_tool_calls"

// Translate implements [Connector.Translate]: a chat-completions body
// becomes a generateContent body. Members are read in sorted order, so the
// first error found is always the same one. Members the translation does
// not know are refused: generateContent rejects a body member it does not
// know, and a chat member has no place in its body.
func (g *vertexGemini) Translate(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := geminiTranslation{parallel: true}
	for _, k := range keys {
		if err := t.member(k, body[k]); err != nil {
			return nil, err
		}
	}
	if _, ok := body["messages"]; !ok {
		return nil, invalidRequest("/messages", "messages is required")
	}
	if err := t.settle(); err != nil {
		return nil, err
	}
	b, err := anthMarshal(t.req)
	if err != nil {
		return nil, fmt.Errorf("vertex: encode generateContent request: %w", err)
	}
	n := &Native{Path: g.path(out.NativeModel, t.stream), Header: noHeaders, Body: b,
		// The upstream reports a stream's usage whatever the caller asked.
		UsageAdded: t.stream && !t.includeUsage}
	if !t.parallel && len(t.req.Tools) > 0 {
		n.Degraded = append(n.Degraded, DegradedParallelToolCalls)
	}
	// The anthropic-beta flags the check kept (a Messages request's) have
	// no meaning in generateContent: none is sent, each recorded.
	for _, f := range out.Betas {
		n.Degraded = append(n.Degraded, compiler.DegradedBetaPrefix+f)
	}
	sort.Strings(n.Degraded)
	return n, nil
}

// geminiTranslation is one request on its way.
type geminiTranslation struct {
	req    gemini.Request
	config gemini.GenerationConfig

	stream, includeUsage, parallel bool
	maxTokens, maxCompletion       int64
	toolChoice                     json.RawMessage
}

// member reads member k of the body.
func (t *geminiTranslation) member(k string, v json.RawMessage) error {
	if anthIsNull(v) {
		if k == "messages" {
			return invalidRequest("/"+k, "messages is required")
		}
		return nil
	}
	var err error
	c := &t.config
	switch k {
	case "model":
		// The check decided the model: the path names it.
	case "messages":
		t.req.SystemInstruction, t.req.Contents, err = geminiContents(v)
	case "max_tokens":
		t.maxTokens, err = anthPositiveInt(v, k, false)
	case "max_completion_tokens":
		t.maxCompletion, err = anthPositiveInt(v, k, false)
	case "temperature":
		c.Temperature, _, err = anthNumberIn(v, k, 0, 2, false)
	case "top_p":
		c.TopP, _, err = anthNumberIn(v, k, 0, 1, false)
	case "top_k":
		var n int64
		n, err = anthPositiveInt(v, k, false)
		c.TopK = strconv.AppendInt(nil, n, 10)
	case "presence_penalty":
		c.PresencePenalty, _, err = anthNumberIn(v, k, -2, 2, false)
	case "frequency_penalty":
		c.FrequencyPenalty, _, err = anthNumberIn(v, k, -2, 2, false)
	case "seed":
		var n int64
		if json.Unmarshal(v, &n) != nil {
			err = invalidRequest("/"+k, "seed must be an integer")
		}
		c.Seed = strconv.AppendInt(nil, n, 10)
	case "stop":
		c.StopSequences, err = geminiStop(v)
	case "stream":
		var ok bool
		if t.stream, ok = anthBool(v, false); !ok {
			err = invalidRequest("/"+k, "stream must be a boolean")
		}
	case "stream_options":
		t.includeUsage, err = anthIncludeUsage(v)
	case "parallel_tool_calls":
		var ok bool
		if t.parallel, ok = anthBool(v, false); !ok {
			err = invalidRequest("/"+k, "parallel_tool_calls must be a boolean")
		}
	case "tools":
		t.req.Tools, err = geminiTools(v)
	case "tool_choice":
		t.toolChoice = v
	case "response_format":
		c.ResponseMimeType, c.ResponseSchema, err = geminiResponseFormat(v)
	default:
		if geminiDropped[k] {
			return nil
		}
		var known bool
		if known, err = anthCheckUnsupported(k, v); !known {
			err = unsupportedParameter("/"+k, "parameter %q has no equivalent in generateContent", k)
		}
	}
	return err
}

// settle resolves what depends on several members: the token limit
// (max_completion_tokens over max_tokens; the model's own default when
// neither is set) and the tool choice, which needs the tools.
func (t *geminiTranslation) settle() error {
	switch {
	case t.maxCompletion > 0:
		t.config.MaxOutputTokens = &t.maxCompletion
	case t.maxTokens > 0:
		t.config.MaxOutputTokens = &t.maxTokens
	}
	if !bytes.Equal(mustJSON(t.config), []byte("{}")) {
		t.req.GenerationConfig = &t.config
	}
	tc, err := geminiToolChoice(t.toolChoice, t.req.Tools)
	t.req.ToolConfig = tc
	return err
}

// mustJSON encodes a value that always encodes.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// geminiStop converts stop: a string or a list of them; empty ones are
// dropped.
func geminiStop(v json.RawMessage) ([]string, error) {
	var many []string
	var one string
	switch {
	case json.Unmarshal(v, &one) == nil:
		many = []string{one}
	case json.Unmarshal(v, &many) != nil:
		return nil, invalidRequest("/stop", "stop must be a string or an array of strings")
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// geminiResponseFormat converts response_format: text asks for nothing,
// json_object for a JSON answer (responseMimeType application/json),
// json_schema for one that follows the schema (responseSchema, converted
// by [geminiSchema]).
func geminiResponseFormat(v json.RawMessage) (string, json.RawMessage, error) {
	const p = "/response_format"
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(v, &rf) != nil || rf.Type == "" {
		return "", nil, invalidRequest(p, `response_format must be an object with a "type"`)
	}
	switch rf.Type {
	case "text":
		return "", nil, nil
	case "json_object":
		return "application/json", nil, nil
	case "json_schema":
		if rf.JSONSchema == nil || anthIsNull(rf.JSONSchema.Schema) {
			return "application/json", nil, nil
		}
		s, err := geminiSchema(rf.JSONSchema.Schema, p+"/json_schema/schema")
		return "application/json", s, err
	}
	return "", nil, invalidRequest(p+"/type", "response_format type %q is not text, json_object or json_schema", rf.Type)
}

// geminiTools converts function tools into one tool of function
// declarations, their parameters converted by [geminiSchema].
func geminiTools(v json.RawMessage) ([]gemini.Tool, error) {
	tools, err := chatTools(v)
	if err != nil {
		return nil, err
	}
	decls := make([]gemini.FunctionDeclaration, 0, len(tools))
	for i, t := range tools {
		p := "/tools/" + strconv.Itoa(i)
		if err := functionTool(t, p); err != nil {
			return nil, err
		}
		d := gemini.FunctionDeclaration{Name: t.Function.Name, Description: t.Function.Description}
		if !anthIsNull(t.Function.Parameters) {
			s, err := geminiSchema(t.Function.Parameters, p+"/function/parameters")
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(s, []byte(`{"type":"OBJECT"}`)) { // no parameters: none declared
				d.Parameters = s
			}
		}
		decls = append(decls, d)
	}
	if len(decls) == 0 {
		return nil, nil
	}
	return []gemini.Tool{{FunctionDeclarations: decls}}, nil
}

// geminiToolChoice converts tool_choice into the function calling mode:
// auto AUTO, none NONE, required ANY, a named function ANY limited to it.
func geminiToolChoice(v json.RawMessage, tools []gemini.Tool) (*gemini.ToolConfig, error) {
	const p = "/tool_choice"
	if v == nil {
		return nil, nil
	}
	var cfg gemini.FunctionCallingConfig
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "auto":
			cfg.Mode = "AUTO"
		case "none":
			cfg.Mode = "NONE"
		case "required":
			cfg.Mode = "ANY"
		default:
			return nil, invalidRequest(p, "tool_choice %q is not auto, none or required", s)
		}
	} else {
		var named chat.NamedToolChoice
		if json.Unmarshal(v, &named) != nil {
			return nil, invalidRequest(p, "tool_choice must be a string or a named function")
		}
		switch {
		case named.Type != "function":
			return nil, unsupportedParameter(p+"/type", "tool_choice type %q: only a named function translates", named.Type)
		case named.Function.Name == "":
			return nil, invalidRequest(p+"/function/name", "tool_choice names no function")
		}
		cfg.Mode, cfg.AllowedFunctionNames = "ANY", []string{named.Function.Name}
	}
	if len(tools) == 0 {
		if cfg.Mode != "NONE" {
			return nil, invalidRequest(p, "tool_choice is set but no tools are declared")
		}
		return nil, nil
	}
	return &gemini.ToolConfig{FunctionCallingConfig: cfg}, nil
}

// geminiSchemaKeys are the JSON Schema keywords generateContent's Schema
// object has (an OpenAPI 3.0 subset); others (additionalProperties,
// $schema, strict, ...) are left out: they tighten what the schema
// admits, and the model is asked for the rest of it.
var geminiSchemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "default": true,
	"items": true, "minItems": true, "maxItems": true, "enum": true, "properties": true, "required": true,
	"minProperties": true, "maxProperties": true, "minimum": true, "maximum": true, "minLength": true,
	"maxLength": true, "pattern": true, "example": true, "anyOf": true, "propertyOrdering": true,
}

// geminiSchema converts a JSON Schema into generateContent's Schema object:
// types upper-case ("object" → "OBJECT", as Google's SDK sends them), a
// type list with "null" in it as the other type and nullable, keywords
// the Schema object lacks left out. A reference ($ref) is refused: the
// Schema object cannot follow one.
func geminiSchema(v json.RawMessage, p string) (json.RawMessage, error) {
	var s any
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, invalidRequest(p, "not a JSON Schema: %v", err)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return nil, invalidRequest(p, "a JSON Schema must be an object")
	}
	if _, has := m["type"]; !has {
		m["type"] = "object"
	}
	out, err := geminiSchemaNode(m, p)
	if err != nil {
		return nil, err
	}
	return anthMarshal(out)
}

// geminiSchemaNode converts one schema object (see [geminiSchema]).
func geminiSchemaNode(m map[string]any, p string) (map[string]any, error) {
	if _, ref := m["$ref"]; ref {
		return nil, unsupportedParameter(p+"/$ref", "a schema reference ($ref): generateContent's schema cannot follow one")
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !geminiSchemaKeys[k] {
			continue
		}
		switch k {
		case "type":
			t, nullable, err := geminiSchemaType(v, p+"/type")
			if err != nil {
				return nil, err
			}
			out["type"] = t
			if nullable {
				out["nullable"] = true
			}
			continue
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, invalidRequest(p+"/properties", "properties must be an object")
			}
			conv := make(map[string]any, len(props))
			for name, sub := range props {
				sm, ok := sub.(map[string]any)
				if !ok {
					return nil, invalidRequest(p+"/properties/"+name, "a property's schema must be an object")
				}
				c, err := geminiSchemaNode(sm, p+"/properties/"+name)
				if err != nil {
					return nil, err
				}
				conv[name] = c
			}
			v = conv
		case "items":
			sm, ok := v.(map[string]any)
			if !ok {
				return nil, unsupportedParameter(p+"/items", "items must be one schema object")
			}
			c, err := geminiSchemaNode(sm, p+"/items")
			if err != nil {
				return nil, err
			}
			v = c
		case "anyOf":
			list, ok := v.([]any)
			if !ok {
				return nil, invalidRequest(p+"/anyOf", "anyOf must be an array of schemas")
			}
			conv := make([]any, len(list))
			for i, sub := range list {
				sm, ok := sub.(map[string]any)
				if !ok {
					return nil, invalidRequest(p+"/anyOf/"+strconv.Itoa(i), "anyOf must be an array of schemas")
				}
				c, err := geminiSchemaNode(sm, p+"/anyOf/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				conv[i] = c
			}
			v = conv
		}
		out[k] = v
	}
	return out, nil
}

// geminiSchemaType converts a schema's type: a name, or a list of names
// of which one may be "null" (then nullable).
func geminiSchemaType(v any, p string) (string, bool, error) {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, n := range t {
			s, ok := n.(string)
			if !ok {
				return "", false, invalidRequest(p, "a type must be a name or a list of names")
			}
			names = append(names, s)
		}
	default:
		return "", false, invalidRequest(p, "a type must be a name or a list of names")
	}
	var typ string
	nullable := false
	for _, n := range names {
		switch n {
		case "null":
			nullable = true
		case "string", "number", "integer", "boolean", "array", "object":
			if typ != "" {
				return "", false, unsupportedParameter(p, "a type list of %q and %q: generateContent's schema takes one type (use anyOf)", typ, n)
			}
			typ = n
		default:
			return "", false, invalidRequest(p, "type %q is not a JSON Schema type", n)
		}
	}
	if typ == "" {
		return "", false, unsupportedParameter(p, "a null-only type has no equivalent in generateContent's schema")
	}
	return geminiUpper(typ), nullable, nil
}

// geminiUpper upper-cases an ASCII type name.
func geminiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
