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

// shapeDefaults are the models a request is answered with when the demo
// catalog does not serve the recorded one.
var shapeDefaults = map[string]string{
	KindOpenRouter: "anthropic/claude-haiku-4.5",
	KindVercel:     "anthropic/claude-sonnet-4.5",
	KindOpenAI:     "gpt-4o",
	KindAnthropic:  "claude-sonnet-4-5",
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
func shapeOf(upstream string, stream, byteFaithful bool, raw []byte) (*shape, error) {
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
			if upstream == KindAnthropic {
				kind = eventKind(event, m)
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
func loadRecordings(t *testing.T, upstream string) []recording {
	t.Helper()
	dir := filepath.Join(recordedDir, upstream)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []recording
	for _, e := range entries {
		n := e.Name()
		base, stream := strings.TrimSuffix(n, ".sse"), strings.HasSuffix(n, ".sse")
		if !stream {
			if !strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".meta.json") || strings.HasSuffix(n, ".request.json") || n == "cases.json" {
				continue
			}
			base = strings.TrimSuffix(n, ".json")
		}
		if strings.HasPrefix(n, "error-") || strings.HasPrefix(n, "docs-") {
			continue
		}
		rec := recording{name: base, stream: stream}
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
		rec.shape, err = shapeOf(upstream, stream, rec.byteFaithful, rec.body)
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
func (c *corpus) problems(sim *shape) []string {
	var out []string
	for k, ks := range sim.kinds {
		rec := c.all.kinds[k]
		if rec == nil {
			out = append(out, fmt.Sprintf("%s: no recording has this kind of object", k))
			continue
		}
		for p, ts := range ks.types {
			for ty := range ts {
				if !rec.types[p][ty] {
					out = append(out, fmt.Sprintf("%s: %q is %s, which no recording has", k, p, ty))
				}
			}
		}
		for p, keys := range ks.required {
			for key := range rec.required[p] {
				if !keys[key] {
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
		if on && !sim.features[f] {
			out = append(out, fmt.Sprintf("framing: no %s, which every recording has", f))
		}
	}
	for f, on := range c.never {
		if on && sim.features[f] {
			out = append(out, fmt.Sprintf("framing: %s, which no recording has", f))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// simRequest is the request a recording answered, for the simulator: its
// messages, system prompt, stream options, thinking and token limit, and
// model.
func simRequest(r recording, model string) string {
	body := map[string]json.RawMessage{"model": mustJSON(model), "stream": mustJSON(r.stream)}
	for _, k := range []string{"messages", "system", "stream_options", "thinking", "max_tokens", "tools"} {
		if v, ok := r.request[k]; ok {
			body[k] = v
		}
	}
	if _, ok := body["messages"]; !ok {
		body["messages"] = json.RawMessage(`[{"role":"user","content":"hello there"}]`)
	}
	if _, ok := body["max_tokens"]; !ok {
		body["max_tokens"] = json.RawMessage(`1024`)
	}
	if name, args := recordedCall(r.body, r.stream); name != "" {
		body["messages"] = withDirective(body["messages"], name, args, "text")
	}
	return string(mustJSON(body))
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

func TestShapesMatchRecordings(t *testing.T) {
	cat, diags := guardrails.LoadCatalog("../testdata/demo")
	require.Empty(t, diags)
	s := startSim(t, FromCatalog(cat))
	paths := map[string]string{KindOpenRouter: "/chat/completions", KindVercel: "/chat/completions",
		KindOpenAI: "/chat/completions", KindAnthropic: "/messages"}
	for _, upstream := range []string{KindOpenRouter, KindVercel, KindOpenAI, KindAnthropic} {
		recs := loadRecordings(t, upstream)
		require.NotEmpty(t, recs, upstream)
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
			t.Run(upstream+"/"+r.name, func(t *testing.T) {
				var hdr []string
				if upstream == KindAnthropic {
					hdr = []string{"x-api-key", "k", "anthropic-version", "2023-06-01"}
				}
				model := ""
				_ = json.Unmarshal(r.request["model"], &model)
				reply := post(t, s.URL(upstream)+paths[upstream], simRequest(r, model), hdr...)
				if reply.status != 200 {
					// The demo catalog does not serve the recorded model.
					model = shapeDefaults[upstream]
					reply = post(t, s.URL(upstream)+paths[upstream], simRequest(r, model), hdr...)
				}
				require.NoError(t, reply.err)
				require.Equal(t, 200, reply.status, "%s", reply.body)
				sim, err := shapeOf(upstream, r.stream, true, reply.body)
				require.NoError(t, err)
				problems := corpora[r.stream].problems(sim)
				have := sim.variants()
				for v := range r.shape.variants() {
					if simulated(v) && !have[v] {
						problems = append(problems, fmt.Sprintf("no %s, which the recording has", v))
					}
				}
				if len(problems) > 0 {
					t.Errorf("the simulator's answer to %s (as %s) departs from what %s sent:\n  %s\n\n%s",
						r.name, model, upstream, strings.Join(problems, "\n  "), reply.body)
				}
			})
		}
	}
}
