package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Anthropic's Messages API, answering as the live API does
// (testdata/recorded/anthropic): dated model ids, the full usage, thinking
// blocks with signatures when the request enables thinking, and event
// streams with event lines, pings and padded data.

// anthropicSnapshots are the snapshots the recordings show the live API
// serving for an undated id; anthropicSuffix dates any other.
var anthropicSnapshots = map[string]string{
	"claude-sonnet-4-0": "claude-sonnet-4-20250514",
	"claude-sonnet-4":   "claude-sonnet-4-20250514",
	"claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
}

const anthropicSuffix = "-20250514"

// anthropicRequest is the Messages API body (the fields the simulator reads).
type anthropicRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Messages  []chatMessage   `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	Thinking  *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Tools anthropicTools `json:"tools"`
}

// script is what the request's tool-call directives ask for, or nil.
func (q *anthropicRequest) script(s *Server) *script {
	return scriptFor(anthropicTurns(q.Messages), q.Tools.names(), fmt.Sprint("messages ", s.seq.Add(1)))
}

// thinks reports whether the request turns extended thinking on ("enabled",
// or "adaptive", which the recordings show thinking).
func (q *anthropicRequest) thinks() bool {
	return q.Thinking != nil && (q.Thinking.Type == "enabled" || q.Thinking.Type == "adaptive")
}

// anthMessage is a non-stream answer; the recordings put model first.
type anthMessage struct {
	Model        string      `json:"model"`
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Content      []anthBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        anthUsage   `json:"usage"`
	// Provider is the marketplace's report of who served (OpenRouter's
	// Messages endpoint); Anthropic's own answer has none.
	Provider string `json:"provider,omitempty"`
	// Metadata is OpenRouter's router report, when asked for.
	Metadata *orMetadata `json:"openrouter_metadata,omitempty"`
}

// anthBlock is a content block: text, thinking with its signature, or a
// tool call; and a stream's delta of one.
type anthBlock struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text,omitempty"`
	Thinking    *string         `json:"thinking,omitempty"`
	Signature   *string         `json:"signature,omitempty"`
	ID          string          `json:"id,omitempty"`
	Name        string          `json:"name,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Caller      *anthCaller     `json:"caller,omitempty"`
	PartialJSON *string         `json:"partial_json,omitempty"`
}

// anthCaller says who called a tool; the recordings' calls are all
// "direct" (the model's own).
type anthCaller struct {
	Type string `json:"type"`
}

// anthUsage is a message's usage, as the non-stream answer and
// message_start carry it.
type anthUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
	InferenceGeo string `json:"inference_geo"`
	// msgCost is a marketplace's billed cost, inline; Anthropic's own usage
	// has none.
	*msgCost
}

func anthropicUsage(in, out int) anthUsage {
	return anthUsage{InputTokens: in, OutputTokens: out, ServiceTier: "standard", InferenceGeo: "not_available"}
}

// anthDeltaUsage is message_delta's usage: no cache_creation, no tier.
type anthDeltaUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthEvent is a stream event's data, in the recorded member order: type,
// then the members of its kind.
type anthEvent struct {
	Type         string          `json:"type"`
	Message      *anthMessage    `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock *anthBlock      `json:"content_block,omitempty"`
	Delta        any             `json:"delta,omitempty"`
	Usage        *anthDeltaUsage `json:"usage,omitempty"`
	Metadata     *orMetadata     `json:"openrouter_metadata,omitempty"`
}

// anthStop is message_delta's delta.
type anthStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

var anthropicTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 529: "overloaded_error",
}

// anthropicErrors numbers the error answers, for their request ids.
var anthropicErrors atomic.Int64

// anthropicShape is an error answer as the recorded ones carry it: the
// error's type and message, and the request's id ("req_011C" and 20
// letters and digits).
func anthropicShape(status int, msg string) any {
	typ, ok := anthropicTypes[status]
	if !ok {
		typ = "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
	}
	id := "req_011C" + token(fmt.Sprint("anthropic error ", anthropicErrors.Add(1)), 20, alnum)
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": id}
}

func anthropicOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(anthropicShape(400, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, m.ContextWindow)))
	return failure{status: http.StatusBadRequest, body: b}
}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, FaultHeader+": "+err.Error())
		return
	}
	if r.Header.Get("x-api-key") == "" {
		writeJSON(w, http.StatusUnauthorized, anthropicShape(401, "x-api-key header is required"))
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "anthropic-version: header is required"))
		return
	}
	var q anthropicRequest
	if err := decodeBody(r, &q); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "There was an issue with your request body: "+err.Error()))
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "model: Field required"))
		return
	}
	if q.MaxTokens == nil {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "max_tokens: Field required"))
		return
	}
	if len(q.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, anthropicShape(400, "messages: at least one message is required"))
		return
	}
	asked := strings.TrimPrefix(strings.ToLower(q.Model), "anthropic/")
	m, ep, ok := s.directModel(asked, "anthropic")
	if !ok {
		writeJSON(w, http.StatusNotFound, anthropicShape(404, "model: "+q.Model))
		return
	}
	prompt := promptTokens(q.System, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, KindAnthropic, hdr, q.Stream, prompt, []candidate{{m, ep}}, anyAttempt(anthropicShape), anthropicOverflow)
	if !ok {
		return
	}
	native := m.nativeID("anthropic")
	if _, own := m.Native["anthropic"]; !own {
		native = strings.ReplaceAll(native, ".", "-") // Anthropic's ids have no dots
	}
	if strings.EqualFold(undated(asked), native) || strings.EqualFold(asked, native) {
		native = asked // a dated id is answered as asked
	}
	s.serveAnswer(w, r, q.Stream, s.anthropicAnswer(m, dated(native, anthropicSnapshots, anthropicSuffix), prompt, q.thinks(), sc, nil), res.fault)
}

// anthExtras is what a marketplace's Messages endpoint adds to Anthropic's
// answer (nil for Anthropic's own): its default text, the serving
// provider's name at the top of the message (and of message_start's), the
// billed cost in the usage, and the [DONE] that ends its stream. Any
// marketplace re-encodes the events, without Anthropic's padding.
type anthExtras struct {
	text     string
	provider string
	// price, when set, bills the answer at the endpoint's prices.
	price *Endpoint
	done  bool
	// meta is OpenRouter's router report, on the message and on
	// message_stop, when the request asks for it.
	meta *orMetadata
}

// msgCost is the cost members of a marketplace's Messages usage, as
// OpenRouter's API reference gives them (MessagesResult.usage).
type msgCost struct {
	Cost        float64 `json:"cost"`
	IsBYOK      bool    `json:"is_byok"`
	CostDetails struct {
		UpstreamInferenceCost            float64 `json:"upstream_inference_cost"`
		UpstreamInferencePromptCost      float64 `json:"upstream_inference_prompt_cost"`
		UpstreamInferenceCompletionsCost float64 `json:"upstream_inference_completions_cost"`
	} `json:"cost_details"`
}

// anthropicAnswer renders a served message of model (the id reported): a
// thinking block first when the request thinks, then the text — the
// default, or what the request's directives script; a scripted call is a
// sentence and a tool_use block, as every recorded call is.
func (s *Server) anthropicAnswer(m *Model, model string, prompt int, thinks bool, sc *script, ex *anthExtras) *answer {
	def := answerText(m.Slug, "anthropic")
	if ex != nil {
		def = ex.text
	}
	text := sc.textOr(def)
	call := sc.toolCall()
	if call != nil {
		text = "I'll call " + call.name + "."
	}
	out := estimateTokens(len(text))
	id := anthropicID(s.seq.Add(1))
	thinking, sig := "", ""
	if thinks {
		thinking = "The request asks for an answer; the answer says which model and provider serve it."
		sig = signature(id)
		out += estimateTokens(len(thinking))
	}
	stop := "end_turn"
	var use *anthBlock
	if call != nil {
		stop = "tool_use"
		out += estimateTokens(len(call.name) + len(call.args))
		use = &anthBlock{Type: "tool_use", ID: call.callID("toolu_01", 22), Name: call.name, Input: call.argsObject(),
			Caller: &anthCaller{Type: "direct"}}
	}
	usage := func(out int) anthUsage {
		u := anthropicUsage(prompt, out)
		if ex != nil && ex.price != nil {
			u.msgCost = orMessageCost(*ex.price, prompt, out)
		}
		return u
	}
	provider := ""
	if ex != nil {
		provider = ex.provider
	}

	var blocks []anthBlock
	if thinks {
		blocks = append(blocks, anthBlock{Type: "thinking", Thinking: &thinking, Signature: &sig})
	}
	blocks = append(blocks, anthBlock{Type: "text", Text: &text})
	if use != nil {
		blocks = append(blocks, *use)
	}
	a := &answer{streamType: "text/event-stream; charset=utf-8", done: ex != nil && ex.done}
	final := anthMessage{Model: model, ID: id, Type: "message", Role: "assistant", Content: blocks,
		StopReason: &stop, Usage: usage(out), Provider: provider}
	if ex != nil {
		final.Metadata = ex.meta
	}
	a.body = mustJSON(final)

	// Every data object but ping's is padded with spaces before its closing
	// brace, by an amount that varies from event to event, as recorded.
	// A marketplace re-encodes the events: no padding, a compact ping.
	add := func(name string, v any) {
		i := len(a.events)
		data := mustJSON(v)
		if ex == nil {
			data = padJSON(data, (i*5+3)%16)
		}
		a.events = append(a.events, streamEvent{name: name, data: data})
	}
	ping := []byte(`{"type": "ping"}`)
	if ex != nil {
		ping = []byte(`{"type":"ping"}`)
	}
	start := anthMessage{Model: model, ID: id, Type: "message", Role: "assistant", Content: []anthBlock{},
		Usage: anthropicUsage(prompt, 1), Provider: provider}
	add("message_start", anthEvent{Type: "message_start", Message: &start})
	index := 0
	block := func(startBlock anthBlock, deltas []anthBlock) {
		i := index
		add("content_block_start", anthEvent{Type: "content_block_start", Index: &i, ContentBlock: &startBlock})
		if i == 0 {
			// One ping follows the first block's start in every recording.
			a.events = append(a.events, streamEvent{name: "ping", data: ping})
		}
		for _, d := range deltas {
			add("content_block_delta", anthEvent{Type: "content_block_delta", Index: &i, Delta: d})
		}
		add("content_block_stop", anthEvent{Type: "content_block_stop", Index: &i})
		index++
	}
	empty := ""
	if thinks {
		var deltas []anthBlock
		for _, p := range pieces(thinking) {
			deltas = append(deltas, anthBlock{Type: "thinking_delta", Thinking: &p})
		}
		deltas = append(deltas, anthBlock{Type: "signature_delta", Signature: &sig})
		block(anthBlock{Type: "thinking", Thinking: &empty, Signature: &empty}, deltas)
	}
	var deltas []anthBlock
	for _, p := range pieces(text) {
		deltas = append(deltas, anthBlock{Type: "text_delta", Text: &p})
	}
	block(anthBlock{Type: "text", Text: &empty}, deltas)
	if use != nil {
		// The call's input arrives as JSON text, an empty piece first, as
		// recorded.
		deltas = []anthBlock{{Type: "input_json_delta", PartialJSON: &empty}}
		for _, p := range argPieces(call.args) {
			deltas = append(deltas, anthBlock{Type: "input_json_delta", PartialJSON: &p})
		}
		begin := *use
		begin.Input = json.RawMessage("{}")
		block(begin, deltas)
	}
	add("message_delta", anthEvent{Type: "message_delta", Delta: anthStop{StopReason: stop},
		Usage: &anthDeltaUsage{InputTokens: prompt, OutputTokens: out}})
	stopEv := anthEvent{Type: "message_stop"}
	if ex != nil {
		stopEv.Metadata = ex.meta
	}
	add("message_stop", stopEv)

	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		if !stream {
			return http.StatusInternalServerError, mustJSON(anthropicShape(500, "Internal server error")), nil
		}
		// An error event ends the stream, spelled as Anthropic's streaming
		// documentation shows it.
		return 0, nil, []streamEvent{{name: "error",
			data: []byte(`{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)}}
	}
	return a
}
