package simulator

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Amazon Bedrock's Converse API, which Bedrock serves every model through
// (sluice uses it for the models that are not Anthropic's), answering as
// the recordings show (testdata/recorded/bedrock/converse): Converse
// (POST bedrock/model/{modelId}/converse) answers {"metrics", "output":
// {"message": {"content", "role"}}, "stopReason", "usage"}; ConverseStream
// (…/converse-stream) answers application/vnd.amazon.eventstream frames,
// each an event named by its :event-type (messageStart,
// contentBlockStart for a tool call only, contentBlockDelta,
// contentBlockStop, messageStop, metadata) whose JSON payload carries a
// padding member "p", as the live recording does. Requests are
// authenticated as InvokeModel's are ([Server.bedrockAuth]); the answer is
// the simulator's Messages answer for the model (its text, its scripted
// tool calls), told in Converse's shapes.

// converseRoutes adds the Converse endpoints.
func (s *Server) converseRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /bedrock/model/{modelId}/converse", s.track(func(w http.ResponseWriter, r *http.Request) { s.handleConverse(w, r, false) }))
	mux.HandleFunc("POST /bedrock/model/{modelId}/converse-stream", s.track(func(w http.ResponseWriter, r *http.Request) { s.handleConverse(w, r, true) }))
}

// converseRequest is a Converse body: the members the Bedrock Runtime API
// reference lists, no other (an unknown member is refused, as Bedrock
// refuses it).
type converseRequest struct {
	Messages []struct {
		Role    string                       `json:"role"`
		Content []map[string]json.RawMessage `json:"content"`
	} `json:"messages"`
	System          []map[string]json.RawMessage `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int            `json:"maxTokens"`
		Temperature   json.RawMessage `json:"temperature"`
		TopP          json.RawMessage `json:"topP"`
		StopSequences []string        `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"toolChoice"`
	} `json:"toolConfig"`
	AdditionalModelRequestFields      json.RawMessage `json:"additionalModelRequestFields"`
	AdditionalModelResponseFieldPaths json.RawMessage `json:"additionalModelResponseFieldPaths"`
	GuardrailConfig                   json.RawMessage `json:"guardrailConfig"`
	PerformanceConfig                 json.RawMessage `json:"performanceConfig"`
	PromptVariables                   json.RawMessage `json:"promptVariables"`
	RequestMetadata                   json.RawMessage `json:"requestMetadata"`
	ServiceTier                       json.RawMessage `json:"serviceTier"`
}

// converseInvalid is the message of Bedrock's ValidationException as the
// API reference words it.
const converseInvalid = "The input fails to satisfy the constraints specified by Amazon Bedrock."

func (s *Server) handleConverse(w http.ResponseWriter, r *http.Request, stream bool) {
	hdr, body, ok := s.bedrockIntake(w, r)
	if !ok {
		return
	}
	var q converseRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&q) != nil || len(q.Messages) == 0 {
		bedrockError(w, http.StatusBadRequest, "ValidationException", converseInvalid)
		return
	}
	aq, ok := q.anthropic()
	if !ok {
		bedrockError(w, http.StatusBadRequest, "ValidationException", converseInvalid)
		return
	}
	m, ep, ok := s.directModel(r.PathValue("modelId"), "amazon-bedrock")
	if !ok {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid.")
		return
	}
	prompt := promptTokens(aq.System, aq.Messages)
	sc := aq.script(s)
	res, ok := s.serveWalk(w, r, KindBedrock, hdr, stream, prompt, []candidate{{m, ep}}, anyAttempt(bedrockShape), anthropicOverflow)
	if !ok {
		return
	}
	a := s.anthropicAnswer(m, r.PathValue("modelId"), prompt, false, sc, &anthExtras{text: answerText(m.Slug, "amazon-bedrock")})
	if !stream {
		s.serveAnswer(w, r, false, &answer{body: converseAnswer(a.body)}, res.fault)
		return
	}
	if s.serveBehaviour(w, r, res.fault, true, a.body) {
		return
	}
	s.converseStream(w, r, a, prompt)
}

// anthropic is the request as the Messages API's, for the simulator's
// token estimate and tool-call scripts; ok is false for a turn of a role
// Converse does not take.
func (q *converseRequest) anthropic() (*anthropicRequest, bool) {
	type block map[string]any
	var msgs []map[string]any
	for _, m := range q.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, false
		}
		var blocks []block
		for _, c := range m.Content {
			switch {
			case c["text"] != nil:
				blocks = append(blocks, block{"type": "text", "text": c["text"]})
			case c["toolUse"] != nil:
				var tu struct {
					ID    string          `json:"toolUseId"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				}
				_ = json.Unmarshal(c["toolUse"], &tu)
				blocks = append(blocks, block{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": tu.Input})
			case c["toolResult"] != nil:
				var tr struct {
					ID      string            `json:"toolUseId"`
					Content []json.RawMessage `json:"content"`
				}
				_ = json.Unmarshal(c["toolResult"], &tr)
				var parts []block
				for _, p := range tr.Content {
					var t struct {
						Text string `json:"text"`
					}
					_ = json.Unmarshal(p, &t)
					parts = append(parts, block{"type": "text", "text": t.Text})
				}
				blocks = append(blocks, block{"type": "tool_result", "tool_use_id": tr.ID, "content": parts})
			}
		}
		msgs = append(msgs, map[string]any{"role": m.Role, "content": blocks})
	}
	var system []block
	for _, b := range q.System {
		if b["text"] != nil {
			system = append(system, block{"type": "text", "text": b["text"]})
		}
	}
	doc := map[string]any{"messages": msgs}
	if len(system) > 0 {
		doc["system"] = system
	}
	if q.ToolConfig != nil {
		var tools []block
		for _, t := range q.ToolConfig.Tools {
			if t.ToolSpec != nil {
				tools = append(tools, block{"name": t.ToolSpec.Name})
			}
		}
		doc["tools"] = tools
	}
	var aq anthropicRequest
	if json.Unmarshal(mustJSON(doc), &aq) != nil {
		return nil, false
	}
	return &aq, true
}

// converseStops are the Messages API's stop reasons as Converse's.
var converseStops = map[string]string{"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens", "stop_sequence": "stop_sequence", "refusal": "content_filtered"}

// converseAnswer tells a Messages answer as Converse's.
func converseAnswer(msg []byte) []byte {
	var m struct {
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(msg, &m)
	content := []map[string]any{}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			content = append(content, map[string]any{"text": b.Text})
		case "tool_use":
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": b.ID, "name": b.Name, "input": b.Input}})
		}
	}
	return mustJSON(map[string]any{
		"metrics":    map[string]int{"latencyMs": 352},
		"output":     map[string]any{"message": map[string]any{"content": content, "role": "assistant"}},
		"stopReason": converseStops[m.StopReason],
		"usage":      converseUsage(m.Usage.Input, m.Usage.Output),
	})
}

// converseUsage is a usage object as the recorded answers carry it.
func converseUsage(in, out int) map[string]any {
	return map[string]any{"inputTokens": in, "outputTokens": out, "serverToolUsage": map[string]any{}, "totalTokens": in + out}
}

// converseStream writes a Messages answer's events as ConverseStream's.
func (s *Server) converseStream(w http.ResponseWriter, r *http.Request, a *answer, prompt int) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	out, sent := 0, 0
	send := func(typ string, payload map[string]any) bool {
		payload["p"] = bedrockPadding[:(sent*13+14)%len(bedrockPadding)]
		var msg eventstream.Message
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Payload = mustJSON(payload)
		if sent > 0 && !s.sleep(r.Context(), s.cfg.ChunkDelay) {
			return false
		}
		sent++
		if enc.Encode(w, msg) != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	for _, ev := range a.events {
		var e struct {
			Index        int `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				Output int `json:"output_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(ev.data, &e)
		ok := true
		switch ev.name {
		case "message_start":
			ok = send("messageStart", map[string]any{"role": "assistant"})
		case "content_block_start":
			if e.ContentBlock.Type == "tool_use" {
				ok = send("contentBlockStart", map[string]any{"contentBlockIndex": e.Index, "start": map[string]any{"toolUse": map[string]any{"toolUseId": e.ContentBlock.ID, "name": e.ContentBlock.Name}}})
			}
		case "content_block_delta":
			switch e.Delta.Type {
			case "text_delta":
				ok = send("contentBlockDelta", map[string]any{"contentBlockIndex": e.Index, "delta": map[string]any{"text": e.Delta.Text}})
			case "input_json_delta":
				ok = send("contentBlockDelta", map[string]any{"contentBlockIndex": e.Index, "delta": map[string]any{"toolUse": map[string]any{"input": e.Delta.PartialJSON}}})
			}
		case "content_block_stop":
			ok = send("contentBlockStop", map[string]any{"contentBlockIndex": e.Index})
		case "message_delta":
			out = e.Usage.Output
			ok = send("messageStop", map[string]any{"stopReason": converseStops[e.Delta.StopReason]})
		case "message_stop":
			ok = send("metadata", map[string]any{"metrics": map[string]int{"latencyMs": 802}, "usage": converseUsage(prompt, out)})
		}
		if !ok {
			return
		}
	}
}
