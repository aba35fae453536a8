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
	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// The anthropic connector's translation of a request's messages: system
// prompt, alternating turns, content parts, images and tool calls, with a
// fast path for the common shape read straight from the bytes.

// anthMessages converts the chat messages: system and developer messages
// become the top-level system prompt, tool results become user turns, and
// consecutive turns of one role are merged, since the upstream requires the
// roles to alternate. It decodes every message with encoding/json; fast only
// selects the appender for tool results' content.
func anthMessages(v json.RawMessage, fast bool) (messages.Content, []messages.Message, error) {
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil {
		return nil, nil, invalidRequest("/messages", "messages must be an array of message objects")
	}
	t := anthTurns{msgs: make([]messages.Message, 0, len(raw))}
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
func anthMessagesFast(v json.RawMessage) (messages.Content, []messages.Message, error) {
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
	texts := make([]messages.Block, nText)
	t := anthTurns{msgs: make([]messages.Message, 0, len(elems))}
	for i, e := range elems {
		if e.raw != nil {
			if err := t.addRaw(e.raw, i, true); err != nil {
				return nil, nil, err
			}
			continue
		}
		var blocks messages.Content
		if e.text != "" { // anthParts leaves empty texts out
			texts[0] = messages.Block{Type: "text", Text: e.text}
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
	system messages.Content
	msgs   []messages.Message
}

// add appends a turn, merged into the previous one of the same role.
func (t *anthTurns) add(role string, blocks messages.Content) {
	if len(blocks) == 0 {
		return // an empty turn carries nothing, and the upstream refuses it
	}
	if n := len(t.msgs); n > 0 && t.msgs[n-1].Role == role {
		t.msgs[n-1].Content = append(t.msgs[n-1].Content, blocks...)
		return
	}
	t.msgs = append(t.msgs, messages.Message{Role: role, Content: blocks})
}

// addSystem appends to the system prompt.
func (t *anthTurns) addSystem(blocks messages.Content) {
	if t.system == nil {
		t.system = blocks
		return
	}
	t.system = append(t.system, blocks...)
}

// addRaw decodes and adds message i with encoding/json.
func (t *anthTurns) addRaw(r json.RawMessage, i int, fast bool) error {
	p := "/messages/" + strconv.Itoa(i)
	var m chat.Message
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
			blocks = messages.Content{{Type: "text", Text: *m.Refusal}}
		}
		reasoning, err := anthReasoning(m.ReasoningDetails, p)
		if err != nil {
			return err
		}
		if len(reasoning) > 0 {
			// The upstream wants a turn's thinking before its text and
			// tool calls.
			blocks = append(reasoning, blocks...)
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
		res := messages.Block{Type: "tool_result", ToolUseID: *m.ToolCallID}
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
		t.add("user", messages.Content{res})
	case "":
		return invalidRequest(p+"/role", "a message needs a role")
	default:
		return invalidRequest(p+"/role", "unsupported role %q (system, developer, user, assistant or tool)", m.Role)
	}
	return nil
}

// finish checks that a turn was left and settles the system prompt.
func (t *anthTurns) finish() (messages.Content, []messages.Message, error) {
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
			system = messages.Content{{Type: "text", Text: strings.Join(texts, "\n\n")}}
		}
	}
	return system, msgs, nil
}

// anthToolResultsFirst moves a user turn's tool results before its other blocks,
// keeping each group's order: the upstream wants the results of the previous
// turn's tool calls first.
func anthToolResultsFirst(c messages.Content) {
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

// anthReasoning converts an assistant message's reasoning_details back into
// the thinking and redacted_thinking blocks they came from, in order: a
// reasoning.text entry becomes a thinking block (its text and signature),
// a reasoning.encrypted entry a redacted_thinking block (its data). Only
// entries of the format anthReasoningFormat translate; entries of any other
// format, or of none, were written for another upstream's model and are
// dropped (the upstream would refuse their signatures). A message's
// reasoning text ("reasoning") is not read: it carries no signature.
//
// Entries that share an index are one block: a client that joined a
// stream's deltas sends the text in pieces, then the signature alone (with
// empty signatures beside the pieces, as some marketplaces stream them).
// The pieces are joined in order; a block takes the place of its index's
// first entry. A thinking block must end up with a signature, which the
// upstream requires and checks.
//
// p is the message's pointer: the member's is built only when it is there.
func anthReasoning(v json.RawMessage, p string) (messages.Content, error) {
	if anthIsNull(v) {
		return nil, nil
	}
	p += "/reasoning_details"
	var entries []json.RawMessage
	if json.Unmarshal(v, &entries) != nil {
		return nil, invalidRequest(p, "reasoning_details must be an array of reasoning entries")
	}
	var (
		blocks messages.Content
		merge  []anthReasoningMerge // one per block
	)
	for j, raw := range entries {
		pj := p + "/" + strconv.Itoa(j)
		e, ok, err := anthReasoningEntry(raw, pj)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // another format's
		}
		at := -1
		for k := range merge {
			if e.index >= 0 && merge[k].index == e.index {
				at = k
				break
			}
		}
		if at < 0 {
			blocks = append(blocks, messages.Block{Type: e.block})
			merge = append(merge, anthReasoningMerge{index: e.index, entry: pj})
			at = len(merge) - 1
		}
		b, m := &blocks[at], &merge[at]
		switch {
		case b.Type != e.block:
			return nil, invalidRequest(pj+"/type", "index %d began as another type of entry (%s): the entries of one index are one block", e.index, m.entry)
		case e.block == "redacted_thinking":
			if b.RareMembers != nil {
				return nil, invalidRequest(pj+"/index", "index %d already holds a reasoning.encrypted entry (%s)", e.index, m.entry)
			}
			b.RareMembers = &messages.RareMembers{Data: &e.data}
		default:
			m.text = append(m.text, e.text...)
			if e.signature != "" {
				if m.signature != "" && m.signature != e.signature {
					return nil, invalidRequest(pj+"/signature", "index %d already has another signature (%s)", e.index, m.entry)
				}
				m.signature = e.signature
			}
		}
	}
	for k := range blocks {
		if blocks[k].Type != "thinking" {
			continue
		}
		m := &merge[k]
		if m.signature == "" {
			return nil, invalidRequest(m.entry, "a reasoning.text entry of format %s needs its signature, which the upstream requires of thinking it is sent back (a stream sends it in a delta of its own, after the text)", anthReasoningFormat)
		}
		text := string(m.text)
		blocks[k].RareMembers = &messages.RareMembers{Thinking: &text, Signature: &m.signature}
	}
	return blocks, nil
}

// anthReasoningMerge is what the entries of one block have given so far:
// the index they share (-1: an entry without one, a block of its own), the
// pointer to the first of them, and a thinking block's text and signature.
// (The text is a byte slice, not a strings.Builder: the merges live in a
// slice that append copies.)
type anthReasoningMerge struct {
	index     int64
	entry     string
	text      []byte
	signature string
}

// anthReasoningPiece is one reasoning_details entry that translates: the
// block type it gives, its index (-1 when it has none) and its members.
type anthReasoningPiece struct {
	block                 string
	index                 int64
	text, signature, data string
}

// anthReasoningEntry reads the reasoning_details entry at pointer p; ok is
// false for an entry of another format, which is dropped unread.
func anthReasoningEntry(raw json.RawMessage, p string) (e anthReasoningPiece, ok bool, err error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return e, false, invalidRequest(p, "a reasoning_details entry must be an object")
	}
	format, ok := anthOptString(m["format"])
	if !ok {
		return e, false, invalidRequest(p+"/format", "format must be a string")
	}
	if format != anthReasoningFormat {
		return e, false, nil
	}
	e.index = -1
	if v := m["index"]; !anthIsNull(v) {
		if json.Unmarshal(v, &e.index) != nil || e.index < 0 {
			return e, false, invalidRequest(p+"/index", "index must be a non-negative integer")
		}
	}
	typ, _ := anthOptString(m["type"])
	switch typ {
	case "reasoning.text":
		e.block = "thinking"
		for _, f := range [...]struct {
			name string
			dst  *string
		}{{"text", &e.text}, {"signature", &e.signature}} {
			if *f.dst, ok = anthOptString(m[f.name]); !ok {
				return e, false, invalidRequest(p+"/"+f.name, "%s must be a string", f.name)
			}
		}
	case "reasoning.encrypted":
		e.block = "redacted_thinking"
		if e.data, ok = anthOptString(m["data"]); !ok || e.data == "" {
			return e, false, invalidRequest(p+"/data", "a reasoning.encrypted entry needs its data, a string")
		}
	default:
		return e, false, invalidRequest(p+"/type", "reasoning_details type %q of format %s: only reasoning.text and reasoning.encrypted entries translate", typ, anthReasoningFormat)
	}
	return e, true, nil
}

// anthOptString reads an optional string member: "" when absent or null;
// ok is false when it is something else.
func anthOptString(v json.RawMessage) (s string, ok bool) {
	if anthIsNull(v) {
		return "", true
	}
	return s, json.Unmarshal(v, &s) == nil
}

// Content part kinds a role accepts.
const (
	anthPartText = 1 << iota
	anthPartImage
	anthPartRefusal
)

// anthParts converts a message's content (a string, an array of parts, or
// null) into blocks. Empty texts are left out: the upstream refuses them.
func anthParts(v json.RawMessage, p string, accept int) (messages.Content, error) {
	if anthIsNull(v) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return messages.Content{{Type: "text", Text: s}}, nil
	}
	var parts []chat.Part
	if json.Unmarshal(v, &parts) != nil {
		return nil, invalidRequest(p, "content must be a string or an array of content parts")
	}
	blocks := make(messages.Content, 0, len(parts))
	for j, part := range parts {
		pp := p + "/" + strconv.Itoa(j)
		var b messages.Block
		switch part.Type {
		case "text":
			if part.Text == nil {
				return nil, invalidRequest(pp+"/text", "a text part needs its text")
			}
			b = messages.Block{Type: "text", Text: *part.Text}
		case "refusal":
			if accept&anthPartRefusal == 0 || part.Refusal == nil {
				return nil, invalidRequest(pp+"/type", "a refusal part belongs to an assistant message and needs its refusal")
			}
			b = messages.Block{Type: "text", Text: *part.Refusal}
		case "image_url":
			if accept&anthPartImage == 0 {
				return nil, invalidRequest(pp+"/type", "images are accepted in user messages only")
			}
			src, err := anthImage(part.ImageURL, pp+"/image_url")
			if err != nil {
				return nil, err
			}
			b = messages.Block{Type: "image", RareMembers: &messages.RareMembers{Source: src}}
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
func anthImage(v json.RawMessage, p string) (*messages.ImageSource, error) {
	var u chat.ImageURL
	if json.Unmarshal(v, &u) != nil {
		if json.Unmarshal(v, &u.URL) != nil {
			return nil, invalidRequest(p, "image_url must be an object with a url")
		}
	}
	switch {
	case strings.HasPrefix(u.URL, "https://"), strings.HasPrefix(u.URL, "http://"):
		return &messages.ImageSource{Type: "url", URL: u.URL}, nil
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
		return &messages.ImageSource{Type: "base64", MediaType: mt, Data: data}, nil
	}
	return nil, invalidRequest(p+"/url", "an image URL must be https://, http:// or a base64 data URL")
}

// anthToolUse converts an assistant tool call; its JSON-encoded arguments
// become the input object.
func anthToolUse(tc chat.ToolCall, p string) (messages.Block, error) {
	if tc.Type != "" && tc.Type != "function" {
		return messages.Block{}, unsupportedParameter(p+"/type", "tool call type %q: only function calls translate", tc.Type)
	}
	if tc.ID == "" {
		return messages.Block{}, invalidRequest(p+"/id", "a tool call needs an id")
	}
	if tc.Function.Name == "" {
		return messages.Block{}, invalidRequest(p+"/function/name", "a tool call needs a function name")
	}
	input := json.RawMessage("{}")
	if a := tc.Function.Arguments; a != nil && strings.TrimSpace(*a) != "" {
		raw := json.RawMessage(strings.TrimSpace(*a))
		if !json.Valid(raw) || raw[0] != '{' {
			return messages.Block{}, invalidRequest(p+"/function/arguments", "arguments must be a JSON object encoded as a string")
		}
		input = raw
	}
	return messages.Block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input}, nil
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
// named key when decoding a [chat.Message]: printable ASCII without escapes,
// and no field's name in any letter case.
func anthIgnoredKey(key []byte) bool {
	for _, c := range key {
		if c < ' ' || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return !jsonscan.FoldsTo(key, "role", "content", "tool_calls", "tool_call_id", "refusal", "reasoning_details")
}
