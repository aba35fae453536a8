package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Scripted tool calls, for agent tests: a user turn carrying
// [[sim:call NAME {json args}]] makes every upstream answer with a call to
// the tool NAME (when the request offers it), and, once the tool's result
// comes back, with text quoting the result. See the package documentation.

// directivePrefix opens a tool-call directive in a user turn's text.
const directivePrefix = "[[sim:call "

// toolCall is one scripted call: the tool's name, its arguments as JSON
// text, and the seed its ids are made from.
type toolCall struct {
	name string
	args string
	seed string
}

// callID is the call's id in one of the upstreams' forms: prefix and n
// letters and digits ("call_" and 24 for OpenAI, "toolu_01" and 22 for
// Anthropic).
func (c *toolCall) callID(prefix string, n int) string {
	return prefix + token("tool call "+c.seed, n, alnum)
}

// argsObject is the call's arguments as a JSON object (Anthropic's input).
func (c *toolCall) argsObject() json.RawMessage { return json.RawMessage(c.args) }

// script is what a request's directives ask of its answer: a call, or
// (every directed call answered) text that quotes the tools' results.
type script struct {
	call *toolCall
	text string
}

// turn is one message of a conversation, whatever its upstream: who spoke,
// the text it says, and the tool results it carries.
type turn struct {
	role    string
	text    string
	results []string
}

// directive is one parsed [[sim:call …]].
type directive struct {
	name string
	args string
}

// parseDirectives returns the well-formed directives of text, in order. A
// directive is "[[sim:call", a space, the tool's name, optionally a JSON
// object of arguments, and "]]"; a malformed one is ignored, as text.
func parseDirectives(text string) []directive {
	var out []directive
	for {
		i := strings.Index(text, directivePrefix)
		if i < 0 {
			return out
		}
		rest := strings.TrimLeft(text[i+len(directivePrefix):], " ")
		text = rest
		end := strings.IndexAny(rest, " ]{")
		if end <= 0 {
			continue
		}
		d := directive{name: rest[:end], args: "{}"}
		rest = strings.TrimLeft(rest[end:], " ")
		if strings.HasPrefix(rest, "{") {
			dec := json.NewDecoder(strings.NewReader(rest))
			var obj map[string]any
			if dec.Decode(&obj) != nil {
				continue
			}
			n := int(dec.InputOffset())
			var compact bytes.Buffer
			if json.Compact(&compact, []byte(rest[:n])) != nil {
				continue
			}
			d.args = compact.String()
			rest = strings.TrimLeft(rest[n:], " ")
		}
		if !strings.HasPrefix(rest, "]]") {
			continue
		}
		out = append(out, d)
		text = rest[2:]
	}
}

// scriptFor reads the directives of a conversation's last user turn that
// has text, keeping those naming an offered tool. The k-th of them is
// called once k tool results follow that turn; when every one has its
// result, the answer is text quoting each result verbatim. nil: no
// directive applies, and the upstream answers as it would.
func scriptFor(turns []turn, offered []string, seed string) *script {
	last := -1
	for i, t := range turns {
		if t.role == "user" && strings.TrimSpace(t.text) != "" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var ds []directive
	for _, d := range parseDirectives(turns[last].text) {
		for _, name := range offered {
			if name == d.name {
				ds = append(ds, d)
				break
			}
		}
	}
	if len(ds) == 0 {
		return nil
	}
	var results []string
	for _, t := range turns[last+1:] {
		results = append(results, t.results...)
	}
	if len(results) < len(ds) {
		d := ds[len(results)]
		return &script{call: &toolCall{name: d.name, args: d.args, seed: fmt.Sprint(seed, "/", len(results))}}
	}
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = fmt.Sprintf("tool %s returned: %s", d.name, results[i])
	}
	return &script{text: strings.Join(lines, "\n")}
}

// textOf is a content's text: a string, or the text of its parts (OpenAI's
// text and input_text parts, Anthropic's text blocks) joined by newlines.
// Parts of other types (images, tool results) say nothing.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "", "text", "input_text", "output_text":
			if p.Text != "" {
				out = append(out, p.Text)
			}
		}
	}
	return strings.Join(out, "\n")
}

// chatTurns reads an OpenAI-shaped conversation: role "tool" messages carry
// results.
func chatTurns(msgs []chatMessage) []turn {
	out := make([]turn, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "tool" {
			out = append(out, turn{role: "tool", results: []string{textOf(m.Content)}})
			continue
		}
		out = append(out, turn{role: m.Role, text: textOf(m.Content)})
	}
	return out
}

// anthropicTurns reads a Messages conversation: tool_result blocks in a
// user turn carry results (their content a string or text blocks), and
// its text blocks its text.
func anthropicTurns(msgs []chatMessage) []turn {
	out := make([]turn, 0, len(msgs))
	for _, m := range msgs {
		t := turn{role: m.Role, text: textOf(m.Content)}
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					t.results = append(t.results, textOf(b.Content))
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// chatTools names the function tools of an OpenAI-shaped request.
type chatTools []struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (ts chatTools) names() []string {
	var out []string
	for _, t := range ts {
		if t.Function.Name != "" {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// anthropicTools names the tools of a Messages request.
type anthropicTools []struct {
	Name string `json:"name"`
}

func (ts anthropicTools) names() []string {
	var out []string
	for _, t := range ts {
		if t.Name != "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// textOr is the script's text, or def when the script has none (no
// script, or a call).
func (sc *script) textOr(def string) string {
	if sc == nil || sc.call != nil {
		return def
	}
	return sc.text
}

// toolCall is the script's call, or nil.
func (sc *script) toolCall() *toolCall {
	if sc == nil {
		return nil
	}
	return sc.call
}

// argPieces splits a call's arguments into the short pieces a stream
// carries them in, at most 8 bytes each (never inside a UTF-8 sequence).
func argPieces(args string) []string {
	var out []string
	for len(args) > 0 {
		n := min(8, len(args))
		for n < len(args) && !utf8.RuneStart(args[n]) {
			n++
		}
		out = append(out, args[:n])
		args = args[n:]
	}
	return out
}
