package connectors

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/connectors/wire/chat"
	"github.com/sluicegw/sluice/connectors/wire/gemini"
)

// The Gemini dialect's message conversion: chat messages become
// generateContent contents. System and developer messages become the
// system instruction; user messages user turns; assistant messages model
// turns, their tool calls functionCall parts; tool messages user turns of
// functionResponse parts. Adjacent turns of one role are merged, so that
// the results of parallel calls share one turn, as generateContent asks.
//
// generateContent has no tool call ids: a call and its result are tied by
// the function's name (and, among calls of one name, by their order). The
// answer's tool calls get ids sluice makes up (see [geminiCallID]), which
// carry the call's thoughtSignature back to the model; a tool message's
// tool_call_id is looked up among the earlier assistant messages' tool
// calls for the function's name.

// geminiContents converts the messages member.
func geminiContents(v json.RawMessage) (*gemini.Content, []gemini.Content, error) {
	var msgs []chat.Message
	if err := json.Unmarshal(v, &msgs); err != nil {
		return nil, nil, invalidRequest("/messages", "messages must be an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, nil, invalidRequest("/messages", "messages must not be empty")
	}
	var system *gemini.Content
	var out []gemini.Content
	names := map[string]string{} // tool call id → function name
	add := func(role string, parts []gemini.Part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, gemini.Content{Role: role, Parts: parts})
	}
	for i, m := range msgs {
		p := "/messages/" + strconv.Itoa(i)
		switch m.Role {
		case "system", "developer":
			parts, err := geminiParts(m.Content, p, false)
			if err != nil {
				return nil, nil, err
			}
			if system == nil {
				system = &gemini.Content{}
			}
			system.Parts = append(system.Parts, parts...)
		case "user":
			parts, err := geminiParts(m.Content, p, true)
			if err != nil {
				return nil, nil, err
			}
			add("user", parts)
		case "assistant":
			parts, err := geminiParts(m.Content, p, false)
			if err != nil {
				return nil, nil, err
			}
			if m.Refusal != nil && *m.Refusal != "" && len(parts) == 0 {
				parts = append(parts, geminiText(*m.Refusal))
			}
			for j, tc := range m.ToolCalls {
				q := p + "/tool_calls/" + strconv.Itoa(j)
				if tc.Function.Name == "" {
					return nil, nil, invalidRequest(q+"/function/name", "a tool call needs a function name")
				}
				args := json.RawMessage(`{}`)
				if tc.Function.Arguments != nil && strings.TrimSpace(*tc.Function.Arguments) != "" {
					a := json.RawMessage(*tc.Function.Arguments)
					if !json.Valid(a) || bytes.TrimSpace(a)[0] != '{' {
						return nil, nil, invalidRequest(q+"/function/arguments", "tool call arguments must be a JSON object")
					}
					args = a
				}
				names[tc.ID] = tc.Function.Name
				parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{Name: tc.Function.Name, Args: args},
					ThoughtSignature: geminiSignatureOf(tc.ID)})
			}
			add("model", parts)
		case "tool":
			if m.ToolCallID == nil {
				return nil, nil, invalidRequest(p+"/tool_call_id", "a tool message needs the tool_call_id it answers")
			}
			name, ok := names[*m.ToolCallID]
			if !ok {
				return nil, nil, invalidRequest(p+"/tool_call_id", "tool_call_id %q names no tool call of an earlier assistant message", *m.ToolCallID)
			}
			text, err := geminiToolText(m.Content, p)
			if err != nil {
				return nil, nil, err
			}
			resp := append(append([]byte(`{"result":`), jsonscan.AppendString(nil, text)...), '}')
			add("user", []gemini.Part{{FunctionResponse: &gemini.FunctionResponse{Name: name, Response: resp}}})
		default:
			return nil, nil, invalidRequest(p+"/role", "role %q is not system, developer, user, assistant or tool", m.Role)
		}
	}
	if len(out) == 0 {
		return nil, nil, invalidRequest("/messages", "messages hold no user or assistant content")
	}
	return system, out, nil
}

// geminiText is a text part.
func geminiText(s string) gemini.Part { return gemini.Part{Text: &s} }

// geminiParts converts a message's content: a string, or an array of
// parts (text; images only in a user message, inline from a data: URL).
func geminiParts(v json.RawMessage, p string, images bool) ([]gemini.Part, error) {
	if anthIsNull(v) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []gemini.Part{geminiText(s)}, nil
	}
	var parts []chat.Part
	if json.Unmarshal(v, &parts) != nil {
		return nil, invalidRequest(p+"/content", "content must be a string or an array of content parts")
	}
	out := make([]gemini.Part, 0, len(parts))
	for i, part := range parts {
		q := p + "/content/" + strconv.Itoa(i)
		switch part.Type {
		case "text":
			if part.Text == nil {
				return nil, invalidRequest(q+"/text", "a text part needs its text")
			}
			if *part.Text != "" {
				out = append(out, geminiText(*part.Text))
			}
		case "refusal":
			if part.Refusal != nil && *part.Refusal != "" {
				out = append(out, geminiText(*part.Refusal))
			}
		case "image_url":
			if !images {
				return nil, invalidRequest(q, "an image part is allowed in a user message only")
			}
			var img chat.ImageURL
			if json.Unmarshal(part.ImageURL, &img) != nil || img.URL == "" {
				return nil, invalidRequest(q+"/image_url", "image_url must be an object with a url")
			}
			blob, ok := geminiDataURL(img.URL)
			if !ok {
				return nil, unsupportedParameter(q+"/image_url/url", "an image by URL: generateContent takes images inline (a base64 data: URL)")
			}
			out = append(out, gemini.Part{InlineData: blob})
		default:
			return nil, unsupportedParameter(q+"/type", "content part type %q does not translate to generateContent", part.Type)
		}
	}
	return out, nil
}

// geminiDataURL reads a data: URL of base64 data into a blob.
func geminiDataURL(u string) (*gemini.Blob, bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, false
	}
	meta, data, ok := strings.Cut(rest, ",")
	mime, ok2 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || mime == "" {
		return nil, false
	}
	return &gemini.Blob{MimeType: mime, Data: data}, true
}

// geminiToolText is a tool message's content as text: a string, or its
// text parts joined.
func geminiToolText(v json.RawMessage, p string) (string, error) {
	if anthIsNull(v) {
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	var parts []chat.Part
	if json.Unmarshal(v, &parts) != nil {
		return "", invalidRequest(p+"/content", "content must be a string or an array of text parts")
	}
	var b strings.Builder
	for i, part := range parts {
		if part.Type != "text" || part.Text == nil {
			return "", unsupportedParameter(p+"/content/"+strconv.Itoa(i)+"/type", "a tool result part of type %q does not translate to generateContent", part.Type)
		}
		b.WriteString(*part.Text)
	}
	return b.String(), nil
}
