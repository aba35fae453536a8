package connectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The anthropic connector's translation of a request's messages: system
// prompt, alternating turns, content parts, images and tool calls, with a
// fast path for the common shape read straight from the bytes.

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

// anthElem is one element of a messages array: a message of the common shape
// decoded (role and text), or the raw element for encoding/json.
type anthElem struct {
	role, text string
	raw        []byte
}

// anthScanMessages reads a messages array into elems. A message of the
// common shape (role system, developer, user or assistant, written without
// escapes; content a string, null or absent; other members only ones that
// encoding/json ignores) is decoded; any other element is kept raw after
// checking that it is valid JSON. ok is false unless all of v is a valid JSON
// array.
func anthScanMessages(v []byte, elems []anthElem) ([]anthElem, bool) {
	i := jsonscan.SkipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return nil, false
	}
	i = jsonscan.SkipSpace(v, i+1)
	if i < len(v) && v[i] == ']' {
		return elems, jsonscan.SkipSpace(v, i+1) == len(v)
	}
	for {
		e, end, ok := anthScanMessage(v, i)
		if !ok {
			end = jsonscan.SkipValue(v, i)
			if end > len(v) || end <= i || !json.Valid(v[i:end]) {
				return nil, false
			}
			e = anthElem{raw: v[i:end]}
		}
		elems = append(elems, e)
		i = jsonscan.SkipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		if v[i] == ']' {
			return elems, jsonscan.SkipSpace(v, i+1) == len(v)
		}
		if v[i] != ',' {
			return nil, false
		}
		i = jsonscan.SkipSpace(v, i+1)
	}
}

// anthScanMessage decodes the message object starting at v[i] when it has
// the common shape, and returns the index after it.
func anthScanMessage(v []byte, i int) (e anthElem, end int, ok bool) {
	if i >= len(v) || v[i] != '{' {
		return e, 0, false
	}
	var role, content bool
	for i = jsonscan.SkipSpace(v, i+1); ; i = jsonscan.SkipSpace(v, i+1) {
		if i >= len(v) || v[i] != '"' {
			return e, 0, false // includes {}: no role
		}
		ks := i
		if i = jsonscan.SkipString(v, i); i > len(v) {
			return e, 0, false
		}
		key := v[ks+1 : i-1]
		i = jsonscan.SkipSpace(v, i)
		if i >= len(v) || v[i] != ':' {
			return e, 0, false
		}
		i = jsonscan.SkipSpace(v, i+1)
		switch string(key) {
		case "role":
			end, escaped, ok := jsonscan.StringEnd(v, i)
			if role || !ok || escaped {
				return e, 0, false
			}
			role = true
			switch string(v[i+1 : end-1]) {
			case "system":
				e.role = "system"
			case "developer":
				e.role = "developer"
			case "user":
				e.role = "user"
			case "assistant":
				e.role = "assistant"
			default:
				return e, 0, false
			}
			i = end
		case "content":
			if content {
				return e, 0, false
			}
			content = true
			if len(v)-i >= 4 && string(v[i:i+4]) == "null" {
				i += 4
				break
			}
			s, end, ok := jsonscan.ScanString(v, i)
			if !ok {
				return e, 0, false
			}
			e.text, i = s, end
		default:
			if !anthIgnoredKey(key) {
				return e, 0, false
			}
			end := jsonscan.SkipValue(v, i)
			if end > len(v) || end <= i || !json.Valid(v[i:end]) {
				return e, 0, false
			}
			i = end
		}
		i = jsonscan.SkipSpace(v, i)
		if i >= len(v) {
			return e, 0, false
		}
		if v[i] == '}' {
			break
		}
		if v[i] != ',' {
			return e, 0, false
		}
	}
	if !role {
		return e, 0, false
	}
	return e, i + 1, true
}

// anthIgnoredKey reports whether encoding/json surely ignores the member
// named key when decoding an [oaiMessage]: printable ASCII without escapes,
// and no field's name in any letter case.
func anthIgnoredKey(key []byte) bool {
	for _, c := range key {
		if c < ' ' || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return !jsonscan.FoldsTo(key, "role", "content", "tool_calls", "tool_call_id", "refusal")
}
