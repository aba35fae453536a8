package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The anthropic connector's request translation: a chat-completions body
// becomes a Messages API body. The messages themselves are converted in
// translate_chat_messages_turns.go and the body encoded in
// translate_chat_messages_encode.go; the wire types are package
// wire/messages's.

// anthDropped are chat-completions members with no Messages API equivalent
// whose absence does not change what the answer means, whatever their value:
// sampling penalties and seed (best-effort knobs), storage and billing hints,
// a predicted output (a latency hint), and sluice's own routing object
// (already compiled into the plan). stream_options is not sent either (the
// upstream reports a stream's usage unasked), but it is read: it says whether
// the caller gets the usage chunk.
var anthDropped = map[string]bool{
	"presence_penalty": true, "frequency_penalty": true, "seed": true,
	"store": true, "metadata": true, "service_tier": true, "prediction": true, "routing": true,
}

// Translate implements [Connector.Translate]: a chat-completions body becomes
// a Messages API body. Members are read in sorted order, so that the first
// error found is always the same one. Members with a chat-completions meaning
// the upstream cannot honour are refused (a silent drop would change what the
// answer means); members the connector does not know pass through untouched,
// so a caller can use the upstream's own parameters (thinking, service_tier)
// and the upstream itself judges anything else.
func (c *anthropic) Translate(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return c.translate(body, out, true)
}

// translate is Translate. With fast set, the common shapes (numbers,
// booleans, strings, messages of a role and a string content) are read by
// hand-written scanners over the raw bytes, and the body is appended into one
// buffer; anything else takes the encoding/json path, which fast == false
// takes throughout. Both give the same bytes and the same errors for any input:
// the tests and the fuzzer run both and compare.
func (c *anthropic) translate(body Body, out *compiler.Outcome, fast bool) (*Native, error) {
	var keyBuf [16]string
	keys := keyBuf[:0]
	// size bounds the encoded body for the common case: the Messages body is
	// about as long as the members it comes from.
	size := 64 + len(out.NativeModel)
	for k, v := range body {
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	sort.Strings(keys)

	t := anthTranslation{req: messages.Request{Model: out.NativeModel, MaxTokens: anthDefaultMaxTokens}, fast: fast, parallel: true}
	if err := t.read(body, keys); err != nil {
		return nil, err
	}
	b, err := t.encode(size)
	if err != nil {
		return nil, err
	}
	if b, err = anthAppendPassThrough(b, body, t.passThrough); err != nil {
		return nil, err
	}
	// The shared empty header: the gateway only reads it. The upstream
	// reports a stream's usage whatever the caller asked: a caller that did
	// not ask for it gets no usage chunk (see [anthStream]).
	return &Native{Path: "/messages", Header: noHeaders, Body: b, UsageAdded: t.req.Stream && !t.includeUsage}, nil
}

// anthTranslation is one request on its way: the Messages request built so
// far, and the members that are settled only once all are read.
type anthTranslation struct {
	req  messages.Request
	fast bool // read the common shapes by hand (see translate)

	maxTokens, maxCompletion int64
	// thinkingBudget is the thinking member's budget_tokens, 0 when unset.
	thinkingBudget int64
	// includeUsage is stream_options.include_usage.
	includeUsage bool
	toolChoice   json.RawMessage
	parallel     bool
	// passThrough are the members sent untouched, in sorted order.
	passThrough []string
}

// member reads member k of the body. The member's pointer, "/" + k, is
// built only for an error.
func (t *anthTranslation) member(k string, v json.RawMessage) error {
	if anthIsNull(v) {
		if k == "messages" {
			return invalidRequest("/"+k, "messages is required")
		}
		return nil
	}
	var err error
	switch k {
	case "model":
		// The check decided the model: out.NativeModel.
	case "messages":
		if t.fast {
			t.req.System, t.req.Messages, err = anthMessagesFast(v)
		} else {
			t.req.System, t.req.Messages, err = anthMessages(v, false)
		}
	case "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "stop":
		err = t.sampling(k, v)
	case "stream":
		var ok bool
		if t.req.Stream, ok = anthBool(v, t.fast); !ok {
			err = invalidRequest("/"+k, "stream must be a boolean")
		}
	case "user":
		if u, ok := anthString(v, t.fast); !ok {
			err = invalidRequest("/"+k, "user must be a string")
		} else if u != "" {
			t.req.Metadata = &messages.Metadata{UserID: u}
		}
	case "tools":
		t.req.Tools, err = anthTools(v)
	case "tool_choice":
		t.toolChoice = v
	case "stream_options":
		t.includeUsage, err = anthIncludeUsage(v)
	case "thinking":
		// The upstream's own member: sent untouched, its budget read for
		// the default token limit.
		t.thinkingBudget = anthThinkingBudget(v)
		t.passThrough = append(t.passThrough, k) // keys are sorted
	case "parallel_tool_calls":
		var ok bool
		if t.parallel, ok = anthBool(v, t.fast); !ok {
			err = invalidRequest("/"+k, "parallel_tool_calls must be a boolean")
		}
	default:
		var known bool
		if known, err = anthCheckUnsupported(k, v); !known && !anthDropped[k] {
			t.passThrough = append(t.passThrough, k) // keys are sorted
		}
	}
	return err
}

// sampling reads a member that bounds or shapes the sampling: the token
// limits, temperature, top_p, top_k and stop.
func (t *anthTranslation) sampling(k string, v json.RawMessage) error {
	var err error
	switch k {
	case "max_tokens":
		t.maxTokens, err = anthPositiveInt(v, k, t.fast)
	case "max_completion_tokens":
		t.maxCompletion, err = anthPositiveInt(v, k, t.fast)
	case "temperature":
		var f float64
		t.req.Temperature, f, err = anthNumberIn(v, k, 0, 2, t.fast)
		if err == nil && f > 1 {
			err = unsupportedParameter("/"+k, "temperature %s is above 1, the upstream's maximum; rescaling would change the sampling asked for", t.req.Temperature)
		}
	case "top_p":
		t.req.TopP, _, err = anthNumberIn(v, k, 0, 1, t.fast)
	case "top_k":
		// Not a chat-completions member, but a common extension that the
		// upstream has natively: passed through.
		var n int64
		n, err = anthPositiveInt(v, k, t.fast)
		t.req.TopK = strconv.AppendInt(nil, n, 10)
	case "stop":
		t.req.StopSequences, err = anthStopSequences(v, k)
	}
	return err
}

// anthCheckUnsupported checks a chat-completions member the upstream has no
// equivalent for: known reports whether k is one, and err refuses a value
// that asks for what the upstream cannot do (a value that asks for the
// default is accepted, and the member is not sent).
func anthCheckUnsupported(k string, v json.RawMessage) (known bool, err error) {
	switch k {
	case "n":
		var n int64
		if json.Unmarshal(v, &n) != nil || n < 1 {
			err = invalidRequest("/"+k, "n must be a positive integer")
		} else if n > 1 {
			err = unsupportedParameter("/"+k, "n = %d: the upstream returns one choice per request", n)
		}
	case "logprobs":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			err = invalidRequest("/"+k, "logprobs must be a boolean")
		} else if b {
			err = unsupportedParameter("/"+k, "logprobs: the upstream does not return token log probabilities")
		}
	case "top_logprobs":
		var n int64
		if json.Unmarshal(v, &n) != nil || n < 0 {
			err = invalidRequest("/"+k, "top_logprobs must be a non-negative integer")
		} else if n > 0 {
			err = unsupportedParameter("/"+k, "top_logprobs: the upstream does not return token log probabilities")
		}
	case "logit_bias":
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			err = invalidRequest("/"+k, "logit_bias must be an object")
		} else if len(m) > 0 {
			err = unsupportedParameter("/"+k, "logit_bias: the upstream cannot bias tokens")
		}
	case "response_format":
		var rf struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(v, &rf) != nil || rf.Type == "" {
			err = invalidRequest("/"+k, `response_format must be an object with a "type"`)
		} else if rf.Type != "text" {
			err = unsupportedParameter("/"+k, "response_format %q: the upstream cannot constrain the answer to JSON", rf.Type)
		}
	case "modalities":
		var ms []string
		if json.Unmarshal(v, &ms) != nil {
			err = invalidRequest("/"+k, "modalities must be an array of strings")
		}
		for _, m := range ms {
			if m != "text" && err == nil {
				err = unsupportedParameter("/"+k, "modality %q: the upstream answers with text only", m)
			}
		}
	case "functions", "function_call", "reasoning_effort", "audio", "web_search_options":
		// Chat-completions semantics the upstream has no equivalent for.
		err = unsupportedParameter("/"+k, "parameter %q has no equivalent on the upstream", k)
	default:
		return false, nil
	}
	return true, err
}

// read reads a chat body's members into t in keys' order (sorted, so
// that the first error found is always the same one), then settles it;
// messages is required.
func (t *anthTranslation) read(body Body, keys []string) error {
	for _, k := range keys {
		if err := t.member(k, body[k]); err != nil {
			return err
		}
	}
	if _, ok := body["messages"]; !ok {
		return invalidRequest("/messages", "messages is required")
	}
	return t.settle()
}

// settle resolves what depends on several members: the token limit
// (max_completion_tokens over max_tokens, else the default) and the tool
// choice, which needs the tools and parallel_tool_calls.
//
// The upstream counts thinking inside max_tokens and requires the thinking
// budget to be below it, so without a limit of the caller's a thinking
// budget is added to the default: the answer keeps the default's room
// beyond the thinking. A limit the caller set is sent as set, and the
// upstream judges it against the budget.
func (t *anthTranslation) settle() error {
	switch {
	case t.maxCompletion > 0:
		t.req.MaxTokens = t.maxCompletion
	case t.maxTokens > 0:
		t.req.MaxTokens = t.maxTokens
	case t.thinkingBudget > 0:
		t.req.MaxTokens = t.thinkingBudget + anthDefaultMaxTokens
	}
	tc, err := anthToolChoiceOf(t.toolChoice, len(t.req.Tools) > 0, t.parallel)
	if err != nil {
		return err
	}
	t.req.ToolChoice = tc
	return nil
}

// encode writes the Messages body: appended by hand into a buffer of size
// bytes on the fast path, with encoding/json otherwise.
func (t *anthTranslation) encode(size int) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if t.fast {
		b, err = anthAppendRequest(make([]byte, 0, size), &t.req)
	}
	if !t.fast || err != nil {
		// The encoding/json path; on the fast path only for a value the
		// appender refuses (none in practice), so the error is the same.
		b, err = anthMarshal(t.req)
	}
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode request: %w", err)
	}
	return b, nil
}

// anthAppendPassThrough appends the members of body named in keys, untouched,
// to the encoded Messages body b.
func anthAppendPassThrough(b []byte, body Body, keys []string) ([]byte, error) {
	if len(keys) == 0 {
		return b, nil
	}
	for _, k := range keys {
		// An upstream-native member the translation also wrote (system
		// beside system messages, stop_sequences beside stop): sending
		// both would give the upstream two members of one name.
		if jsonscan.Member(b, k) != nil {
			return nil, invalidRequest("/"+k, "%q is also written by the translation of the request's chat-completions members; send one of them", k)
		}
	}
	b = b[:len(b)-1] // drop the closing brace, append the members untouched
	for _, k := range keys {
		b = jsonscan.AppendString(append(b, ','), k)
		b = append(append(b, ':'), body[k]...)
	}
	return append(b, '}'), nil
}

// anthThinkingBudget reads the thinking member's budget_tokens: a positive
// integer of at most nine digits, else 0 (an odd value is the upstream's to
// judge; the default limit then stays as it is).
func anthThinkingBudget(v json.RawMessage) int64 {
	return int64(max(jsonscan.SmallInt(jsonscan.Member(v, "budget_tokens")), 0))
}

// anthIncludeUsage reads stream_options, an object whose include_usage
// asks for a stream's usage chunk.
func anthIncludeUsage(v json.RawMessage) (bool, error) {
	var opts map[string]json.RawMessage
	if json.Unmarshal(v, &opts) != nil {
		return false, invalidRequest("/stream_options", "stream_options must be an object")
	}
	u, ok := opts["include_usage"]
	if !ok || anthIsNull(u) {
		return false, nil
	}
	var include bool
	if json.Unmarshal(u, &include) != nil {
		return false, invalidRequest("/stream_options/include_usage", "include_usage must be a boolean")
	}
	return include, nil
}

// anthPositiveInt reads member k, a positive integer.
func anthPositiveInt(v json.RawMessage, k string, fast bool) (int64, error) {
	var (
		n   int64
		bad bool
	)
	if num := jsonscan.NumberText(v); fast && num != nil {
		// What encoding/json does with a number literal for an int64.
		var err error
		n, err = strconv.ParseInt(string(num), 10, 64)
		bad = err != nil
	} else {
		var m int64 // on the heap: declared here, allocated only here
		bad = json.Unmarshal(v, &m) != nil
		n = m
	}
	if bad || n < 1 {
		return 0, invalidRequest("/"+k, "%s must be a positive integer", k)
	}
	return n, nil
}

// anthNumberIn checks member k, a number, against its range and returns it
// compacted, as written, and its value.
func anthNumberIn(v json.RawMessage, k string, lo, hi float64, fast bool) (json.RawMessage, float64, error) {
	var (
		f   float64
		bad bool
	)
	if num := jsonscan.NumberText(v); fast && num != nil {
		// What encoding/json does with a number literal for a float64.
		var err error
		f, err = strconv.ParseFloat(string(num), 64)
		bad = err != nil
	} else {
		var g float64
		bad = json.Unmarshal(v, &g) != nil
		f = g
	}
	if bad || f < lo || f > hi {
		return nil, 0, invalidRequest("/"+k, "%s must be a number from %g to %g", k, lo, hi)
	}
	return bytes.TrimSpace(v), f, nil
}

// anthBool reads a boolean; ok is false when v is not one.
func anthBool(v json.RawMessage, fast bool) (b, ok bool) {
	if fast {
		switch string(jsonscan.TrimSpace(v)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	ok = json.Unmarshal(v, &b) == nil
	return b, ok
}

// anthString reads a string; ok is false when v is not one.
func anthString(v json.RawMessage, fast bool) (s string, ok bool) {
	if fast {
		t := jsonscan.TrimSpace(v)
		if s, end, ok := jsonscan.ScanString(t, 0); ok && end == len(t) {
			return s, true
		}
	}
	ok = json.Unmarshal(v, &s) == nil
	return s, ok
}

// anthStopSequences converts stop: a string or a list of them; empty ones are
// dropped. A sequence of whitespace alone (stop: "\n" is common) is refused:
// the upstream rejects it, and dropping it would let the answer run past
// where the caller asked it to stop.
func anthStopSequences(v json.RawMessage, k string) ([]string, error) {
	var many []string
	var one string
	switch {
	case json.Unmarshal(v, &one) == nil:
		many = []string{one}
	case json.Unmarshal(v, &many) != nil:
		return nil, invalidRequest("/"+k, "stop must be a string or an array of strings")
	}
	out := many[:0]
	for i, s := range many {
		if s == "" {
			continue
		}
		if strings.TrimSpace(s) == "" {
			p := "/" + k
			if string(bytes.TrimSpace(v))[0] == '[' {
				p += "/" + strconv.Itoa(i)
			}
			return nil, unsupportedParameter(p, "stop sequence %q is whitespace only, which the upstream does not accept", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// anthEmptySchema is the input schema of a function declared without
// parameters: the upstream requires one.
var anthEmptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// anthObjectSchema returns a function's parameters schema with "type":
// "object", which the upstream requires of an input schema and the
// chat-completions API assumes: `{}` (a function without parameters, as
// clients often declare it) becomes the empty object schema, and a schema
// without a type gets one in front.
func anthObjectSchema(schema json.RawMessage) json.RawMessage {
	if jsonscan.Member(schema, "type") != nil {
		return schema
	}
	rest := schema[jsonscan.SkipSpace(schema, 1):]
	if len(rest) > 0 && rest[0] == '}' {
		return anthEmptySchema
	}
	return append([]byte(`{"type":"object",`), rest...)
}

// chatTools reads a chat request's tools member.
func chatTools(v json.RawMessage) ([]chat.Tool, error) {
	var tools []chat.Tool
	if json.Unmarshal(v, &tools) != nil {
		return nil, invalidRequest("/tools", "tools must be an array of tool objects")
	}
	return tools, nil
}

// functionTool checks that a chat tool, at p, is a named function tool:
// the only kind an upstream of another API is given (a translation
// refuses any other, located).
func functionTool(t chat.Tool, p string) error {
	if t.Type != "function" {
		return unsupportedParameter(p+"/type", "tool type %q: only function tools translate", t.Type)
	}
	if t.Function == nil || t.Function.Name == "" {
		return invalidRequest(p+"/function/name", "a function tool needs a name")
	}
	return nil
}

// anthTools converts function tool definitions. A function's "strict" flag
// is not sent: the schema still is, and the upstream's own strict mode is a
// separate feature the connector does not enable.
func anthTools(v json.RawMessage) ([]messages.Tool, error) {
	tools, err := chatTools(v)
	if err != nil {
		return nil, err
	}
	out := make([]messages.Tool, 0, len(tools))
	for i, t := range tools {
		p := "/tools/" + strconv.Itoa(i)
		if err := functionTool(t, p); err != nil {
			return nil, err
		}
		schema := anthEmptySchema
		if !anthIsNull(t.Function.Parameters) {
			schema = bytes.TrimSpace(t.Function.Parameters)
			if schema[0] != '{' {
				return nil, invalidRequest(p+"/function/parameters", "parameters must be a JSON Schema object")
			}
			schema = anthObjectSchema(schema)
		}
		at := messages.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema}
		if !anthIsNull(t.CacheControl) && bytes.TrimSpace(t.CacheControl)[0] == '{' {
			at.CacheControl = t.CacheControl
		}
		out = append(out, at)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// anthToolChoiceOf converts tool_choice: "auto", "none", "required" (any
// tool) or a named function (that tool). parallel_tool_calls=false becomes
// disable_parallel_tool_use.
func anthToolChoiceOf(v json.RawMessage, haveTools, parallel bool) (*messages.ToolChoice, error) {
	const p = "/tool_choice"
	var tc *messages.ToolChoice
	if v != nil {
		var s string
		if json.Unmarshal(v, &s) == nil {
			switch s {
			case "auto":
				tc = &messages.ToolChoice{Type: "auto"}
			case "none":
				tc = &messages.ToolChoice{Type: "none"}
			case "required":
				tc = &messages.ToolChoice{Type: "any"}
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
			tc = &messages.ToolChoice{Type: "tool", Name: named.Function.Name}
		}
	}
	if !haveTools {
		if tc != nil && tc.Type != "none" {
			return nil, invalidRequest(p, "tool_choice is set but no tools are declared")
		}
		return nil, nil
	}
	if !parallel {
		if tc == nil {
			tc = &messages.ToolChoice{Type: "auto"}
		}
		if tc.Type != "none" {
			tc.DisableParallelToolUse = true
		}
	}
	return tc, nil
}
