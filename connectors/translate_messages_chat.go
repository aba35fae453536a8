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

// CheckMessages checks a Messages API request body (sluice's routing
// member removed) for what every upstream would refuse, with the JSON
// pointer of the member at fault: a model; a positive max_tokens (unless
// count is set: a token count takes none); a non-empty list of turns, each
// of role user or assistant with string or block-list content, not every
// one of them empty; a boolean stream; a thinking object of a known type,
// with a positive budget when enabled. It is the gateway's check, shallow
// on purpose, like [ParseResponses]: a request passed natively is
// validated by its upstream, and one translated is read whole by its
// translation ([ParseMessages] is that reading's verdict).
func CheckMessages(body Body, count bool) *TranslateError {
	// In the full translation's order: members sorted, the required ones
	// missing after. Scanned, not decoded: this runs on every Messages
	// request, native ones included.
	if v, ok := body["max_tokens"]; ok {
		if count {
			return invalidRequest("/max_tokens", "a token count takes no max_tokens")
		}
		if _, err := anthPositiveInt(v, "max_tokens", true); err != nil {
			return err.(*TranslateError)
		}
	}
	if raw, ok := body["messages"]; ok {
		if err := checkTurns(raw); err != nil {
			return err
		}
	}
	if v, ok := body["model"]; ok {
		v = jsonscan.TrimSpace(v)
		if len(v) < 2 || v[0] != '"' || len(bytes.TrimSpace(jsonscan.StringContent(v))) == 0 {
			return invalidRequest("/model", "model must be a non-empty string")
		}
	}
	if v, ok := body["stream"]; ok {
		if s := string(jsonscan.TrimSpace(v)); s != "true" && s != "false" {
			return invalidRequest("/stream", "stream must be a boolean")
		}
	}
	if v, ok := body["thinking"]; ok && !anthIsNull(v) {
		var t msgTranslation
		if err := t.thinking(v); err != nil {
			return err.(*TranslateError)
		}
	}
	for _, k := range [...]string{"model", "max_tokens", "messages"} {
		if k == "max_tokens" && count {
			continue
		}
		if _, ok := body[k]; !ok {
			return invalidRequest("/"+k, "%s is required", k)
		}
	}
	return nil
}

// eachElement calls f with each element of a JSON array, in order, until f
// returns false; ok is false when arr is not an array it can walk.
func eachElement(arr []byte, f func(i int, elem []byte) bool) (n int, ok bool) {
	arr = jsonscan.TrimSpace(arr)
	if len(arr) < 2 || arr[0] != '[' {
		return 0, false
	}
	i := jsonscan.SkipSpace(arr, 1)
	if i < len(arr) && arr[i] == ']' {
		return 0, true
	}
	for {
		end := jsonscan.SkipValue(arr, i)
		if end <= i || end > len(arr) {
			return n, false
		}
		if !f(n, arr[i:end]) {
			return n + 1, true
		}
		n++
		i = jsonscan.SkipSpace(arr, end)
		switch {
		case i < len(arr) && arr[i] == ',':
			i = jsonscan.SkipSpace(arr, i+1)
		case i < len(arr) && arr[i] == ']':
			return n, true
		default:
			return n, false
		}
	}
}

// checkTurns is [CheckMessages]'s check of the turns, in the words of the
// full translation's (msgTranslation.messages). It scans; turns the scan
// finds at fault are read again by the translation itself, whose verdict is
// the one given, so that the two never differ where a scan and encoding/json
// read a body differently (a member written twice: the scan sees the first,
// encoding/json keeps the last; a member name in another case).
func checkTurns(v json.RawMessage) *TranslateError {
	if scanTurns(v) == nil {
		return nil
	}
	t := msgTranslation{d: fullDialect, out: Body{}}
	return asTranslateError(t.messages(v), "/messages")
}

// asTranslateError is a translation's error as a [TranslateError] (an
// invalid_request at param for any other error); nil for nil.
func asTranslateError(err error, param string) *TranslateError {
	if err == nil {
		return nil
	}
	var te *TranslateError
	if errors.As(err, &te) {
		return te
	}
	return invalidRequest(param, "%s", err.Error())
}

// scanTurns is checkTurns's scan.
func scanTurns(v json.RawMessage) *TranslateError {
	if !json.Valid(v) {
		return invalidRequest("/messages", "messages must be a non-empty array of message objects")
	}
	var bad *TranslateError
	said := false
	n, ok := eachElement(v, func(i int, m []byte) bool {
		if len(m) == 0 || m[0] != '{' {
			bad = invalidRequest("/messages/"+strconv.Itoa(i), "not a valid message object")
			return false
		}
		content := jsonscan.Member(m, "content")
		if len(content) == 0 || anthIsNull(content) {
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/content", "a message needs its content")
			return false
		}
		if !said && !scannedEmptyContent(content) {
			said = true
		}
		role := jsonscan.Member(m, "role")
		switch string(jsonscan.StringContent(role)) {
		case "user", "assistant":
		case "":
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/role", "a message needs a role")
			return false
		default:
			var r string
			_ = json.Unmarshal(role, &r)
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/role", "unsupported role %q (user or assistant)", r)
			return false
		}
		return true
	})
	switch {
	case bad != nil:
		return bad
	case !ok || n == 0:
		return invalidRequest("/messages", "messages must be a non-empty array of message objects")
	case !said:
		return invalidRequest("/messages", "every turn of messages has empty content: at least one needs non-blank text or another content block")
	}
	return nil
}

// scannedEmptyContent is [emptyContent] by a scan: a blank string, no
// blocks, or only text blocks whose text is blank (escapes are read as
// written, so an escaped character counts as content).
func scannedEmptyContent(v []byte) bool {
	v = jsonscan.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		return len(bytes.TrimSpace(jsonscan.StringContent(v))) == 0
	}
	empty := true
	eachElement(v, func(_ int, b []byte) bool {
		if string(jsonscan.StringContent(jsonscan.Member(b, "type"))) != "text" ||
			len(bytes.TrimSpace(jsonscan.StringContent(jsonscan.Member(b, "text")))) > 0 {
			empty = false
			return false
		}
		return true
	})
	return empty
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

// msgBlock is a content block of a Messages request, any type: the members
// the translation reads.
type msgBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Source       json.RawMessage `json:"source"`
	Title        string          `json:"title"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Thinking     *string         `json:"thinking"`
	Signature    *string         `json:"signature"`
	Data         *string         `json:"data"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// msgSource is an image's or a document's source.
type msgSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
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

// cacheControl returns a block's cache marker as the dialect sends it: kept,
// or dropped and recorded as lost. A marker that is not an object is the
// caller's mistake.
func (t *msgTranslation) cacheControl(v json.RawMessage, p string) (json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || anthIsNull(v) {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, invalidRequest(p+"/cache_control", "cache_control must be an object")
	}
	if !t.d.cacheControl {
		t.lose(DegradedCacheControl)
		return nil, nil
	}
	return v, nil
}

// blocks decodes a content array.
func blocks(v json.RawMessage, p string) ([]msgBlock, error) {
	var bs []msgBlock
	if json.Unmarshal(v, &bs) != nil {
		return nil, invalidRequest(p, "content must be a string or an array of content blocks")
	}
	return bs, nil
}

// system translates the system prompt, a string or an array of text
// blocks, into one system message.
func (t *msgTranslation) system(v json.RawMessage) ([]json.RawMessage, error) {
	if anthIsNull(v) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return nil, nil
		}
		m, _ := anthMarshal(chatMsg{Role: "system", Content: mustString(s)})
		return []json.RawMessage{m}, nil
	}
	bs, err := blocks(v, "/system")
	if err != nil {
		return nil, invalidRequest("/system", "system must be a string or an array of text blocks")
	}
	parts := make([]chatPart, 0, len(bs))
	for i, b := range bs {
		p := "/system/" + strconv.Itoa(i)
		if b.Type != "text" || b.Text == nil {
			return nil, invalidRequest(p, "a system block must be a text block with its text")
		}
		cc, err := t.cacheControl(b.CacheControl, p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, chatPart{Type: "text", Text: b.Text, CacheControl: cc})
	}
	if len(parts) == 0 {
		return nil, nil
	}
	m, err := anthMarshal(chatMsg{Role: "system", Content: partsContent(parts)})
	return []json.RawMessage{m}, err
}

// messages translates the turns. A user turn's tool_result blocks become
// tool messages, ahead of the turn's other blocks, as the chat shape wants
// a tool call's result right after the call; an assistant turn's thinking
// blocks become its reasoning_details, its tool_use blocks its tool calls.
func (t *msgTranslation) messages(v json.RawMessage) error {
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil || len(raw) == 0 {
		return invalidRequest("/messages", "messages must be a non-empty array of message objects")
	}
	said := false // some turn carries content
	for i, r := range raw {
		p := "/messages/" + strconv.Itoa(i)
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r, &m) != nil {
			return invalidRequest(p, "not a valid message object")
		}
		if len(m.Content) == 0 || anthIsNull(m.Content) {
			return invalidRequest(p+"/content", "a message needs its content")
		}
		if !said && !emptyContent(m.Content) {
			said = true
		}
		var err error
		switch m.Role {
		case "user":
			err = t.user(m.Content, p+"/content")
		case "assistant":
			err = t.assistant(m.Content, p+"/content")
		case "":
			err = invalidRequest(p+"/role", "a message needs a role")
		default:
			err = invalidRequest(p+"/role", "unsupported role %q (user or assistant)", m.Role)
		}
		if err != nil {
			return err
		}
	}
	if !said {
		// Translated, nothing would be left to send.
		return invalidRequest("/messages", "every turn of messages has empty content: at least one needs non-blank text or another content block")
	}
	return nil
}

// emptyContent reports whether a turn's content carries nothing: a blank
// string, no blocks, or only blank text blocks. Content of another shape is
// not empty; the turn's own translation says what is wrong with it.
func emptyContent(v json.RawMessage) bool {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.TrimSpace(s) == ""
	}
	var bs []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(v, &bs) != nil {
		return false
	}
	for _, b := range bs {
		if b.Type != "text" || b.Text == nil || strings.TrimSpace(*b.Text) != "" {
			return false
		}
	}
	return true
}

// user translates a user turn.
func (t *msgTranslation) user(v json.RawMessage, p string) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		t.add(chatMsg{Role: "user", Content: mustString(s)})
		return nil
	}
	bs, err := blocks(v, p)
	if err != nil {
		return err
	}
	var parts []chatPart
	for i, b := range bs {
		bp := p + "/" + strconv.Itoa(i)
		cc, err := t.cacheControl(b.CacheControl, bp)
		if err != nil {
			return err
		}
		switch b.Type {
		case "text":
			if b.Text == nil {
				return invalidRequest(bp+"/text", "a text block needs its text")
			}
			parts = append(parts, chatPart{Type: "text", Text: b.Text, CacheControl: cc})
		case "image":
			part, err := t.image(b.Source, bp+"/source")
			if err != nil {
				return err
			}
			if part != nil {
				part.CacheControl = cc
				parts = append(parts, *part)
			}
		case "document":
			part, err := t.document(b, bp)
			if err != nil {
				return err
			}
			if part != nil {
				part.CacheControl = cc
				parts = append(parts, *part)
			}
		case "tool_result":
			if err := t.toolResult(b, bp); err != nil {
				return err
			}
		case "":
			return invalidRequest(bp+"/type", "a content block needs a type")
		default:
			t.unsupported(bp+"/type", "content block type %q has no equivalent in the chat-completions shape", b.Type)
		}
	}
	if len(parts) > 0 {
		t.add(chatMsg{Role: "user", Content: partsContent(parts)})
	}
	return nil
}

// image translates an image's source into an image_url part: base64 data
// as a data URL, a URL as it is.
func (t *msgTranslation) image(v json.RawMessage, p string) (*chatPart, error) {
	var src msgSource
	if json.Unmarshal(v, &src) != nil {
		return nil, invalidRequest(p, "an image needs a source object")
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" || src.Data == "" {
			return nil, invalidRequest(p, "a base64 image source needs its media_type and data")
		}
		return &chatPart{Type: "image_url", ImageURL: &chat.ImageURL{URL: "data:" + src.MediaType + ";base64," + src.Data}}, nil
	case "url":
		if src.URL == "" {
			return nil, invalidRequest(p+"/url", "a url image source needs its url")
		}
		return &chatPart{Type: "image_url", ImageURL: &chat.ImageURL{URL: src.URL}}, nil
	}
	t.unsupported(p+"/type", "image source type %q has no equivalent in the chat-completions shape", src.Type)
	return nil, nil
}

// document translates a document: a base64 PDF becomes a file part, plain
// text a text part.
func (t *msgTranslation) document(b msgBlock, p string) (*chatPart, error) {
	var src msgSource
	if json.Unmarshal(b.Source, &src) != nil {
		return nil, invalidRequest(p+"/source", "a document needs a source object")
	}
	switch {
	case src.Type == "base64" && src.MediaType == "application/pdf" && src.Data != "":
		name := b.Title
		if name == "" {
			name = "document.pdf"
		}
		return &chatPart{Type: "file", File: &chatFile{Filename: name, FileData: "data:application/pdf;base64," + src.Data}}, nil
	case src.Type == "text":
		text := src.Data
		return &chatPart{Type: "text", Text: &text}, nil
	}
	t.unsupported(p+"/source", "a document of source type %q (%s) has no equivalent in the chat-completions shape; base64 PDFs and plain text translate", src.Type, src.MediaType)
	return nil, nil
}

// toolResult translates a tool_result block into a tool message. Its
// is_error flag has no chat equivalent and is not sent; the result's text
// tells the model what went wrong.
func (t *msgTranslation) toolResult(b msgBlock, p string) error {
	if b.ToolUseID == "" {
		return invalidRequest(p+"/tool_use_id", "a tool_result block needs the tool_use_id it answers")
	}
	content := mustString("")
	if len(b.Content) > 0 && !anthIsNull(b.Content) {
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			content = mustString(s)
		} else {
			bs, err := blocks(b.Content, p+"/content")
			if err != nil {
				return err
			}
			parts := make([]chatPart, 0, len(bs))
			for i, rb := range bs {
				rp := p + "/content/" + strconv.Itoa(i)
				cc, err := t.cacheControl(rb.CacheControl, rp)
				if err != nil {
					return err
				}
				switch {
				case rb.Type == "text" && rb.Text != nil:
					parts = append(parts, chatPart{Type: "text", Text: rb.Text, CacheControl: cc})
				case rb.Type == "text":
					return invalidRequest(rp+"/text", "a text block needs its text")
				default:
					t.unsupported(rp+"/type", "a tool result's %q block has no equivalent in a chat-completions tool message, which carries text only", rb.Type)
				}
			}
			content = partsContent(parts)
		}
	}
	cc, err := t.cacheControl(b.CacheControl, p)
	if err != nil {
		return err
	}
	if cc != nil {
		// The chat shape marks content parts, not messages: the marker goes
		// on the result's last part.
		content = markLast(content, cc)
	}
	t.add(chatMsg{Role: "tool", ToolCallID: b.ToolUseID, Content: content})
	return nil
}

// markLast puts a cache marker on a content's last part, turning a string
// into one text part.
func markLast(content json.RawMessage, cc json.RawMessage) json.RawMessage {
	var parts []chatPart
	var s string
	if json.Unmarshal(content, &s) == nil {
		parts = []chatPart{{Type: "text", Text: &s}}
	} else if json.Unmarshal(content, &parts) != nil || len(parts) == 0 {
		return content
	}
	parts[len(parts)-1].CacheControl = cc
	b, _ := anthMarshal(parts)
	return b
}

// assistant translates an assistant turn.
func (t *msgTranslation) assistant(v json.RawMessage, p string) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		t.add(chatMsg{Role: "assistant", Content: mustString(s)})
		return nil
	}
	bs, err := blocks(v, p)
	if err != nil {
		return err
	}
	m := chatMsg{Role: "assistant"}
	var parts []chatPart
	for i, b := range bs {
		bp := p + "/" + strconv.Itoa(i)
		cc, err := t.cacheControl(b.CacheControl, bp)
		if err != nil {
			return err
		}
		switch b.Type {
		case "text":
			if b.Text == nil {
				return invalidRequest(bp+"/text", "a text block needs its text")
			}
			parts = append(parts, chatPart{Type: "text", Text: b.Text, CacheControl: cc})
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return invalidRequest(bp, "a tool_use block needs its id and name")
			}
			args := "{}"
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && !anthIsNull(in) {
				if in[0] != '{' {
					return invalidRequest(bp+"/input", "a tool_use block's input must be an object")
				}
				var buf bytes.Buffer
				if json.Compact(&buf, in) == nil {
					args = buf.String()
				}
			}
			tc := chat.OutToolCall{ID: b.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = b.Name, args
			m.ToolCalls = append(m.ToolCalls, tc)
		case "thinking":
			if b.Thinking == nil || b.Signature == nil {
				return invalidRequest(bp, "a thinking block needs its thinking and signature")
			}
			// Only signed thinking can go back to a model of the upstream
			// that wrote it; another model has no use for it.
			if *b.Signature != "" && t.d.reasoning {
				m.ReasoningDetails = append(m.ReasoningDetails, chat.ReasoningDetail{Type: "reasoning.text", Text: b.Thinking,
					Signature: b.Signature, Format: anthReasoningFormat, Index: len(m.ReasoningDetails)})
			}
		case "redacted_thinking":
			if b.Data == nil {
				return invalidRequest(bp+"/data", "a redacted_thinking block needs its data")
			}
			if t.d.reasoning {
				m.ReasoningDetails = append(m.ReasoningDetails, chat.ReasoningDetail{Type: "reasoning.encrypted", Data: b.Data,
					Format: anthReasoningFormat, Index: len(m.ReasoningDetails)})
			}
		case "":
			return invalidRequest(bp+"/type", "a content block needs a type")
		default:
			t.unsupported(bp+"/type", "content block type %q has no equivalent in the chat-completions shape", b.Type)
		}
	}
	switch {
	case len(parts) > 0:
		m.Content = partsContent(parts)
	case len(m.ToolCalls) > 0:
		m.Content = json.RawMessage("null")
	default:
		m.Content = mustString("")
	}
	t.add(m)
	return nil
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

// add appends a translated message.
func (t *msgTranslation) add(m chatMsg) {
	b, _ := anthMarshal(m) // plain data
	t.msgs = append(t.msgs, b)
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
