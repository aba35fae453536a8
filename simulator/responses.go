package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The Responses API (POST …/responses) of OpenAI, OpenRouter and the Vercel
// AI Gateway. OpenAI's answers follow its recorded traffic
// (testdata/recorded/responses): the response object with its output items
// (reasoning, message, function_call), and streams of named events, each
// with a sequence number, from response.created to response.completed. The
// marketplaces answer in the same shape with what their references add or
// leave out (testdata/recorded/ENDPOINTS.md): OpenRouter's cost in the
// usage and the [DONE] that ends its stream, both echoing the model as
// they route it. OpenAI keeps what it answered (store, default true) for
// previous_response_id, GET and DELETE; OpenRouter refuses store and
// previous_response_id, being stateless, and so does the Vercel-like
// gateway (the simulator's choice: its reference says nothing).

// responsesRequest is a Responses API body: the members the simulator
// reads or echoes, and the marketplaces' routing members.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []respToolIn    `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID *string         `json:"previous_response_id"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Metadata           map[string]any  `json:"metadata"`
	PromptCacheKey     *string         `json:"prompt_cache_key"`
	Include            []string        `json:"include"`
	Reasoning          *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`

	// OpenRouter's routing members.
	Models    []string    `json:"models"`
	Provider  *orProvider `json:"provider"`
	Plugins   []orPlugin  `json:"plugins"`
	SessionID string      `json:"session_id"`
	// The Vercel AI Gateway's.
	ProviderOptions *vercelOptions `json:"providerOptions"`
}

// respToolIn is a tool a request offers: a function's members, echoed back.
type respToolIn struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// reasons reports whether the request asks for reasoning: an effort other
// than "none".
func (q *responsesRequest) reasons() bool {
	return q.Reasoning != nil && q.Reasoning.Effort != nil && *q.Reasoning.Effort != "none"
}

// summarises reports whether a reasoning request asks for a summary.
func (q *responsesRequest) summarises() bool {
	return q.reasons() && q.Reasoning.Summary != nil && *q.Reasoning.Summary != "none"
}

// includes reports whether the request's include list names what.
func (q *responsesRequest) includes(what string) bool {
	for _, x := range q.Include {
		if x == what {
			return true
		}
	}
	return false
}

// toolNames names the request's function tools.
func (q *responsesRequest) toolNames() []string {
	var out []string
	for _, t := range q.Tools {
		if t.Name != "" && (t.Type == "" || t.Type == "function") {
			out = append(out, t.Name)
		}
	}
	return out
}

// respInputItem is one input item: a message (type "message" or none), a
// function call the model made, or a function call's output.
type respInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
	Name    string          `json:"name"`
}

// inputTurns reads the request's input: a string is one user turn; items
// are messages, the model's calls and the calls' outputs.
func inputTurns(raw json.RawMessage) (turns []turn, problem string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "Missing required parameter: 'input'."
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []turn{{role: "user", text: one}}, ""
	}
	var items []respInputItem
	if json.Unmarshal(raw, &items) != nil {
		return nil, "Invalid type for 'input': expected a string or an array of input items."
	}
	out := make([]turn, 0, len(items))
	for _, it := range items {
		switch it.Type {
		case "function_call":
			out = append(out, turn{role: "assistant"})
		case "function_call_output":
			out = append(out, turn{role: "tool", results: []string{textOf(it.Output)}})
		case "", "message":
			out = append(out, turn{role: it.Role, text: textOf(it.Content)})
		}
	}
	return out, ""
}

// turnTokens is a conversation's size in the simulator's tokens.
func turnTokens(instructions *string, turns []turn) int {
	n := 0
	if instructions != nil {
		n += len([]rune(*instructions))
	}
	for _, t := range turns {
		n += len([]rune(t.text))
		for _, r := range t.results {
			n += len([]rune(r))
		}
	}
	return estimateTokens(n)
}

// respObject is a response object, in the recorded member order. Members
// OpenAI's answers have and OpenRouter's reference does not (billing,
// moderation, prompt_cache_retention, reasoning.context) are left out of
// OpenRouter's by leaving them empty.
type respObject struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Background        bool            `json:"background"`
	Billing           *respBilling    `json:"billing,omitempty"`
	CompletedAt       *int64          `json:"completed_at"`
	Error             *respError      `json:"error"`
	FrequencyPenalty  float64         `json:"frequency_penalty"`
	IncompleteDetails *struct{}       `json:"incomplete_details"`
	Instructions      *string         `json:"instructions"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	MaxToolCalls      *int            `json:"max_tool_calls"`
	Model             string          `json:"model"`
	Moderation        json.RawMessage `json:"moderation,omitempty"`
	// ContentFilters is Azure's: null until the response completes.
	ContentFilters       json.RawMessage `json:"content_filters,omitempty"`
	Output               []any           `json:"output"`
	ParallelToolCalls    bool            `json:"parallel_tool_calls"`
	PresencePenalty      float64         `json:"presence_penalty"`
	PreviousResponseID   *string         `json:"previous_response_id"`
	PromptCacheKey       *string         `json:"prompt_cache_key"`
	PromptCacheRetention string          `json:"prompt_cache_retention,omitempty"`
	Reasoning            respReasoning   `json:"reasoning"`
	SafetyIdentifier     *string         `json:"safety_identifier"`
	ServiceTier          string          `json:"service_tier"`
	Store                bool            `json:"store"`
	Temperature          float64         `json:"temperature"`
	Text                 respText        `json:"text"`
	ToolChoice           json.RawMessage `json:"tool_choice"`
	Tools                []respTool      `json:"tools"`
	TopLogprobs          int             `json:"top_logprobs"`
	TopP                 float64         `json:"top_p"`
	Truncation           string          `json:"truncation"`
	Usage                *respUsage      `json:"usage"`
	User                 *string         `json:"user"`
	Metadata             map[string]any  `json:"metadata"`
	// RouterMetadata is OpenRouter's router report, when asked for.
	RouterMetadata *orMetadata `json:"openrouter_metadata,omitempty"`
}

type respBilling struct {
	Payer string `json:"payer"`
}

// respError is a failed response's error: its code and message.
type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type respReasoning struct {
	Context json.RawMessage `json:"context,omitempty"`
	Effort  *string         `json:"effort"`
	Summary *string         `json:"summary"`
}

type respText struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
	Verbosity string `json:"verbosity"`
}

// respTool is an offered function tool as the response echoes it.
type respTool struct {
	Type        string          `json:"type"`
	Description *string         `json:"description"`
	Name        string          `json:"name"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// respUsage is a response's usage; a marketplace adds its billed cost.
type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
	*respCost
}

// respCost is OpenRouter's cost members of a Responses usage, named as its
// API reference names them (Usage: cost_details with input and output
// costs, unlike chat's prompt and completions).
type respCost struct {
	Cost        float64 `json:"cost"`
	IsBYOK      bool    `json:"is_byok"`
	CostDetails struct {
		UpstreamInferenceCost       float64 `json:"upstream_inference_cost"`
		UpstreamInferenceInputCost  float64 `json:"upstream_inference_input_cost"`
		UpstreamInferenceOutputCost float64 `json:"upstream_inference_output_cost"`
	} `json:"cost_details"`
}

// The output items, in the recorded member order.

type respMessage struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Content []respPart `json:"content"`
	Role    string     `json:"role"`
}

type respPart struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
}

type respCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type respReasoningItem struct {
	ID               string        `json:"id"`
	Type             string        `json:"type"`
	Content          *[]struct{}   `json:"content,omitempty"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
	Summary          []respSummary `json:"summary"`
}

type respSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respEvent is a stream event's data: its type, then its members in the
// order the recordings give them (alphabetical).
type respEvent struct {
	Type           string      `json:"type"`
	Arguments      *string     `json:"arguments,omitempty"`
	ContentIndex   *int        `json:"content_index,omitempty"`
	Delta          *string     `json:"delta,omitempty"`
	Item           any         `json:"item,omitempty"`
	ItemID         string      `json:"item_id,omitempty"`
	Logprobs       *[]struct{} `json:"logprobs,omitempty"`
	Obfuscation    string      `json:"obfuscation,omitempty"`
	OutputIndex    *int        `json:"output_index,omitempty"`
	Part           any         `json:"part,omitempty"`
	Response       *respObject `json:"response,omitempty"`
	SequenceNumber int         `json:"sequence_number"`
	SummaryIndex   *int        `json:"summary_index,omitempty"`
	Text           *string     `json:"text,omitempty"`
}

// respFlavour is how an upstream's Responses answer departs from OpenAI's.
type respFlavour struct {
	// openAI: OpenAI's own members (billing, moderation, the prompt cache
	// retention, reasoning.context).
	openAI bool
	// azure: Azure OpenAI's (moderation, the prompt cache retention, a
	// null reasoning.context, content_filters; reasoning items without
	// content), as testdata/recorded/azure has them.
	azure bool
	// cost is OpenRouter's cost in the usage, or nil.
	cost *respCost
	// done ends the stream with data: [DONE].
	done bool
	// meta is OpenRouter's router report on the completed response, or nil.
	meta *orMetadata
}

// respPlan is what a Responses answer is made of.
type respPlan struct {
	q      *responsesRequest
	model  string
	text   string
	sc     *script
	prompt int
	store  bool
	flavor respFlavour
	// midError renders a failure after generation started in the
	// upstream's error shape.
	midError func(stream bool) (int, []byte, []streamEvent)
}

// reasoningText is the reasoning the simulator's models do, when asked.
const reasoningText = "The request asks for an answer; the answer says which model and provider serve it."

// responsesAnswer renders a Responses answer: the response object, and the
// stream of its events. It returns the answer and the completed response
// object (for the store).
func (s *Server) responsesAnswer(p respPlan) (*answer, []byte) {
	q := p.q
	seq := s.seq.Add(1)
	base := token(fmt.Sprint("responses ", seq), 50, hexDigits)
	id := func(prefix string, n int) string {
		return prefix + base[:16] + token(fmt.Sprint(base, n), 34, hexDigits)
	}
	created := time.Now().Unix()
	respID := "resp_" + base

	text := p.sc.textOr(p.text)
	call := p.sc.toolCall()
	out, reasoningTokens := 0, 0
	var items []any
	var reasoning *respReasoningItem
	if q.reasons() {
		reasoning = &respReasoningItem{ID: id("rs_", 1), Type: "reasoning", Summary: []respSummary{}}
		if !p.flavor.azure {
			reasoning.Content = &[]struct{}{}
		}
		if q.includes("reasoning.encrypted_content") {
			reasoning.EncryptedContent = "gAAAAAB" + token("encrypted "+base, 120, alnum+"-_")
		}
		if q.summarises() {
			reasoning.Summary = []respSummary{{Type: "summary_text", Text: reasoningText}}
		}
		reasoningTokens = estimateTokens(len(reasoningText))
		items = append(items, reasoning)
	}
	var msg *respMessage
	var fc *respCall
	if call != nil {
		fc = &respCall{ID: id("fc_", 2), Type: "function_call", Status: "completed", Arguments: call.args,
			CallID: call.callID("call_", 24), Name: call.name}
		out = estimateTokens(len(call.name) + len(call.args))
		items = append(items, fc)
	} else {
		msg = &respMessage{ID: id("msg_", 3), Type: "message", Status: "completed", Role: "assistant",
			Content: []respPart{{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text}}}
		out = estimateTokens(len(text))
		items = append(items, msg)
	}
	out += reasoningTokens

	u := &respUsage{InputTokens: p.prompt, OutputTokens: out, TotalTokens: p.prompt + out, respCost: p.flavor.cost}
	u.OutputTokensDetails.ReasoningTokens = reasoningTokens

	obj := func(status string) *respObject {
		o := &respObject{ID: respID, Object: "response", CreatedAt: created, Status: status,
			Instructions: q.Instructions, MaxOutputTokens: q.MaxOutputTokens, Model: p.model, Output: []any{},
			ParallelToolCalls: q.ParallelToolCalls == nil || *q.ParallelToolCalls, PreviousResponseID: q.PreviousResponseID,
			PromptCacheKey: q.PromptCacheKey, ServiceTier: "auto", Store: p.store, Temperature: 1, TopP: 1,
			ToolChoice: json.RawMessage(`"auto"`), Tools: []respTool{}, Truncation: "disabled", Metadata: map[string]any{}}
		if q.Temperature != nil {
			o.Temperature = *q.Temperature
		}
		if q.TopP != nil {
			o.TopP = *q.TopP
		}
		if len(q.ToolChoice) > 0 {
			o.ToolChoice = q.ToolChoice
		}
		if q.Metadata != nil {
			o.Metadata = q.Metadata
		}
		o.Text.Format.Type, o.Text.Verbosity = "text", "medium"
		for _, t := range q.Tools {
			if t.Type == "" || t.Type == "function" {
				strict := t.Strict == nil || *t.Strict
				o.Tools = append(o.Tools, respTool{Type: "function", Description: t.Description, Name: t.Name,
					Parameters: t.Parameters, Strict: strict})
			}
		}
		if q.reasons() {
			eff := *q.Reasoning.Effort
			o.Reasoning.Effort = &eff
			if q.summarises() {
				sum := *q.Reasoning.Summary
				if sum == "auto" {
					sum = "detailed" // as recorded: "auto" is answered "detailed"
				}
				o.Reasoning.Summary = &sum
			}
		}
		if p.flavor.openAI {
			o.Moderation = json.RawMessage("null")
			o.PromptCacheRetention = "in_memory"
			o.Reasoning.Context = json.RawMessage("null")
			if q.reasons() {
				o.Reasoning.Context = json.RawMessage(`"current_turn"`)
			}
		}
		if p.flavor.azure {
			o.Moderation, o.PromptCacheRetention, o.Reasoning.Context = json.RawMessage("null"), "in_memory", json.RawMessage("null")
			o.ContentFilters = json.RawMessage("null")
			if status == "completed" {
				o.ContentFilters = azureRespFilters
			}
		}
		if status == "completed" {
			done := time.Now().Unix()
			o.CompletedAt, o.ServiceTier, o.Output, o.Usage = &done, "default", items, u
			o.RouterMetadata = p.flavor.meta
		}
		return o
	}

	a := &answer{streamType: "text/event-stream; charset=utf-8", done: p.flavor.done, midError: p.midError}
	final := obj("completed")
	if p.flavor.openAI {
		final.Billing = &respBilling{Payer: "developer"}
	}
	a.body, _ = json.MarshalIndent(final, "", "  ")
	stored := a.body

	n := 0
	add := func(ev respEvent) {
		ev.SequenceNumber = n
		n++
		a.events = append(a.events, streamEvent{name: ev.Type, data: mustJSON(ev)})
	}
	ip := func(i int) *int { return &i }
	sp := func(s string) *string { return &s }
	noLogprobs := &[]struct{}{}
	add(respEvent{Type: "response.created", Response: obj("in_progress")})
	add(respEvent{Type: "response.in_progress", Response: obj("in_progress")})
	for i, it := range items {
		switch x := it.(type) {
		case *respReasoningItem:
			open := *x
			open.Summary = []respSummary{}
			add(respEvent{Type: "response.output_item.added", Item: &open, OutputIndex: ip(i)})
			for k, sum := range x.Summary {
				add(respEvent{Type: "response.reasoning_summary_part.added", ItemID: x.ID, OutputIndex: ip(i),
					Part: respSummary{Type: "summary_text"}, SummaryIndex: ip(k)})
				for _, piece := range pieces(sum.Text) {
					add(respEvent{Type: "response.reasoning_summary_text.delta", Delta: sp(piece), ItemID: x.ID,
						Obfuscation: obfuscation(fmt.Sprint(base, n)), OutputIndex: ip(i), SummaryIndex: ip(k)})
				}
				add(respEvent{Type: "response.reasoning_summary_text.done", ItemID: x.ID, OutputIndex: ip(i),
					SummaryIndex: ip(k), Text: sp(sum.Text)})
				add(respEvent{Type: "response.reasoning_summary_part.done", ItemID: x.ID, OutputIndex: ip(i),
					Part: sum, SummaryIndex: ip(k)})
			}
			add(respEvent{Type: "response.output_item.done", Item: x, OutputIndex: ip(i)})
		case *respMessage:
			open := *x
			open.Status, open.Content = "in_progress", []respPart{}
			add(respEvent{Type: "response.output_item.added", Item: &open, OutputIndex: ip(i)})
			part := x.Content[0]
			empty := part
			empty.Text = ""
			add(respEvent{Type: "response.content_part.added", ContentIndex: ip(0), ItemID: x.ID, OutputIndex: ip(i), Part: empty})
			for _, piece := range pieces(part.Text) {
				add(respEvent{Type: "response.output_text.delta", ContentIndex: ip(0), Delta: sp(piece), ItemID: x.ID,
					Logprobs: noLogprobs, Obfuscation: obfuscation(fmt.Sprint(base, n)), OutputIndex: ip(i)})
			}
			add(respEvent{Type: "response.output_text.done", ContentIndex: ip(0), ItemID: x.ID, Logprobs: noLogprobs,
				OutputIndex: ip(i), Text: sp(part.Text)})
			add(respEvent{Type: "response.content_part.done", ContentIndex: ip(0), ItemID: x.ID, OutputIndex: ip(i), Part: part})
			add(respEvent{Type: "response.output_item.done", Item: x, OutputIndex: ip(i)})
		case *respCall:
			open := *x
			open.Status, open.Arguments = "in_progress", ""
			add(respEvent{Type: "response.output_item.added", Item: &open, OutputIndex: ip(i)})
			for _, piece := range argPieces(x.Arguments) {
				add(respEvent{Type: "response.function_call_arguments.delta", Delta: sp(piece), ItemID: x.ID,
					Obfuscation: obfuscation(fmt.Sprint(base, n)), OutputIndex: ip(i)})
			}
			add(respEvent{Type: "response.function_call_arguments.done", Arguments: sp(x.Arguments), ItemID: x.ID, OutputIndex: ip(i)})
			add(respEvent{Type: "response.output_item.done", Item: x, OutputIndex: ip(i)})
		}
	}
	add(respEvent{Type: "response.completed", Response: obj("completed")})
	return a, stored
}

// outputTurns is what a response adds to its conversation: the model's
// call, or its text.
func (p respPlan) outputTurns() []turn {
	if c := p.sc.toolCall(); c != nil {
		return []turn{{role: "assistant"}}
	}
	return []turn{{role: "assistant", text: p.sc.textOr(p.text)}}
}

// storedResponse is a response OpenAI keeps: its object as GET returns it,
// and its conversation (input and output), which previous_response_id
// continues.
type storedResponse struct {
	body  []byte
	turns []turn
}

// ---- OpenAI ----

// openAIRespError is OpenAI's error body with a param and a code.
func openAIRespError(msg, param, code string) any {
	e := map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	return map[string]any{"error": e}
}

func (s *Server) handleOpenAIResponses(w http.ResponseWriter, r *http.Request) {
	s.serveDirectResponses(w, r, openAIDirect)
}

// serveDirectResponses answers a Responses request of a direct provider.
func (s *Server) serveDirectResponses(w http.ResponseWriter, r *http.Request, d direct) {
	var q responsesRequest
	hdr, ok := s.readRequest(w, r, &q, func(error) any { return openAIShape(400, "We could not parse the JSON body of your request.") })
	if !ok {
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, openAIRespError("Missing required parameter: 'model'.", "model", "missing_required_parameter"))
		return
	}
	turns, problem := inputTurns(q.Input)
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, openAIRespError(problem, "input", ""))
		return
	}
	if q.PreviousResponseID != nil && *q.PreviousResponseID != "" {
		s.mu.Lock()
		prev, ok := s.stored[*q.PreviousResponseID]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusBadRequest, openAIRespError(fmt.Sprintf("Previous response with id '%s' not found.", *q.PreviousResponseID),
				"previous_response_id", "previous_response_not_found"))
			return
		}
		turns = append(append([]turn{}, prev.turns...), turns...)
	}
	m, ep, ok := s.directModel(q.Model, d.provider)
	if !ok {
		writeJSON(w, http.StatusNotFound, openAINoModel(q.Model))
		return
	}
	prompt := turnTokens(q.Instructions, turns)
	sc := scriptFor(turns, q.toolNames(), fmt.Sprint("responses ", s.seq.Add(1)))
	res, ok := s.serveWalk(w, r, d.kind, hdr, q.Stream, prompt, []candidate{{m, ep}}, anyAttempt(openAIShape), openAIOverflow)
	if !ok {
		return
	}
	asked := m.nativeID(d.provider)
	if strings.EqualFold(undated(q.Model), asked) {
		asked = q.Model // a dated id is answered as asked
	}
	reported := dated(asked, openAISnapshots, openAISuffix)
	if d.kind == KindAzure {
		// Azure's Responses API reports the deployment the request named
		// (testdata/recorded/azure/responses-simple.json).
		reported = q.Model
	}
	store := q.Store == nil || *q.Store
	p := respPlan{q: &q, model: reported, text: answerText(m.Slug, d.provider), sc: sc,
		prompt: prompt, store: store, flavor: respFlavour{openAI: d.kind != KindAzure, azure: d.kind == KindAzure}, midError: respMidError(openAIShape)}
	a, body := s.responsesAnswer(p)
	if store {
		var probe struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &probe)
		s.mu.Lock()
		s.stored[probe.ID] = &storedResponse{body: body, turns: append(turns, p.outputTurns()...)}
		s.mu.Unlock()
	}
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}

// respMidError answers a failure after generation started in an error
// shape: a 500, or one error event that ends the stream.
func respMidError(shape func(int, string) any) func(bool) (int, []byte, []streamEvent) {
	return func(stream bool) (int, []byte, []streamEvent) {
		b := mustJSON(shape(http.StatusInternalServerError, "simulated fault: error after generation started"))
		if !stream {
			return http.StatusInternalServerError, b, nil
		}
		return 0, nil, []streamEvent{{name: "error", data: b}}
	}
}

// handleOpenAIResponseGet is GET /v1/responses/{id}: a stored response.
func (s *Server) handleOpenAIResponseGet(w http.ResponseWriter, r *http.Request) {
	s.responseGet(w, r, KindOpenAI)
}

// responseGet answers a GET of a stored response, recorded under kind.
func (s *Server) responseGet(w http.ResponseWriter, r *http.Request, kind string) {
	id := r.PathValue("id")
	s.mu.Lock()
	st, ok := s.stored[id]
	s.mu.Unlock()
	if !ok {
		s.record(r, Call{Kind: kind, Status: http.StatusNotFound})
		writeJSON(w, http.StatusNotFound, openAIRespError(fmt.Sprintf("Response with id '%s' not found.", id), "", ""))
		return
	}
	s.record(r, Call{Kind: kind, Status: http.StatusOK})
	writeBody(w, http.StatusOK, st.body)
}

// handleOpenAIResponseDelete is DELETE /v1/responses/{id}: the response is
// forgotten, and answered as the API reference's example answers.
func (s *Server) handleOpenAIResponseDelete(w http.ResponseWriter, r *http.Request) {
	s.responseDelete(w, r, KindOpenAI)
}

// responseDelete answers a DELETE of a stored response, recorded under
// kind.
func (s *Server) responseDelete(w http.ResponseWriter, r *http.Request, kind string) {
	id := r.PathValue("id")
	s.mu.Lock()
	_, ok := s.stored[id]
	delete(s.stored, id)
	s.mu.Unlock()
	if !ok {
		s.record(r, Call{Kind: kind, Status: http.StatusNotFound})
		writeJSON(w, http.StatusNotFound, openAIRespError(fmt.Sprintf("Response with id '%s' not found.", id), "", ""))
		return
	}
	s.record(r, Call{Kind: kind, Status: http.StatusOK})
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
}

// ---- OpenRouter ----

func (s *Server) handleORResponses(w http.ResponseWriter, r *http.Request) {
	var q responsesRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return orShape(400, err.Error()) })
	if !ok {
		return
	}
	// Stateless: store and previous_response_id are refused with a 400, as
	// the Responses API's overview documents.
	if q.Store != nil && *q.Store {
		writeJSON(w, http.StatusBadRequest, orShape(400, "store: true is not supported: the Responses API is stateless; send the full conversation in input"))
		return
	}
	if q.PreviousResponseID != nil {
		writeJSON(w, http.StatusBadRequest, orShape(400, "previous_response_id is not supported: the Responses API is stateless; send the full conversation in input"))
		return
	}
	turns, problem := inputTurns(q.Input)
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, orShape(400, problem))
		return
	}
	plan, rerr := s.orPlan(orRoute{model: q.Model, models: q.Models, provider: q.Provider, allowed: allowedModels(q.Plugins)})
	if rerr != nil {
		if rerr.excludedBy != "" {
			writeJSON(w, rerr.status, orPolicyError(plan.chain, plan.primary, rerr.excludedBy))
			return
		}
		if rerr.noProviders {
			writeJSON(w, rerr.status, s.orNoProviders(plan.primary, q.Provider))
			return
		}
		writeJSON(w, rerr.status, orShape(rerr.status, rerr.msg))
		return
	}
	prompt := turnTokens(q.Instructions, turns)
	sc := scriptFor(turns, q.toolNames(), fmt.Sprint("responses ", s.seq.Add(1)))
	res, ok := s.serveWalk(w, r, KindOpenRouter, hdr, q.Stream, prompt, plan.cands, s.orProviderError, orOverflow)
	if !ok {
		return
	}
	c := res.served
	p := respPlan{q: &q, model: orModelID(c.model), text: answerText(c.model.Slug, c.ep.Slug()), sc: sc, prompt: prompt,
		flavor: respFlavour{done: true, meta: s.orMeta(r, plan, res)}, midError: respMidError(orShape)}
	p.flavor.cost = orRespCost(c.ep, prompt, p.outputTokens())
	a, _ := s.responsesAnswer(p)
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}

// outputTokens is how many tokens the plan's answer will report as output.
func (p respPlan) outputTokens() int {
	n := 0
	if c := p.sc.toolCall(); c != nil {
		n = estimateTokens(len(c.name) + len(c.args))
	} else {
		n = estimateTokens(len(p.sc.textOr(p.text)))
	}
	if p.q.reasons() {
		n += estimateTokens(len(reasoningText))
	}
	return n
}

// orRespCost prices an answer on its endpoint, in OpenRouter's Responses
// cost members.
func orRespCost(e Endpoint, in, out int) *respCost {
	inCost, outCost := usd(float64(in)*e.PriceIn/1e6), usd(float64(out)*e.PriceOut/1e6)
	c := &respCost{Cost: usd(inCost + outCost)}
	c.CostDetails.UpstreamInferenceCost = c.Cost
	c.CostDetails.UpstreamInferenceInputCost = inCost
	c.CostDetails.UpstreamInferenceOutputCost = outCost
	return c
}

// ---- Vercel ----

func (s *Server) handleVercelResponses(w http.ResponseWriter, r *http.Request) {
	var q responsesRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return vercelShape(400, err.Error()) })
	if !ok {
		return
	}
	// The gateway routes each request afresh, so it continues no stored
	// response (its reference says nothing of state; a choice, see
	// ENDPOINTS.md).
	if q.PreviousResponseID != nil && *q.PreviousResponseID != "" {
		writeJSON(w, http.StatusBadRequest, vercelShape(400, "previous_response_id is not supported"))
		return
	}
	turns, problem := inputTurns(q.Input)
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, vercelShape(400, problem))
		return
	}
	cands, rerr := s.vercelPlan(q.Model, q.ProviderOptions.gateway())
	if rerr != nil && rerr.policy {
		writeJSON(w, rerr.status, vercelPolicyError(rerr.msg))
		return
	}
	if rerr != nil {
		writeJSON(w, rerr.status, vercelShape(rerr.status, rerr.msg))
		return
	}
	prompt := turnTokens(q.Instructions, turns)
	sc := scriptFor(turns, q.toolNames(), fmt.Sprint("responses ", s.seq.Add(1)))
	res, ok := s.serveWalk(w, r, KindVercel, hdr, q.Stream, prompt, cands, anyAttempt(vercelShape), vercelOverflow)
	if !ok {
		return
	}
	c := res.served
	p := respPlan{q: &q, model: q.Model, text: answerText(c.model.Slug, c.ep.Slug()), sc: sc, prompt: prompt,
		flavor: respFlavour{openAI: true}, midError: respMidError(vercelShape)}
	a, _ := s.responsesAnswer(p)
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}
