package connectors

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/connectors/wire/chat"
)

// The translation of a Messages request's content into chat messages: the
// system prompt, the user and assistant turns, their content blocks (text,
// images, documents, tool results, tool calls, thinking) and their cache
// markers.

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

// add appends a translated message.
func (t *msgTranslation) add(m chatMsg) {
	b, _ := anthMarshal(m) // plain data
	t.msgs = append(t.msgs, b)
}
