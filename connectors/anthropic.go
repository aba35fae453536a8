package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// anthropic translates for Anthropic's own Messages API: one provider,
// nothing to rank, no model chain, and a request and answer shape of its own.
// Chat-completions requests are rewritten into Messages requests, and answers
// and event streams back into chat-completions answers and chunks.
type anthropic struct {
	// now stamps the answers' "created" member; tests fix it.
	now func() time.Time
}

var _ Connector = (*anthropic)(nil)

func newAnthropic() *anthropic { return &anthropic{now: time.Now} }

// StreamError is an error Anthropic reported in band: an "error" event in the
// middle of an event stream (the status line already said 200), or an error
// object in an answer that came with a success status.
type StreamError struct {
	// Type is Anthropic's error type, e.g. "overloaded_error".
	Type string
	// Message is Anthropic's message.
	Message string
	// Status is the HTTP status Anthropic documents for the type (529 for
	// overloaded_error, 429 for rate_limit_error, ...), 0 when unknown.
	Status int
}

// Error implements error.
func (e *StreamError) Error() string {
	return "anthropic: in-band error: " + e.Type + ": " + e.Message
}

// anthErrorStatus is the HTTP status Anthropic documents for each error type.
var anthErrorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
	"permission_error": 403, "not_found_error": 404, "request_too_large": 413,
	"rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}

func newStreamError(e anthError) *StreamError {
	return &StreamError{Type: e.Type, Message: e.Message, Status: anthErrorStatus[e.Type]}
}

// Kind implements [Connector.Kind].
func (*anthropic) Kind() string { return "anthropic" }

// Capabilities implements [Connector.Capabilities]. A direct provider: no
// ranking, order, lists, chain or auto mode to express.
func (*anthropic) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: "anthropic"}
}

// Authorize implements [Connector.Authorize]. The version header is part of
// the protocol, so it is set even without a key.
func (*anthropic) Authorize(h http.Header, key string) {
	if key != "" {
		h.Set("x-api-key", key)
	}
	h.Set("anthropic-version", anthropicVersion)
}

// anthDropped are chat-completions members with no Messages API equivalent
// whose absence does not change what the answer means, whatever their value:
// sampling penalties and seed (best-effort knobs), stream options (usage is
// always reported at the end of a stream), storage and billing hints, a
// predicted output (a latency hint), and sluice's own routing object (already
// compiled into the plan).
var anthDropped = map[string]bool{
	"presence_penalty": true, "frequency_penalty": true, "seed": true, "stream_options": true,
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
	req := anthRequest{Model: out.NativeModel, MaxTokens: anthDefaultMaxTokens}
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

	var (
		maxTokens, maxCompletion int64
		toolChoice               json.RawMessage
		parallel                 = true
		passThrough              []string
	)
	for _, k := range keys {
		v := body[k]
		// The member's pointer, "/" + k, is built only for an error.
		if anthIsNull(v) {
			if k == "messages" {
				return nil, invalidRequest("/"+k, "messages is required")
			}
			continue
		}
		var err error
		switch k {
		case "model":
			// The check decided the model: out.NativeModel.
		case "messages":
			if fast {
				req.System, req.Messages, err = anthMessagesFast(v)
			} else {
				req.System, req.Messages, err = anthMessages(v, false)
			}
		case "max_tokens":
			maxTokens, err = anthPositiveInt(v, k, fast)
		case "max_completion_tokens":
			maxCompletion, err = anthPositiveInt(v, k, fast)
		case "temperature":
			var f float64
			req.Temperature, f, err = anthNumberIn(v, k, 0, 2, fast)
			if err == nil && f > 1 {
				err = unsupportedParameter("/"+k, "temperature %s is above 1, the upstream's maximum; rescaling would change the sampling asked for", req.Temperature)
			}
		case "top_p":
			req.TopP, _, err = anthNumberIn(v, k, 0, 1, fast)
		case "top_k":
			// Not a chat-completions member, but a common extension that the
			// upstream has natively: passed through.
			var n int64
			n, err = anthPositiveInt(v, k, fast)
			req.TopK = strconv.AppendInt(nil, n, 10)
		case "stop":
			req.StopSequences, err = anthStopSequences(v, k)
		case "stream":
			var ok bool
			if req.Stream, ok = anthBool(v, fast); !ok {
				err = invalidRequest("/"+k, "stream must be a boolean")
			}
		case "user":
			if u, ok := anthString(v, fast); !ok {
				err = invalidRequest("/"+k, "user must be a string")
			} else if u != "" {
				req.Metadata = &anthMetadata{UserID: u}
			}
		case "tools":
			req.Tools, err = anthTools(v)
		case "tool_choice":
			toolChoice = v
		case "parallel_tool_calls":
			var ok bool
			if parallel, ok = anthBool(v, fast); !ok {
				err = invalidRequest("/"+k, "parallel_tool_calls must be a boolean")
			}
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
			if !anthDropped[k] {
				passThrough = append(passThrough, k) // keys are sorted
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if _, ok := body["messages"]; !ok {
		return nil, invalidRequest("/messages", "messages is required")
	}
	switch {
	case maxCompletion > 0:
		req.MaxTokens = maxCompletion
	case maxTokens > 0:
		req.MaxTokens = maxTokens
	}
	tc, err := anthToolChoiceOf(toolChoice, len(req.Tools) > 0, parallel)
	if err != nil {
		return nil, err
	}
	req.ToolChoice = tc

	var b []byte
	if fast {
		b, err = anthAppendRequest(make([]byte, 0, size), &req)
	}
	if !fast || err != nil {
		// The encoding/json path; on the fast path only for a value the
		// appender refuses (none in practice), so the error is the same.
		b, err = anthMarshal(req)
	}
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode request: %w", err)
	}
	if len(passThrough) > 0 {
		for _, k := range passThrough {
			// An upstream-native member the translation also wrote (system
			// beside system messages, stop_sequences beside stop): sending
			// both would give the upstream two members of one name.
			if jsonscan.Member(b, k) != nil {
				return nil, invalidRequest("/"+k, "%q is also written by the translation of the request's chat-completions members; send one of them", k)
			}
		}
		b = b[:len(b)-1] // drop the closing brace, append the members untouched
		for _, k := range passThrough {
			b = jsonscan.AppendString(append(b, ','), k)
			b = append(append(b, ':'), body[k]...)
		}
		b = append(b, '}')
	}
	// The shared empty header: the gateway only reads it.
	return &Native{Path: "/messages", Header: noHeaders, Body: b}, nil
}

// anthMarshal encodes without HTML escaping: prompts are relayed as written.
func anthMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func anthIsNull(v json.RawMessage) bool {
	return len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), anthNull)
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

// anthMessages converts the chat messages: system and developer messages
// become the top-level system prompt, tool results become user turns, and
// consecutive turns of one role are merged, since the upstream requires the
// roles to alternate. It decodes every message with encoding/json; fast only
// selects the appender for tool results' content.
func anthMessages(v json.RawMessage, fast bool) (anthContent, []anthMessage, error) {
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil {
		return nil, nil, invalidRequest("/messages", "messages must be an array of message objects")
	}
	t := anthTurns{msgs: make([]anthMessage, 0, len(raw))}
	for i, r := range raw {
		if err := t.addRaw(r, i, fast); err != nil {
			return nil, nil, err
		}
	}
	return t.finish()
}

// anthMessagesFast is anthMessages with the messages of the common shape (a
// role and a string content) read by [anthScanMessages] over the raw bytes;
// the other messages are decoded with encoding/json as anthMessages does, and
// anything the scanner cannot vouch for (including invalid JSON) takes
// anthMessages whole, so the result and the first error are the same.
func anthMessagesFast(v json.RawMessage) (anthContent, []anthMessage, error) {
	var elemBuf [8]anthElem
	elems, ok := anthScanMessages(v, elemBuf[:0])
	if !ok {
		return anthMessages(v, true)
	}
	nText := 0
	for _, e := range elems {
		if e.raw == nil && e.text != "" {
			nText++
		}
	}
	// One backing array for the text blocks; each turn gets a full slice of
	// one block, so merging turns copies instead of overwriting a neighbour.
	texts := make([]anthBlock, nText)
	t := anthTurns{msgs: make([]anthMessage, 0, len(elems))}
	for i, e := range elems {
		if e.raw != nil {
			if err := t.addRaw(e.raw, i, true); err != nil {
				return nil, nil, err
			}
			continue
		}
		var blocks anthContent
		if e.text != "" { // anthParts leaves empty texts out
			texts[0] = anthBlock{Type: "text", Text: e.text}
			blocks, texts = texts[:1:1], texts[1:]
		}
		if e.role == "system" || e.role == "developer" {
			t.addSystem(blocks)
		} else {
			t.add(e.role, blocks)
		}
	}
	return t.finish()
}

// anthTurns collects the converted messages.
type anthTurns struct {
	system anthContent
	msgs   []anthMessage
}

// add appends a turn, merged into the previous one of the same role.
func (t *anthTurns) add(role string, blocks anthContent) {
	if len(blocks) == 0 {
		return // an empty turn carries nothing, and the upstream refuses it
	}
	if n := len(t.msgs); n > 0 && t.msgs[n-1].Role == role {
		t.msgs[n-1].Content = append(t.msgs[n-1].Content, blocks...)
		return
	}
	t.msgs = append(t.msgs, anthMessage{Role: role, Content: blocks})
}

// addSystem appends to the system prompt.
func (t *anthTurns) addSystem(blocks anthContent) {
	if t.system == nil {
		t.system = blocks
		return
	}
	t.system = append(t.system, blocks...)
}

// addRaw decodes and adds message i with encoding/json.
func (t *anthTurns) addRaw(r json.RawMessage, i int, fast bool) error {
	p := "/messages/" + strconv.Itoa(i)
	var m oaiMessage
	if err := json.Unmarshal(r, &m); err != nil {
		return invalidRequest(p, "not a valid message object")
	}
	switch m.Role {
	case "system", "developer":
		blocks, err := anthParts(m.Content, p+"/content", anthPartText)
		if err != nil {
			return err
		}
		t.addSystem(blocks)
	case "user":
		blocks, err := anthParts(m.Content, p+"/content", anthPartText|anthPartImage)
		if err != nil {
			return err
		}
		t.add("user", blocks)
	case "assistant":
		blocks, err := anthParts(m.Content, p+"/content", anthPartText|anthPartRefusal)
		if err != nil {
			return err
		}
		if len(blocks) == 0 && m.Refusal != nil && *m.Refusal != "" {
			// A replayed refusal is the assistant's turn: dropping it
			// would merge the user turns around it into one.
			blocks = anthContent{{Type: "text", Text: *m.Refusal}}
		}
		for j, tc := range m.ToolCalls {
			b, err := anthToolUse(tc, fmt.Sprintf("%s/tool_calls/%d", p, j))
			if err != nil {
				return err
			}
			blocks = append(blocks, b)
		}
		t.add("assistant", blocks)
	case "tool":
		if m.ToolCallID == nil || *m.ToolCallID == "" {
			return invalidRequest(p+"/tool_call_id", "a tool message needs the tool_call_id it answers")
		}
		blocks, err := anthParts(m.Content, p+"/content", anthPartText)
		if err != nil {
			return err
		}
		res := anthBlock{Type: "tool_result", ToolUseID: *m.ToolCallID}
		if len(blocks) > 0 {
			if fast {
				res.Content, err = anthAppendContent(nil, blocks)
			}
			if !fast || err != nil {
				res.Content, err = anthMarshal(blocks)
			}
			if err != nil {
				return err
			}
		}
		t.add("user", anthContent{res})
	case "":
		return invalidRequest(p+"/role", "a message needs a role")
	default:
		return invalidRequest(p+"/role", "unsupported role %q (system, developer, user, assistant or tool)", m.Role)
	}
	return nil
}

// finish checks that a turn was left and settles the system prompt.
func (t *anthTurns) finish() (anthContent, []anthMessage, error) {
	system, msgs := t.system, t.msgs
	if len(msgs) == 0 {
		return nil, nil, invalidRequest("/messages", "no user or assistant message with content")
	}
	for i := range msgs {
		if msgs[i].Role == "user" {
			anthToolResultsFirst(msgs[i].Content)
		}
	}
	// One system prompt, the messages' texts joined, unless a part carries a
	// cache marker (then each part stays a block, so the marker keeps its place).
	if len(system) > 1 {
		marked := false
		for _, b := range system {
			marked = marked || len(b.CacheControl) > 0
		}
		if !marked {
			texts := make([]string, len(system))
			for i, b := range system {
				texts[i] = b.Text
			}
			system = anthContent{{Type: "text", Text: strings.Join(texts, "\n\n")}}
		}
	}
	return system, msgs, nil
}

// anthToolResultsFirst moves a user turn's tool results before its other blocks,
// keeping each group's order: the upstream wants the results of the previous
// turn's tool calls first.
func anthToolResultsFirst(c anthContent) {
	other := false
	for _, b := range c {
		if b.Type != "tool_result" {
			other = true
		} else if other {
			sort.SliceStable(c, func(i, j int) bool {
				return c[i].Type == "tool_result" && c[j].Type != "tool_result"
			})
			return
		}
	}
	// Already in order (always so for one block): nothing to move.
}

// Content part kinds a role accepts.
const (
	anthPartText = 1 << iota
	anthPartImage
	anthPartRefusal
)

// anthParts converts a message's content (a string, an array of parts, or
// null) into blocks. Empty texts are left out: the upstream refuses them.
func anthParts(v json.RawMessage, p string, accept int) (anthContent, error) {
	if anthIsNull(v) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return anthContent{{Type: "text", Text: s}}, nil
	}
	var parts []oaiPart
	if json.Unmarshal(v, &parts) != nil {
		return nil, invalidRequest(p, "content must be a string or an array of content parts")
	}
	blocks := make(anthContent, 0, len(parts))
	for j, part := range parts {
		pp := p + "/" + strconv.Itoa(j)
		var b anthBlock
		switch part.Type {
		case "text":
			if part.Text == nil {
				return nil, invalidRequest(pp+"/text", "a text part needs its text")
			}
			b = anthBlock{Type: "text", Text: *part.Text}
		case "refusal":
			if accept&anthPartRefusal == 0 || part.Refusal == nil {
				return nil, invalidRequest(pp+"/type", "a refusal part belongs to an assistant message and needs its refusal")
			}
			b = anthBlock{Type: "text", Text: *part.Refusal}
		case "image_url":
			if accept&anthPartImage == 0 {
				return nil, invalidRequest(pp+"/type", "images are accepted in user messages only")
			}
			src, err := anthImage(part.ImageURL, pp+"/image_url")
			if err != nil {
				return nil, err
			}
			b = anthBlock{Type: "image", Source: src}
		case "input_audio", "file":
			return nil, unsupportedParameter(pp+"/type", "content part %q: the connector sends text and images only", part.Type)
		default:
			return nil, invalidRequest(pp+"/type", "unknown content part type %q", part.Type)
		}
		if b.Type == "text" && b.Text == "" {
			continue
		}
		if len(part.CacheControl) > 0 && !anthIsNull(part.CacheControl) {
			if bytes.TrimSpace(part.CacheControl)[0] != '{' {
				return nil, invalidRequest(pp+"/cache_control", "cache_control must be an object")
			}
			b.CacheControl = part.CacheControl
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// anthImageTypes are the image media types the upstream accepts.
var anthImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// anthImage converts an image_url (an object with a url, or the url alone): a
// base64 data URL becomes inline data, an http(s) URL a URL source.
func anthImage(v json.RawMessage, p string) (*anthImageSource, error) {
	var u oaiImageURL
	if json.Unmarshal(v, &u) != nil {
		if json.Unmarshal(v, &u.URL) != nil {
			return nil, invalidRequest(p, "image_url must be an object with a url")
		}
	}
	switch {
	case strings.HasPrefix(u.URL, "https://"), strings.HasPrefix(u.URL, "http://"):
		return &anthImageSource{Type: "url", URL: u.URL}, nil
	case strings.HasPrefix(u.URL, "data:"):
		meta, data, ok := strings.Cut(u.URL[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, invalidRequest(p+"/url", "a data URL must be base64-encoded (data:<type>;base64,<data>)")
		}
		mt, _, _ := strings.Cut(meta, ";")
		mt = strings.ToLower(mt)
		if !anthImageTypes[mt] {
			return nil, invalidRequest(p+"/url", "image type %q is not accepted (image/jpeg, image/png, image/gif or image/webp)", mt)
		}
		if data == "" {
			return nil, invalidRequest(p+"/url", "the data URL has no data")
		}
		return &anthImageSource{Type: "base64", MediaType: mt, Data: data}, nil
	}
	return nil, invalidRequest(p+"/url", "an image URL must be https://, http:// or a base64 data URL")
}

// anthToolUse converts an assistant tool call; its JSON-encoded arguments
// become the input object.
func anthToolUse(tc oaiToolCall, p string) (anthBlock, error) {
	if tc.Type != "" && tc.Type != "function" {
		return anthBlock{}, unsupportedParameter(p+"/type", "tool call type %q: only function calls translate", tc.Type)
	}
	if tc.ID == "" {
		return anthBlock{}, invalidRequest(p+"/id", "a tool call needs an id")
	}
	if tc.Function.Name == "" {
		return anthBlock{}, invalidRequest(p+"/function/name", "a tool call needs a function name")
	}
	input := json.RawMessage("{}")
	if a := tc.Function.Arguments; a != nil && strings.TrimSpace(*a) != "" {
		raw := json.RawMessage(strings.TrimSpace(*a))
		if !json.Valid(raw) || raw[0] != '{' {
			return anthBlock{}, invalidRequest(p+"/function/arguments", "arguments must be a JSON object encoded as a string")
		}
		input = raw
	}
	return anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input}, nil
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

// anthTools converts function tool definitions. A function's "strict" flag
// is not sent: the schema still is, and the upstream's own strict mode is a
// separate feature the connector does not enable.
func anthTools(v json.RawMessage) ([]anthTool, error) {
	var tools []oaiTool
	if json.Unmarshal(v, &tools) != nil {
		return nil, invalidRequest("/tools", "tools must be an array of tool objects")
	}
	out := make([]anthTool, 0, len(tools))
	for i, t := range tools {
		p := "/tools/" + strconv.Itoa(i)
		if t.Type != "function" {
			return nil, unsupportedParameter(p+"/type", "tool type %q: only function tools translate", t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			return nil, invalidRequest(p+"/function/name", "a function tool needs a name")
		}
		schema := anthEmptySchema
		if !anthIsNull(t.Function.Parameters) {
			schema = bytes.TrimSpace(t.Function.Parameters)
			if schema[0] != '{' {
				return nil, invalidRequest(p+"/function/parameters", "parameters must be a JSON Schema object")
			}
			schema = anthObjectSchema(schema)
		}
		at := anthTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema}
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
func anthToolChoiceOf(v json.RawMessage, haveTools, parallel bool) (*anthToolChoice, error) {
	const p = "/tool_choice"
	var tc *anthToolChoice
	if v != nil {
		var s string
		if json.Unmarshal(v, &s) == nil {
			switch s {
			case "auto":
				tc = &anthToolChoice{Type: "auto"}
			case "none":
				tc = &anthToolChoice{Type: "none"}
			case "required":
				tc = &anthToolChoice{Type: "any"}
			default:
				return nil, invalidRequest(p, "tool_choice %q is not auto, none or required", s)
			}
		} else {
			var named oaiNamedToolChoice
			if json.Unmarshal(v, &named) != nil {
				return nil, invalidRequest(p, "tool_choice must be a string or a named function")
			}
			switch {
			case named.Type != "function":
				return nil, unsupportedParameter(p+"/type", "tool_choice type %q: only a named function translates", named.Type)
			case named.Function.Name == "":
				return nil, invalidRequest(p+"/function/name", "tool_choice names no function")
			}
			tc = &anthToolChoice{Type: "tool", Name: named.Function.Name}
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
			tc = &anthToolChoice{Type: "auto"}
		}
		if tc.Type != "none" {
			tc.DisableParallelToolUse = true
		}
	}
	return tc, nil
}

// anthFinish maps a stop reason to a chat-completions finish reason.
func anthFinish(stop *string) string {
	if stop == nil {
		return "stop"
	}
	switch *stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn and any new reason
}

// anthTokens is an answer's usage, totals resolved.
type anthTokens struct {
	input, output, cacheCreate, cacheRead int64
}

// merge takes the members a usage object reports; absent ones keep their
// value (a stream's message_delta may repeat only output_tokens).
func (t *anthTokens) merge(u anthUsage) {
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&t.input, u.InputTokens)
	set(&t.output, u.OutputTokens)
	set(&t.cacheCreate, u.CacheCreationInputTokens)
	set(&t.cacheRead, u.CacheReadInputTokens)
}

// prompt is every input token, cached or not: the chat-completions API counts
// cached tokens inside prompt_tokens.
func (t anthTokens) prompt() int64 { return t.input + t.cacheCreate + t.cacheRead }

func (t anthTokens) usage() Usage {
	return Usage{PromptTokens: t.prompt(), CompletionTokens: t.output, CachedTokens: t.cacheRead}
}

// Response implements [Connector.Response].
func (c *anthropic) Response(call *Call, body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: "anthropic"}
	var m anthResponse
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, res, fmt.Errorf("anthropic: decode answer: %w", err)
	}
	if m.Type == "error" || m.Error != nil {
		var e anthError
		if m.Error != nil {
			e = *m.Error
		}
		return nil, res, newStreamError(e)
	}
	if m.Type != "message" {
		return nil, res, fmt.Errorf("anthropic: answer of type %q, want message", m.Type)
	}
	res.ServedModel = directServed(call, "anthropic", m.Model)
	var tok anthTokens
	tok.merge(m.Usage)
	res.Usage = tok.usage()
	res.FinishReason = anthFinish(m.StopReason)

	msg := oaiOutMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "tool_use":
			tc := oaiOutToolCall{ID: b.ID, Type: "function"}
			tc.Function.Name = b.Name
			tc.Function.Arguments = "{}"
			if len(b.Input) > 0 && !anthIsNull(b.Input) {
				var buf bytes.Buffer
				if err := json.Compact(&buf, b.Input); err != nil {
					return nil, res, fmt.Errorf("anthropic: tool input: %w", err)
				}
				tc.Function.Arguments = buf.String()
			}
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	out := oaiCompletion{
		ID: m.ID, Object: "chat.completion", Created: c.now().Unix(), Model: res.ServedModel,
		Choices: []oaiChoice{{Message: msg, Logprobs: anthNull, FinishReason: res.FinishReason}},
		Usage:   oaiUsage{PromptTokens: tok.prompt(), CompletionTokens: tok.output, TotalTokens: tok.prompt() + tok.output},
	}
	out.Usage.PromptTokensDetails.CachedTokens = tok.cacheRead
	b, err := anthMarshal(out)
	if err != nil {
		return nil, res, fmt.Errorf("anthropic: encode answer: %w", err)
	}
	return b, res, nil
}

// NewStream implements [Connector.NewStream].
func (c *anthropic) NewStream(call *Call) Stream {
	return &anthStream{call: call, now: c.now, res: Result{ServedProvider: "anthropic"}}
}

// anthStream translates one Messages API event stream into chat.completion
// chunks. Each chunk is built in one reused buffer (the emit callback must
// consume it before returning, as it must consume the event data), and text
// and tool-argument deltas are copied from the event as raw JSON strings
// without decoding them: a text delta costs no allocation.
type anthStream struct {
	call *Call
	now  func() time.Time

	started, done bool
	// head is `{"id":…,"object":"chat.completion.chunk","created":…,"model":…,`,
	// the start of every chunk.
	head []byte
	buf  []byte
	// tools maps content block indexes to tool call indexes.
	tools []anthToolIndex
	tok   anthTokens
	res   Result
}

// anthToolIndex ties a content block to its tool call; args records whether
// any argument text was relayed for it.
type anthToolIndex struct {
	block, tool int
	args        bool
}

var (
	anthChoiceOpen  = []byte(`"choices":[{"index":0,"delta":`)
	anthChoiceClose = []byte(`,"logprobs":null,"finish_reason":null}]}`)
)

// ErrAnthropicStream reports a malformed or out-of-order event stream.
var ErrAnthropicStream = errors.New("anthropic: malformed event stream")

// Event implements [Stream.Event].
func (s *anthStream) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if s.done {
		return true, nil
	}
	if !json.Valid(data) {
		return false, fmt.Errorf("%w: event data is not JSON", ErrAnthropicStream)
	}
	typ := jsonscan.StringContent(jsonscan.Member(data, "type"))
	if typ == nil {
		typ = event
	}
	switch string(typ) {
	case "ping":
		return false, nil
	case "content_block_stop":
		// A tool called without arguments streams none (or only an empty
		// partial_json): its arguments are "{}", as in a whole answer.
		t := s.tool(jsonscan.SmallInt(jsonscan.Member(data, "index")))
		if t == nil || t.args {
			return false, nil
		}
		t.args = true
		s.buf = s.open()
		s.buf = append(s.buf, `{"tool_calls":[{"index":`...)
		s.buf = strconv.AppendInt(s.buf, int64(t.tool), 10)
		s.buf = append(s.buf, `,"function":{"arguments":"{}"}}]}`...)
		s.buf = append(s.buf, anthChoiceClose...)
		return false, emit(s.buf)
	case "error":
		var e anthErrorEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrAnthropicStream, err)
		}
		se := newStreamError(e.Error)
		s.res.FinishReason = "error"
		// The chat-completions error shape; code is the HTTP status Anthropic
		// documents for the type (null when unknown), as marketplaces report
		// in-band errors, so a client can tell overload from a bad request.
		var payload struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    *int   `json:"code"`
			} `json:"error"`
		}
		payload.Error.Message, payload.Error.Type = se.Message, se.Type
		if se.Status != 0 {
			payload.Error.Code = &se.Status
		}
		b, err := anthMarshal(payload)
		if err != nil {
			return false, err
		}
		s.res.StreamError = string(b)
		if err := emit(b); err != nil {
			return false, err
		}
		return false, se
	case "message_start":
		if s.started {
			return false, fmt.Errorf("%w: a second message_start", ErrAnthropicStream)
		}
		var e anthStartEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrAnthropicStream, err)
		}
		s.started = true
		s.res.ServedModel = directServed(s.call, "anthropic", e.Message.Model)
		s.tok.merge(e.Message.Usage)
		s.head = append(s.head[:0], `{"id":`...)
		s.head = jsonscan.AppendString(s.head, e.Message.ID)
		s.head = append(s.head, `,"object":"chat.completion.chunk","created":`...)
		s.head = strconv.AppendInt(s.head, s.now().Unix(), 10)
		s.head = append(s.head, `,"model":`...)
		s.head = jsonscan.AppendString(s.head, s.res.ServedModel)
		s.head = append(s.head, ',')
		return false, s.emitDelta(emit, []byte(`{"role":"assistant","content":""}`))
	}
	if !s.started {
		return false, fmt.Errorf("%w: %q before message_start", ErrAnthropicStream, typ)
	}
	switch string(typ) {
	case "content_block_delta":
		delta := jsonscan.Member(data, "delta")
		switch string(jsonscan.StringContent(jsonscan.Member(delta, "type"))) {
		case "text_delta":
			text := jsonscan.Member(delta, "text")
			if len(text) < 3 || text[0] != '"' { // absent, not a string, or ""
				return false, nil
			}
			s.buf = s.open()
			s.buf = append(s.buf, `{"content":`...)
			s.buf = append(s.buf, text...)
			s.buf = append(s.buf, '}')
			s.buf = append(s.buf, anthChoiceClose...)
			return false, emit(s.buf)
		case "input_json_delta":
			part := jsonscan.Member(delta, "partial_json")
			if len(part) < 3 || part[0] != '"' {
				return false, nil
			}
			t := s.tool(jsonscan.SmallInt(jsonscan.Member(data, "index")))
			if t == nil {
				return false, fmt.Errorf("%w: input_json_delta for a block that is not a tool call", ErrAnthropicStream)
			}
			t.args = true
			s.buf = s.open()
			s.buf = append(s.buf, `{"tool_calls":[{"index":`...)
			s.buf = strconv.AppendInt(s.buf, int64(t.tool), 10)
			s.buf = append(s.buf, `,"function":{"arguments":`...)
			s.buf = append(s.buf, part...)
			s.buf = append(s.buf, `}}]}`...)
			s.buf = append(s.buf, anthChoiceClose...)
			return false, emit(s.buf)
		}
		return false, nil // thinking, signature, citations: not relayed
	case "content_block_start":
		var e anthBlockStartEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrAnthropicStream, err)
		}
		switch e.ContentBlock.Type {
		case "text":
			if e.ContentBlock.Text == "" {
				return false, nil
			}
			d, _ := anthMarshal(map[string]string{"content": e.ContentBlock.Text})
			return false, s.emitDelta(emit, d)
		case "tool_use":
			tool := len(s.tools)
			s.tools = append(s.tools, anthToolIndex{block: e.Index, tool: tool})
			d := append([]byte(`{"tool_calls":[{"index":`), strconv.Itoa(tool)...)
			d = append(d, `,"id":`...)
			d = jsonscan.AppendString(d, e.ContentBlock.ID)
			d = append(d, `,"type":"function","function":{"name":`...)
			d = jsonscan.AppendString(d, e.ContentBlock.Name)
			d = append(d, `,"arguments":""}}]}`...)
			return false, s.emitDelta(emit, d)
		}
		return false, nil
	case "message_delta":
		var e anthMessageDeltaEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return false, fmt.Errorf("%w: %w", ErrAnthropicStream, err)
		}
		s.tok.merge(e.Usage)
		if e.Delta.StopReason == nil {
			return false, nil
		}
		s.res.FinishReason = anthFinish(e.Delta.StopReason)
		s.buf = s.open()
		s.buf = append(s.buf, `{},"logprobs":null,"finish_reason":`...)
		s.buf = jsonscan.AppendString(s.buf, s.res.FinishReason)
		s.buf = append(s.buf, "}]}"...)
		return false, emit(s.buf)
	case "message_stop":
		s.done = true
		s.res.Usage = s.tok.usage()
		s.buf = append(s.buf[:0], s.head...)
		s.buf = append(s.buf, `"choices":[],"usage":{"prompt_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, s.tok.prompt(), 10)
		s.buf = append(s.buf, `,"completion_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, s.tok.output, 10)
		s.buf = append(s.buf, `,"total_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, s.tok.prompt()+s.tok.output, 10)
		s.buf = append(s.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, s.tok.cacheRead, 10)
		s.buf = append(s.buf, "}}}"...)
		if err := emit(s.buf); err != nil {
			return true, err
		}
		// The end marker a chat-completions client waits for, as the
		// OpenAI-shaped upstreams relay it.
		return true, emit(doneData)
	}
	return false, nil // a new event type: ignored, as the upstream asks
}

// open starts a chunk in the reused buffer, up to the delta.
func (s *anthStream) open() []byte {
	b := append(s.buf[:0], s.head...)
	return append(b, anthChoiceOpen...)
}

// emitDelta emits a chunk with a delta object and no finish reason.
func (s *anthStream) emitDelta(emit func([]byte) error, delta []byte) error {
	s.buf = s.open()
	s.buf = append(s.buf, delta...)
	s.buf = append(s.buf, anthChoiceClose...)
	return emit(s.buf)
}

// tool returns the tool call of a content block, or nil.
func (s *anthStream) tool(block int) *anthToolIndex {
	for i := range s.tools {
		if s.tools[i].block == block {
			return &s.tools[i]
		}
	}
	return nil
}

// Result implements [Stream.Result].
func (s *anthStream) Result() Result {
	r := s.res
	r.Usage = s.tok.usage()
	return r
}
