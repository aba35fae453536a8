package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAI's own API, answering as the live API does (testdata/recorded/openai):
// the dated snapshot id, pretty-printed non-stream bodies, and streams whose
// every chunk carries obfuscation padding.

// openAISnapshots are the snapshots the recordings show the live API serving
// for an undated id; openAISuffix dates any other.
var openAISnapshots = map[string]string{
	"gpt-4o":      "gpt-4o-2024-08-06",
	"gpt-4o-mini": "gpt-4o-mini-2024-07-18",
	"gpt-5":       "gpt-5-2025-08-07",
}

const openAISuffix = "-2024-08-06"

// oaAnswer is a non-stream answer, in the recorded member order.
type oaAnswer struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []oaChoice `json:"choices"`
	Usage             oaUsage    `json:"usage"`
	ServiceTier       string     `json:"service_tier"`
	SystemFingerprint string     `json:"system_fingerprint"`
}

type oaChoice struct {
	Index        int       `json:"index"`
	Message      oaMessage `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type oaMessage struct {
	Role        string       `json:"role"`
	Content     *string      `json:"content"`
	ToolCalls   []oaToolCall `json:"tool_calls,omitempty"`
	Refusal     *string      `json:"refusal"`
	Annotations []struct{}   `json:"annotations"`
}

// oaToolCall is a message's tool call, as recorded.
type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function oaFunc `json:"function"`
}

type oaFunc struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// oaCallDelta is a stream's piece of a tool call: the first names the
// call (id, type, name, empty arguments), the rest carry arguments.
type oaCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function oaFunc `json:"function"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

// oaChunk is a stream chunk, in the recorded member order. Usage is null
// on every chunk but the last when the request asked for usage, and absent
// otherwise.
type oaChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []oaChunkChoice `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
	Obfuscation       string          `json:"obfuscation"`
}

type oaChunkChoice struct {
	Index        int       `json:"index"`
	Delta        any       `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// oaFirstDelta opens a stream's message: its text is "" and, when the
// message is a tool call, null, with the call's first piece.
type oaFirstDelta struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	ToolCalls []oaCallDelta `json:"tool_calls,omitempty"`
	Refusal   *string       `json:"refusal"`
}

type oaCallsDelta struct {
	ToolCalls []oaCallDelta `json:"tool_calls"`
}

type oaTextDelta struct {
	Content string `json:"content"`
}

var jsonNull = json.RawMessage("null")

func openAIShape(status int, msg string) any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == 429:
		typ, code = "requests", "rate_limit_exceeded"
	case status == 401:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

// openAINoModel is the 404 of a model the API does not serve, as recorded
// (testdata/recorded/embeddings/openai-error-404-model-not-found.json).
func openAINoModel(model string) any {
	return map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model),
		"type":    "invalid_request_error", "param": nil, "code": "model_not_found",
	}}
}

func openAIOverflow(m *Model, prompt int) failure {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", m.ContextWindow, prompt),
		"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
	}})
	return failure{status: http.StatusBadRequest, body: b}
}

// directModel finds a catalog model served by provider from the provider's
// own id, with or without a date ("gpt-4o", "claude-sonnet-4-5-20250929"),
// or from a slug ("openai/gpt-4o"); dots and dashes compare equal.
func (s *Server) directModel(ref, provider string) (*Model, Endpoint, bool) {
	norm := func(x string) string { return strings.ReplaceAll(strings.ToLower(x), ".", "-") }
	want := norm(ref)
	bare := norm(undated(ref))
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		native := norm(m.nativeID(provider))
		if want != norm(m.Slug) && want != native && bare != native {
			continue
		}
		for _, e := range m.Endpoints {
			if providerMatches(provider, e.Slug()) {
				return m, e, true
			}
		}
	}
	return nil, Endpoint{}, false
}

func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request) {
	s.serveDirectChat(w, r, openAIDirect)
}

// direct is a direct provider's API on the OpenAI wire: OpenAI's own, or
// Azure OpenAI's v1 surface (azure.go), which answer alike but for what
// azure.go adds.
type direct struct {
	// kind is the upstream kind calls are recorded under.
	kind string
	// provider is the catalog's provider slug whose native ids the model
	// member names.
	provider string
}

var openAIDirect = direct{kind: KindOpenAI, provider: "openai"}

// serveDirectChat answers a chat completion of a direct provider.
func (s *Server) serveDirectChat(w http.ResponseWriter, r *http.Request, d direct) {
	var q chatRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return openAIShape(400, "We could not parse the JSON body of your request.") })
	if !ok {
		return
	}
	if q.Model == "" {
		writeJSON(w, http.StatusBadRequest, openAIShape(400, "you must provide a model parameter"))
		return
	}
	m, ep, ok := s.directModel(q.Model, d.provider)
	if !ok {
		writeJSON(w, http.StatusNotFound, openAINoModel(q.Model))
		return
	}
	prompt := promptTokens(nil, q.Messages)
	sc := q.script(s)
	res, ok := s.serveWalk(w, r, d.kind, hdr, q.Stream, prompt, []candidate{{m, ep}}, anyAttempt(openAIShape), openAIOverflow)
	if !ok {
		return
	}
	asked := m.nativeID(d.provider)
	if strings.EqualFold(undated(q.Model), asked) {
		asked = q.Model // a dated id is answered as asked
	}
	cached := 0
	if d.kind == KindAzure {
		cached = s.azureCached(&q, prompt)
	}
	a := s.openAIAnswer(m, d.provider, dated(asked, openAISnapshots, openAISuffix), prompt, cached, q.includeUsage(), sc)
	if d.kind == KindAzure {
		azureAnnotate(a)
	}
	s.serveAnswer(w, r, q.Stream, a, res.fault)
}

// undated is an id without its date or version suffix, or the id itself.
func undated(id string) string {
	if bare := trimVersion(id); bare != "" {
		return bare
	}
	return id
}

// openAIAnswer renders a served answer of model (the dated id reported):
// the default text, or what the request's directives script.
func (s *Server) openAIAnswer(m *Model, provider, model string, prompt, cached int, includeUsage bool, sc *script) *answer {
	text := sc.textOr(answerText(m.Slug, provider))
	call := sc.toolCall()
	out := estimateTokens(len(text))
	finish := "stop"
	content := &text
	var calls []oaToolCall
	if call != nil {
		out, finish, content = estimateTokens(len(call.name)+len(call.args)), "tool_calls", nil
		calls = []oaToolCall{{ID: call.callID("call_", 24), Type: "function", Function: oaFunc{Name: call.name, Arguments: call.args}}}
	}
	created := time.Now().Unix()
	id := openAIID(s.seq.Add(1))
	fp := fingerprint("openai "+model, hexDigits)
	var u oaUsage
	u.PromptTokens, u.CompletionTokens, u.TotalTokens = prompt, out, prompt+out
	u.PromptTokensDetails.CachedTokens = cached

	a := &answer{streamType: "text/event-stream; charset=utf-8", done: true}
	body, _ := json.MarshalIndent(oaAnswer{ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []oaChoice{{Message: oaMessage{Role: "assistant", Content: content, ToolCalls: calls, Annotations: []struct{}{}}, FinishReason: finish}},
		Usage:   u, ServiceTier: "default", SystemFingerprint: fp}, "", "  ")
	a.body = append(body, '\n')

	n := 0
	chunk := func(delta any, finish *string) oaChunk {
		ch := oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, ServiceTier: "default",
			SystemFingerprint: fp, Choices: []oaChunkChoice{{Delta: delta, FinishReason: finish}},
			Obfuscation: obfuscation(fmt.Sprint(id, n))}
		n++
		if includeUsage {
			ch.Usage = jsonNull
		}
		return ch
	}
	if call != nil {
		first := oaCallDelta{ID: calls[0].ID, Type: "function", Function: oaFunc{Name: call.name}}
		a.events = append(a.events, dataEvent(mustJSON(chunk(oaFirstDelta{Role: "assistant", ToolCalls: []oaCallDelta{first}}, nil))))
		for _, p := range argPieces(call.args) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(oaCallsDelta{[]oaCallDelta{{Function: oaFunc{Arguments: p}}}}, nil))))
		}
	} else {
		empty := ""
		a.events = append(a.events, dataEvent(mustJSON(chunk(oaFirstDelta{Role: "assistant", Content: &empty}, nil))))
		for _, p := range pieces(text) {
			a.events = append(a.events, dataEvent(mustJSON(chunk(oaTextDelta{p}, nil))))
		}
	}
	a.events = append(a.events, dataEvent(mustJSON(chunk(struct{}{}, &finish))))
	if includeUsage {
		last := chunk(nil, nil)
		last.Choices, last.Usage = []oaChunkChoice{}, mustJSON(u)
		a.events = append(a.events, dataEvent(mustJSON(last)))
	}

	a.midError = func(stream bool) (int, []byte, []streamEvent) {
		b := mustJSON(openAIShape(http.StatusInternalServerError, "simulated fault: error after generation started"))
		if !stream {
			return http.StatusInternalServerError, b, nil
		}
		return 0, nil, []streamEvent{dataEvent(b)}
	}
	return a
}
