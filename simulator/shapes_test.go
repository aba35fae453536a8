package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
)

// The shape test holds the simulator to what the upstreams actually sent:
// testdata/recorded/<upstream>, every answer (<name>.json) and stream
// (<name>.sse) there. Adding a recording adds a subtest and tightens the
// check.
//
// From the recordings of one upstream and mode (answer or stream) it infers
// a schema per kind of object — the answer; a stream chunk by what it
// carries (a delta, the finish, the usage, an error) or an Anthropic event
// by its type and block or delta type; "*" for every chunk:
//
//   - the JSON paths each kind has, with the JSON types seen at each;
//     array elements are "[]", or "[<type>]" for objects with a type member;
//   - for every object path, the members every recorded occurrence has;
//   - the kinds every recording has;
//   - framing: keep-alive whitespace, pretty-printing, a final newline,
//     comment lines, event lines, padded data, the [DONE] terminator, the
//     spaced ping. Only recordings kept byte for byte count (re-serialised
//     ones lost their whitespace and member order).
//
// Each recording's request is then sent to the simulator (its messages,
// stream options, thinking and token limit; its model when the demo
// catalog serves it, else a model the catalog has) and the answer must
// (a) have only paths, types and kinds some recording has — nothing
// invented — and (b) carry every member that every recorded occurrence of
// its object carries, every kind every recording has, and every framing
// feature every recording has, and none that no recording has.
//
// Each recording also holds the simulator's answer to it to its variants:
// every kind of object and every type of array element it has (a thinking
// block, a usage chunk), but those in notSimulated.

const recordedDir = "../testdata/recorded"

// notSimulated are the variants the simulator never produces, and why.
var notSimulated = map[string]string{
	"redacted_thinking":   "the simulator's thinking is never redacted",
	"reasoning.text":      "the marketplaces' reasoning details are not simulated",
	"reasoning.summary":   "the marketplaces' reasoning details are not simulated",
	"reasoning.encrypted": "the marketplaces' reasoning details are not simulated",
}

// kindShape is what the objects of one kind look like.
type kindShape struct {
	// types maps a path to the JSON types seen there.
	types map[string]map[string]bool
	// required maps an object's path to the members every occurrence has.
	required map[string]map[string]bool
}

// shape is what one answer or stream, or a corpus of them, looks like.
type shape struct {
	kinds    map[string]*kindShape
	features map[string]bool
}

func newShape() *shape {
	return &shape{kinds: map[string]*kindShape{}, features: map[string]bool{}}
}

func (s *shape) kind(k string) *kindShape {
	ks := s.kinds[k]
	if ks == nil {
		ks = &kindShape{types: map[string]map[string]bool{}, required: map[string]map[string]bool{}}
		s.kinds[k] = ks
	}
	return ks
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	}
	return "object"
}

// add records v, found at path, and everything below it.
func (k *kindShape) add(path string, v any) {
	if k.types[path] == nil {
		k.types[path] = map[string]bool{}
	}
	k.types[path][jsonType(v)] = true
	switch x := v.(type) {
	case map[string]any:
		have := map[string]bool{}
		for key, child := range x {
			have[key] = true
			k.add(join(path, key), child)
		}
		if req, seen := k.required[path]; !seen {
			k.required[path] = have
		} else {
			for key := range req {
				if !have[key] {
					delete(req, key)
				}
			}
		}
	case []any:
		for _, e := range x {
			elem := path + "[]"
			if obj, ok := e.(map[string]any); ok {
				if t, ok := obj["type"].(string); ok {
					elem = path + "[" + t + "]"
				}
			}
			k.add(elem, e)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var elementType = regexp.MustCompile(`\[([^\]]+)\]`)

// variants lists the kinds of object a shape has and the types of its array
// elements.
func (s *shape) variants() map[string]bool {
	out := map[string]bool{}
	for k, ks := range s.kinds {
		out[k] = true
		for p := range ks.types {
			for _, m := range elementType.FindAllStringSubmatch(p, -1) {
				out["["+m[1]+"]"] = true
			}
		}
	}
	return out
}

// simulated reports whether the simulator produces a variant.
func simulated(variant string) bool {
	v := strings.Trim(variant, "[]")
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		v = v[i+1:]
	}
	_, not := notSimulated[v]
	return !not
}

// chunkKind classifies an OpenAI-shaped stream chunk by what it carries.
func chunkKind(m map[string]any) string {
	switch {
	case m["error"] != nil:
		return "error"
	case m["usage"] != nil:
		return "usage"
	}
	if cs, ok := m["choices"].([]any); ok && len(cs) > 0 {
		if c, ok := cs[0].(map[string]any); ok && c["finish_reason"] != nil {
			return "finish"
		}
	}
	return "delta"
}

// responsesKind classifies a Responses API event by its type, and the type
// of the item or part it carries.
func responsesKind(m map[string]any) string {
	kind, _ := m["type"].(string)
	for _, inner := range []string{"item", "part"} {
		if b, ok := m[inner].(map[string]any); ok {
			if t, ok := b["type"].(string); ok {
				return kind + "/" + t
			}
		}
	}
	return kind
}

// eventKind classifies an Anthropic event by its type, and its block or
// delta type.
func eventKind(name string, m map[string]any) string {
	for _, inner := range []string{"content_block", "delta"} {
		if b, ok := m[inner].(map[string]any); ok {
			if t, ok := b["type"].(string); ok {
				return name + "/" + t
			}
		}
	}
	return name
}

var (
	paddedData = regexp.MustCompile(`^data: \{.*\S\s+\}$`)
	keepAlive  = "\n         \n"
)

// shapeOf reads one answer (stream false) or event stream. byteFaithful
// says whether its bytes are as sent, so that framing counts.
func shapeOf(format string, stream, byteFaithful bool, raw []byte) (*shape, error) {
	s := newShape()
	decode := func(b []byte) (map[string]any, error) {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%w: %.200s", err, b)
		}
		return m, nil
	}
	if !stream {
		m, err := decode(raw)
		if err != nil {
			return nil, err
		}
		s.kind("answer").add("", m)
		if byteFaithful {
			s.features["keep-alive whitespace before the JSON"] = bytes.HasPrefix(raw, []byte(keepAlive))
			s.features["pretty-printed"] = bytes.Contains(raw, []byte("\n  \""))
			s.features["a final newline"] = bytes.HasSuffix(raw, []byte("}\n"))
		}
		return s, nil
	}
	var event string
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			s.features["comment lines"] = true
		case strings.HasPrefix(line, "event: "):
			s.features["event lines"] = true
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if data == "[DONE]" {
				s.features["data: [DONE] at the end"] = true
				continue
			}
			if paddedData.MatchString(line) {
				s.features["data padded before its closing brace"] = true
			}
			if data == `{"type": "ping"}` {
				s.features[`ping spelled {"type": "ping"}`] = true
			}
			m, err := decode([]byte(data))
			if err != nil {
				return nil, err
			}
			kind := chunkKind(m)
			switch format {
			case formatMessages:
				kind = eventKind(event, m)
			case formatResponses:
				kind = responsesKind(m)
			}
			s.kind(kind).add("", m)
			s.kind("*").add("", m)
		case line == "":
			event = ""
		}
	}
	if !byteFaithful {
		s.features = map[string]bool{}
	}
	return s, nil
}

// recording is one recorded answer or stream.
type recording struct {
	name         string
	stream       bool
	byteFaithful bool
	body         []byte
	request      map[string]json.RawMessage
	shape        *shape
}

// loadRecordings reads the answers and streams recorded from an upstream:
// not its error answers nor the documentation's examples, nor a stream that
// ended in an error.
func loadRecordings(t *testing.T, dir, prefix, format string) []recording {
	t.Helper()
	dir = filepath.Join(recordedDir, dir)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []recording
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		base, stream := strings.TrimSuffix(n, ".sse"), strings.HasSuffix(n, ".sse")
		if !stream {
			if !strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".meta.json") || strings.HasSuffix(n, ".request.json") || n == "cases.json" {
				continue
			}
			base = strings.TrimSuffix(n, ".json")
		}
		if n == prefix+"SOURCES.md" || strings.HasPrefix(n, prefix+"error-") || strings.HasPrefix(n, prefix+"docs-") {
			continue
		}
		rec := recording{name: strings.TrimPrefix(base, prefix), stream: stream}
		rec.body, err = os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		var meta struct {
			Reconstruction []string `json:"reconstruction"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, base+".meta.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		how := strings.Join(meta.Reconstruction, " ")
		rec.byteFaithful = strings.Contains(how, "byte-for-byte") && !strings.Contains(how, "RE-SERIALISED")
		if raw, err := os.ReadFile(filepath.Join(dir, base+".request.json")); err == nil {
			require.NoError(t, json.Unmarshal(raw, &rec.request), base)
		}
		rec.shape, err = shapeOf(format, stream, rec.byteFaithful, rec.body)
		require.NoError(t, err, base)
		if rec.shape.kinds["error"] != nil {
			continue // a failure, not an answer
		}
		out = append(out, rec)
	}
	return out
}

// corpus is what the recordings of one upstream and mode agree on.
type corpus struct {
	all *shape
	// everyKind lists the kinds every recording has.
	everyKind map[string]bool
	// always and never are the framing features every recording (that kept
	// its bytes) has, and none has.
	always, never map[string]bool
}

func buildCorpus(recs []recording) *corpus {
	c := &corpus{all: newShape(), everyKind: map[string]bool{}, always: map[string]bool{}, never: map[string]bool{}}
	features := map[string]bool{}
	faithful := 0
	for i, r := range recs {
		for k, ks := range r.shape.kinds {
			all := c.all.kind(k)
			for p, ts := range ks.types {
				if all.types[p] == nil {
					all.types[p] = map[string]bool{}
				}
				for ty := range ts {
					all.types[p][ty] = true
				}
			}
			for p, keys := range ks.required {
				if req, seen := all.required[p]; !seen {
					all.required[p] = maps.Clone(keys)
				} else {
					for key := range req {
						if !keys[key] {
							delete(req, key)
						}
					}
				}
			}
		}
		if i == 0 {
			for k := range r.shape.kinds {
				c.everyKind[k] = true
			}
		}
		for k := range c.everyKind {
			if r.shape.kinds[k] == nil {
				delete(c.everyKind, k)
			}
		}
		if r.byteFaithful {
			for f, on := range r.shape.features {
				if on {
					features[f] = true
				}
			}
			faithful++
		}
	}
	for f := range features {
		c.always[f], c.never[f] = true, false
	}
	for _, r := range recs {
		if !r.byteFaithful {
			continue
		}
		for f := range features {
			if !r.shape.features[f] {
				c.always[f] = false
			}
		}
	}
	for _, f := range []string{"keep-alive whitespace before the JSON", "pretty-printed", "a final newline", "comment lines",
		"event lines", "data padded before its closing brace", "data: [DONE] at the end", `ping spelled {"type": "ping"}`} {
		if !features[f] && faithful > 0 {
			c.never[f] = true
		}
	}
	return c
}

// problems lists how the simulator's shape departs from the corpus.
func (c *corpus) problems(sim *shape, d departures) []string {
	var out []string
	for k, ks := range sim.kinds {
		rec := c.all.kinds[k]
		if rec == nil {
			out = append(out, fmt.Sprintf("%s: no recording has this kind of object", k))
			continue
		}
		for p, ts := range ks.types {
			if d.adds(p) {
				continue
			}
			for ty := range ts {
				if !rec.types[p][ty] {
					out = append(out, fmt.Sprintf("%s: %q is %s, which no recording has", k, p, ty))
				}
			}
		}
		for p, keys := range ks.required {
			for key := range rec.required[p] {
				if !keys[key] && !d.drops(join(p, key)) {
					out = append(out, fmt.Sprintf("%s: %q lacks %q, which every recording has", k, p, key))
				}
			}
		}
	}
	for k := range c.everyKind {
		if sim.kinds[k] == nil {
			out = append(out, fmt.Sprintf("no %s, which every recording has", k))
		}
	}
	for f, on := range c.always {
		if on && !sim.features[f] && !d.framing[f] {
			out = append(out, fmt.Sprintf("framing: no %s, which every recording has", f))
		}
	}
	for f, on := range c.never {
		if on && sim.features[f] && !d.framing[f] {
			out = append(out, fmt.Sprintf("framing: %s, which no recording has", f))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// simRequest is the request a recording answered, for the simulator: its
// messages (or input), system prompt (or instructions), stream options,
// thinking (or reasoning), token limit and tools, and model; and, when the
// recorded answer calls a tool, the directive that scripts that call.
func simRequest(r recording, model, format string) string {
	body := map[string]json.RawMessage{"model": mustJSON(model), "stream": mustJSON(r.stream)}
	keys := []string{"messages", "system", "stream_options", "thinking", "max_tokens", "tools"}
	if format == formatResponses {
		keys = []string{"input", "instructions", "tools", "tool_choice", "reasoning", "include", "max_output_tokens", "store"}
	}
	for _, k := range keys {
		if v, ok := r.request[k]; ok {
			body[k] = v
		}
	}
	name, args := recordedCall(r.body, r.stream)
	if format == formatResponses {
		if _, ok := body["input"]; !ok {
			body["input"] = mustJSON("hello there")
		}
		if _, ok := body["reasoning"]; !ok {
			// The recorded model reasoned by default; the simulator's
			// models reason when asked to, so ask as the answer says.
			if effort := recordedEffort(r.body, r.stream); effort != "" {
				body["reasoning"] = mustJSON(map[string]string{"effort": effort})
			}
		}
		if name != "" {
			body["input"] = withDirective(body["input"], name, args, "input_text")
		}
		return string(mustJSON(body))
	}
	if _, ok := body["messages"]; !ok {
		body["messages"] = json.RawMessage(`[{"role":"user","content":"hello there"}]`)
	}
	if _, ok := body["max_tokens"]; !ok {
		body["max_tokens"] = json.RawMessage(`1024`)
	}
	if name != "" {
		body["messages"] = withDirective(body["messages"], name, args, "text")
	}
	return string(mustJSON(body))
}

// recordedEffort is the reasoning effort a recorded Responses answer says
// it ran at (its response's reasoning.effort), or "".
func recordedEffort(body []byte, stream bool) string {
	var obj struct {
		Reasoning struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		Response *struct {
			Reasoning struct {
				Effort string `json:"effort"`
			} `json:"reasoning"`
		} `json:"response"`
	}
	if !stream {
		_ = json.Unmarshal(body, &obj)
		return obj.Reasoning.Effort
	}
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &obj) == nil && obj.Response != nil {
			return obj.Response.Reasoning.Effort
		}
	}
	return ""
}

// recordedCall is the first tool call a recorded answer or stream makes —
// an OpenAI-shaped tool call's function, an Anthropic tool_use block, a
// Responses function_call item — as its tool's name and its arguments
// ("{}" when a stream spreads them over pieces); "" when it makes none.
func recordedCall(body []byte, stream bool) (name, args string) {
	var docs []any
	if !stream {
		var v any
		if json.Unmarshal(body, &v) == nil {
			docs = append(docs, v)
		}
	} else {
		for _, line := range strings.Split(string(body), "\n") {
			var v any
			if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &v) == nil {
				docs = append(docs, v)
			}
		}
	}
	var find func(v any) bool
	find = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			call := x
			if f, ok := x["function"].(map[string]any); ok {
				call = f
			} else if t := x["type"]; t != "tool_use" && t != "function_call" {
				call = nil
			}
			if n, ok := call["name"].(string); ok && n != "" {
				name, args = n, "{}"
				if a, ok := call["arguments"].(string); ok && json.Valid([]byte(a)) && strings.HasPrefix(a, "{") {
					args = a
				} else if in, ok := call["input"].(map[string]any); ok && len(in) > 0 {
					args = string(mustJSON(in))
				}
				return true
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if find(x[k]) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if find(e) {
					return true
				}
			}
		}
		return false
	}
	for _, d := range docs {
		if find(d) {
			return name, args
		}
	}
	return "", ""
}

// withDirective appends the directive to call the tool to the last user
// message of msgs (a string content grows; a parts content gains a part of
// partType).
func withDirective(msgs json.RawMessage, tool, args, partType string) json.RawMessage {
	var list []map[string]any
	if json.Unmarshal(msgs, &list) != nil {
		return msgs
	}
	d := "[[sim:call " + tool + " " + args + "]]"
	for i := len(list) - 1; i >= 0; i-- {
		if list[i]["role"] != "user" {
			continue
		}
		switch c := list[i]["content"].(type) {
		case string:
			list[i]["content"] = c + " " + d
		case []any:
			list[i]["content"] = append(c, map[string]any{"type": partType, "text": d})
		}
		break
	}
	return mustJSON(list)
}

// The ways a recording's request and answer are read.
const (
	formatChat      = "chat"      // OpenAI-shaped chat completions
	formatMessages  = "messages"  // Anthropic's Messages API
	formatResponses = "responses" // the Responses API
)

// departures are where an endpoint's documented wire format departs from
// the recordings its answers are held to (an endpoint with no recording of
// its own is held to those of the API it speaks): members its reference
// adds (paths, a prefix covering what is below it), recorded members it
// leaves out, and framing it does differently. Each entry cites
// testdata/recorded/ENDPOINTS.md.
type departures struct {
	added, dropped []string
	framing        map[string]bool
}

func (d departures) adds(path string) bool  { return matchPath(d.added, path) }
func (d departures) drops(path string) bool { return matchPath(d.dropped, path) }

func matchPath(list []string, path string) bool {
	for _, p := range list {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// shapeSuite is one endpoint held to a set of recordings.
type shapeSuite struct {
	name     string // the subtests' prefix
	upstream string // the simulated upstream answering
	path     string // the endpoint, under the upstream's URL
	dir      string // the recordings' directory under testdata/recorded
	prefix   string // the recordings' file-name prefix there
	format   string
	// fallback is the model asked for when the demo catalog does not serve
	// the recorded one.
	fallback string
	header   []string
	depart   departures
}

var anthropicHeaders = []string{"x-api-key", "k", "anthropic-version", "2023-06-01"}

// orMessagesDepart: OpenRouter's Messages answer names its provider and
// bills its cost (OR-OAS MessagesResult, MessagesStartEvent), re-encodes
// its events (no Anthropic padding or spaced ping; unknown) and ends its
// stream with [DONE] (OR-OAS's declared sentinel). ENDPOINTS.md §1.
var orMessagesDepart = departures{
	added: []string{"provider", "message.provider", "usage.cost", "usage.is_byok", "usage.cost_details"},
	framing: map[string]bool{"data padded before its closing brace": true, `ping spelled {"type": "ping"}`: true,
		"data: [DONE] at the end": true},
}

// vercelMessagesDepart: the Vercel AI Gateway re-encodes Anthropic's
// events (unknown; ENDPOINTS.md §3).
var vercelMessagesDepart = departures{
	framing: map[string]bool{"data padded before its closing brace": true, `ping spelled {"type": "ping"}`: true},
}

// orResponsesDepart: OpenRouter's response object has no billing,
// moderation, prompt_cache_retention or reasoning.context (OR-OAS
// OpenResponsesResult lists none), bills its cost in the usage (OR-OAS
// Usage) and ends its stream with [DONE] (ENDPOINTS.md §2).
var orResponsesDepart = departures{
	added: []string{"usage.cost", "usage.is_byok", "usage.cost_details",
		"response.usage.cost", "response.usage.is_byok", "response.usage.cost_details"},
	dropped: []string{"billing", "moderation", "prompt_cache_retention", "reasoning.context",
		"response.moderation", "response.prompt_cache_retention", "response.reasoning.context"},
	framing: map[string]bool{"data: [DONE] at the end": true},
}

var shapeSuites = []shapeSuite{
	{name: KindOpenRouter, upstream: KindOpenRouter, path: "/chat/completions", dir: "openrouter", format: formatChat,
		fallback: "anthropic/claude-haiku-4.5"},
	{name: KindVercel, upstream: KindVercel, path: "/chat/completions", dir: "vercel", format: formatChat,
		fallback: "anthropic/claude-sonnet-4.5"},
	{name: KindOpenAI, upstream: KindOpenAI, path: "/chat/completions", dir: "openai", format: formatChat, fallback: "gpt-4o"},
	{name: KindAnthropic, upstream: KindAnthropic, path: "/messages", dir: "anthropic", format: formatMessages,
		fallback: "claude-sonnet-4-5", header: anthropicHeaders},
	{name: "openrouter-messages", upstream: KindOpenRouter, path: "/messages", dir: "anthropic", format: formatMessages,
		fallback: "anthropic/claude-sonnet-4.5", depart: orMessagesDepart},
	{name: "vercel-messages", upstream: KindVercel, path: "/messages", dir: "anthropic", format: formatMessages,
		fallback: "anthropic/claude-sonnet-4.5", header: anthropicHeaders, depart: vercelMessagesDepart},
	{name: "openai-responses", upstream: KindOpenAI, path: "/responses", dir: "responses", prefix: "openai-",
		format: formatResponses, fallback: "gpt-4o"},
	{name: "openrouter-responses", upstream: KindOpenRouter, path: "/responses", dir: "responses", prefix: "openai-",
		format: formatResponses, fallback: "openai/gpt-4o", depart: orResponsesDepart},
	{name: "vercel-responses", upstream: KindVercel, path: "/responses", dir: "responses", prefix: "openai-",
		format: formatResponses, fallback: "openai/gpt-4o"},
	{name: KindAzure, upstream: KindAzure, path: "/chat/completions", dir: "azure", prefix: "chat-", format: formatChat,
		fallback: "gpt-4o", header: azureHeaders},
	{name: "azure-responses", upstream: KindAzure, path: "/responses", dir: "azure", prefix: "responses-",
		format: formatResponses, fallback: "gpt-4o", header: azureHeaders},
}

// azureHeaders carry the api-key the shape test's simulator accepts.
var azureHeaders = []string{"api-key", "shape-test-key"}

func TestShapesMatchRecordings(t *testing.T) {
	cat, diags := guardrails.LoadCatalog("../testdata/demo")
	require.Empty(t, diags)
	cfg := FromCatalog(cat)
	cfg.AzureAPIKey = azureHeaders[1]
	s := startSim(t, cfg)
	for _, suite := range shapeSuites {
		recs := loadRecordings(t, suite.dir, suite.prefix, suite.format)
		require.NotEmpty(t, recs, suite.name)
		corpora := map[bool]*corpus{}
		for _, stream := range []bool{false, true} {
			var mode []recording
			for _, r := range recs {
				if r.stream == stream {
					mode = append(mode, r)
				}
			}
			corpora[stream] = buildCorpus(mode)
		}
		for _, r := range recs {
			t.Run(suite.name+"/"+r.name, func(t *testing.T) {
				url := s.URL(suite.upstream) + suite.path
				model := ""
				_ = json.Unmarshal(r.request["model"], &model)
				reply := post(t, url, simRequest(r, model, suite.format), suite.header...)
				if reply.status != 200 {
					// The demo catalog does not serve the recorded model.
					model = suite.fallback
					reply = post(t, url, simRequest(r, model, suite.format), suite.header...)
				}
				require.NoError(t, reply.err)
				require.Equal(t, 200, reply.status, "%s", reply.body)
				sim, err := shapeOf(suite.format, r.stream, true, reply.body)
				require.NoError(t, err)
				problems := corpora[r.stream].problems(sim, suite.depart)
				have := sim.variants()
				for v := range r.shape.variants() {
					if simulated(v) && !have[v] {
						problems = append(problems, fmt.Sprintf("no %s, which the recording has", v))
					}
				}
				if len(problems) > 0 {
					t.Errorf("the simulator's answer to %s (as %s) departs from what %s sent:\n  %s\n\n%s",
						r.name, model, suite.dir, strings.Join(problems, "\n  "), reply.body)
				}
			})
		}
	}
}
