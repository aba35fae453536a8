package connectors

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/wire/converse"
	"github.com/sluicegw/sluice/connectors/wire/messages"
)

// bedrockConverse is the bedrock connector's dialect for every model that
// is not Anthropic's (Llama, Mistral, Amazon Nova, gpt-oss, ...): Bedrock
// serves them through its own Converse API (POST /model/{modelId}/converse)
// and ConverseStream (POST /model/{modelId}/converse-stream, in the binary
// event-stream framing the bedrock connector's [Framer] reads). A chat
// request is read by the anthropic connector's translation (its checks,
// refusals and conversions of turns, tools and images are the Messages
// column's) and written as a Converse request; what Converse cannot carry
// of it is refused or, for a hint, recorded as degraded. Answers and
// streams are retold as the Messages API's and read by the anthropic
// connector's readers, with the served provider amazon-bedrock and the
// served model the id sent (Converse reports no model). Messages and
// Responses requests reach it through chat (it speaks neither natively).
//
// Signing and framing stay the upstream's (*bedrock's): the gateway asks
// the upstream's connector for them, never the dialect.
type bedrockConverse struct {
	// up is the bedrock connector whose dialect this is.
	up *bedrock
	// anth reads the answers retold in the Messages API's shape, as served
	// by amazon-bedrock.
	anth *anthropic
	// newID names an answer (Converse gives none); tests fix it.
	newID func() string
}

var (
	_ Connector     = (*bedrockConverse)(nil)
	_ foreignErrors = (*bedrockConverse)(nil)
	_ foreignAPI    = (*bedrockConverse)(nil)
	_ dialects      = (*bedrock)(nil)
)

// newBedrockConverse builds the Converse dialect of a bedrock connector.
func newBedrockConverse(up *bedrock) *bedrockConverse {
	return &bedrockConverse{up: up, anth: &anthropic{now: time.Now, provider: bedrockProvider}, newID: bedrockAnswerID}
}

// dialect implements dialects: an Anthropic model (its id names the
// provider "anthropic.", behind a cross-region inference profile's prefix
// or not) is the bedrock connector's own, in the Messages API; every
// other model is spoken to through Converse.
func (b *bedrock) dialect(nativeModel string) Connector {
	if nativeModel == "" || bedrockIsAnthropic(nativeModel) || b.converse == nil {
		return nil
	}
	return b.converse
}

// bedrockIsAnthropic reports whether a Bedrock model id names one of
// Anthropic's models: "anthropic.<model>", with or without a cross-region
// inference profile's region prefix ("us.", "eu.", "global.", ...).
func bedrockIsAnthropic(id string) bool {
	return strings.HasPrefix(strings.ToLower(bedrockFoundationModel(id)), "anthropic.")
}

// Kind implements [Connector.Kind]: the upstream's kind.
func (*bedrockConverse) Kind() string { return "bedrock" }

// foreignAPI implements foreignAPI: explain's ASKED says "via converse".
func (*bedrockConverse) foreignAPI() string { return "converse" }

// Capabilities implements [Connector.Capabilities]: the upstream's.
func (c *bedrockConverse) Capabilities() compiler.Capabilities { return c.up.Capabilities() }

// Authorize implements [Connector.Authorize]: a Bedrock API key is a bearer
// token; without one the upstream signs the request.
func (*bedrockConverse) Authorize(h http.Header, key string) { bearer(h, key) }

// foreignErrors implements [foreignErrors]: Converse answers errors as
// {"message": …}, the type in the x-amzn-ErrorType header, which a chat
// caller gets retold in the chat shape.
func (*bedrockConverse) foreignErrors() {}

// converseDropped are the chat members read by the anthropic translation
// that Converse has no place for and whose loss changes nothing the answer
// means: the end user's id (Converse's requestMetadata is for log
// filtering, not the model).
var converseDropped = map[string]bool{"user": true}

// converseOwn are Converse's own top-level members besides those the
// translation writes: a caller may set them (they pass through untouched,
// and Bedrock judges them).
var converseOwn = map[string]bool{
	"additionalModelRequestFields": true, "additionalModelResponseFieldPaths": true,
	"guardrailConfig": true, "performanceConfig": true, "promptVariables": true,
	"requestMetadata": true, "serviceTier": true,
}

// Translate implements [Connector.Translate]: the chat request read by the
// anthropic translation, then written as a Converse request.
func (c *bedrockConverse) Translate(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	if err := converseImagesByURL(body["messages"]); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := anthTranslation{req: messages.Request{Model: out.NativeModel}, fast: true, parallel: true}
	if err := t.read(body, keys); err != nil {
		return nil, err
	}
	req, degraded, err := converseRequest(&t)
	if err != nil {
		return nil, err
	}
	// The anthropic-beta flags the check kept are the Messages API's:
	// Converse has no place for them, so none is sent, each recorded.
	for _, f := range out.Betas {
		degraded = append(degraded, compiler.DegradedBetaPrefix+f)
	}
	var pass []member
	for _, k := range t.passThrough {
		switch {
		case k == "thinking":
			return nil, unsupportedParameter("/thinking", "thinking is the Messages API's; Converse asks a model for reasoning in additionalModelRequestFields, in the model's own terms")
		case converseOwn[k]:
			pass = append(pass, member{k, body[k]})
		case converseDropped[k]:
		default:
			return nil, unsupportedParameter("/"+k, "parameter %q has no equivalent in Bedrock's Converse API", k)
		}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(pass) > 0 {
		top, err := ParseBody(b)
		if err != nil {
			return nil, err
		}
		b = encodeBody(top, pass...)
	}
	path := bedrockModelPath(out.NativeModel, "/converse")
	if t.req.Stream {
		path = bedrockModelPath(out.NativeModel, "/converse-stream")
	}
	return &Native{Path: path, Header: noHeaders, Body: b, UsageAdded: t.req.Stream && !t.includeUsage, Degraded: degraded}, nil
}

// converseImagesByURL refuses an image given by an http(s) URL, located:
// Converse takes an image's bytes (or an S3 location), never a URL to
// fetch, and fetching it for the caller is not a gateway's to do.
func converseImagesByURL(v json.RawMessage) error {
	if !bytes.Contains(v, []byte("image_url")) {
		return nil
	}
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(v, &msgs) != nil {
		return nil // the translation says what is wrong with it
	}
	for i, m := range msgs {
		var parts []struct {
			Type     string          `json:"type"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for j, p := range parts {
			if p.Type != "image_url" {
				continue
			}
			var u struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(p.ImageURL, &u) != nil {
				_ = json.Unmarshal(p.ImageURL, &u.URL)
			}
			if strings.HasPrefix(u.URL, "http://") || strings.HasPrefix(u.URL, "https://") {
				return unsupportedParameter("/messages/"+strconv.Itoa(i)+"/content/"+strconv.Itoa(j)+"/image_url/url",
					"an image by URL: Bedrock's Converse API takes an image's bytes (send a base64 data URL)")
			}
		}
	}
	return nil
}

// converseRequest writes the Messages request the anthropic translation
// built as a Converse request. Prompt-cache breakpoints are not sent
// (degraded cache_control): Converse marks them with cachePoint blocks
// that only some of its models take.
func converseRequest(t *anthTranslation) (*converse.Request, []string, error) {
	m := &t.req
	var req converse.Request
	var degraded []string
	cache := func(cc json.RawMessage) {
		if len(cc) > 0 && len(degraded) == 0 {
			degraded = append(degraded, DegradedCacheControl)
		}
	}
	for _, b := range m.System {
		cache(b.CacheControl)
		req.System = append(req.System, converse.SystemBlock{Text: b.Text})
	}
	for _, msg := range m.Messages {
		cm := converse.Message{Role: msg.Role, Content: make([]converse.ContentBlock, 0, len(msg.Content))}
		for _, b := range msg.Content {
			cache(b.CacheControl)
			cb, err := converseBlock(b)
			if err != nil {
				return nil, nil, err
			}
			cm.Content = append(cm.Content, cb)
		}
		req.Messages = append(req.Messages, cm)
	}
	if m.TopK != nil {
		return nil, nil, unsupportedParameter("/top_k", "top_k has no place in Converse's inferenceConfig; a model that takes it is asked in additionalModelRequestFields")
	}
	ic := converse.InferenceConfig{Temperature: m.Temperature, TopP: m.TopP, StopSequences: m.StopSequences}
	switch {
	case t.maxCompletion > 0:
		ic.MaxTokens = t.maxCompletion
	case t.maxTokens > 0:
		ic.MaxTokens = t.maxTokens
	}
	if ic.MaxTokens > 0 || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		req.InferenceConfig = &ic
	}
	if len(m.Tools) > 0 {
		tc := &converse.ToolConfig{}
		for _, tool := range m.Tools {
			cache(tool.CacheControl)
			tc.Tools = append(tc.Tools, converse.Tool{ToolSpec: converse.ToolSpec{Name: tool.Name, Description: tool.Description, InputSchema: converse.InputSchema{JSON: tool.InputSchema}}})
		}
		if ch := m.ToolChoice; ch != nil {
			if ch.DisableParallelToolUse {
				return nil, nil, unsupportedParameter("/parallel_tool_calls", "parallel_tool_calls = false: Converse cannot keep a model to one tool call per turn")
			}
			switch ch.Type {
			case "auto":
				tc.ToolChoice = &converse.ToolChoice{Auto: &struct{}{}}
			case "any":
				tc.ToolChoice = &converse.ToolChoice{Any: &struct{}{}}
			case "tool":
				tc.ToolChoice = &converse.ToolChoice{Tool: &converse.NamedTool{Name: ch.Name}}
			case "none":
				return nil, nil, unsupportedParameter("/tool_choice", `tool_choice "none": Converse cannot forbid the declared tools (send no tools instead)`)
			}
		}
		req.ToolConfig = tc
	}
	return &req, degraded, nil
}

// converseImageFormats are Converse's image formats by media type.
var converseImageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// converseBlock writes one Messages content block as a Converse block.
func converseBlock(b messages.Block) (converse.ContentBlock, error) {
	var cb converse.ContentBlock
	switch b.Type {
	case "text":
		text := b.Text
		cb.Text = &text
	case "image":
		src := b.Source
		if src == nil || src.Type != "base64" {
			return cb, unsupportedParameter("/messages", "an image by URL: Bedrock's Converse API takes an image's bytes (send a base64 data URL)")
		}
		cb.Image = &converse.Image{Format: converseImageFormats[src.MediaType], Source: converse.ImageSource{Bytes: src.Data}}
	case "tool_use":
		cb.ToolUse = &converse.ToolUse{ToolUseID: b.ID, Name: b.Name, Input: b.Input}
	case "tool_result":
		cb.ToolResult = &converse.ToolResult{ToolUseID: b.ToolUseID, Content: converseToolContent(b.Content)}
	case "thinking":
		r := &converse.ReasoningText{}
		if b.Thinking != nil {
			r.Text = *b.Thinking
		}
		if b.Signature != nil {
			r.Signature = *b.Signature
		}
		cb.ReasoningContent = &converse.ReasoningContent{ReasoningText: r}
	case "redacted_thinking":
		data := ""
		if b.Data != nil {
			data = *b.Data
		}
		cb.ReasoningContent = &converse.ReasoningContent{RedactedContent: data}
	default:
		return cb, unsupportedParameter("/messages", "a %s block has no equivalent in Bedrock's Converse API", b.Type)
	}
	return cb, nil
}

// converseToolContent is a tool result's content, a JSON string or a list
// of text blocks, as Converse's list of text blocks. An empty result is one
// empty text block: Converse requires content.
func converseToolContent(v json.RawMessage) []converse.ToolResultContent {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []converse.ToolResultContent{{Text: s}}
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(v, &blocks)
	out := make([]converse.ToolResultContent, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, converse.ToolResultContent{Text: b.Text})
	}
	if len(out) == 0 {
		out = append(out, converse.ToolResultContent{Text: ""})
	}
	return out
}
