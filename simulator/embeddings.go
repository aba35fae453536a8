package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
)

// The embeddings endpoints of the three upstreams that have one, each in
// the shape testdata/recorded/<upstream>/embeddings-* holds: OpenAI's
// (recorded live traffic), OpenRouter's and the Vercel AI Gateway's (their
// published API references' examples; see the SOURCES.md beside them).
// Anthropic's API has no embeddings endpoint, and neither has the
// simulator's Anthropic upstream. Vectors are deterministic: the same
// model, input and dimensions always embed the same.

// embeddingsRequest is an embeddings body with the marketplaces' routing
// fields.
type embeddingsRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Dimensions      int             `json:"dimensions"`
	EncodingFormat  string          `json:"encoding_format"`
	Provider        *orProvider     `json:"provider"`
	ProviderOptions *vercelOptions  `json:"providerOptions"`
}

// defaultDimensions is the simulator's vector length when a request sets
// none: short, so that bodies stay small in tests.
const defaultDimensions = 8

// inboundRoutes adds the endpoints beside chat: the embeddings endpoints
// and Anthropic's token count.
func (s *Server) inboundRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /openrouter/api/v1/embeddings", s.track(s.handleOREmbeddings))
	mux.HandleFunc("POST /vercel/v1/embeddings", s.track(s.handleVercelEmbeddings))
	mux.HandleFunc("POST /openai/v1/embeddings", s.track(s.handleOpenAIEmbeddings))
	mux.HandleFunc("POST /anthropic/v1/messages/count_tokens", s.track(s.handleAnthropicCount))
}

// inputs returns the input's items (texts, or token ids as text) and its
// size in the simulator's tokens; ok is false for an input the upstreams
// refuse.
func (q *embeddingsRequest) inputs() (items []string, tokens int, ok bool) {
	var one string
	if json.Unmarshal(q.Input, &one) == nil && one != "" {
		return []string{one}, estimateTokens(len([]rune(one))), true
	}
	var many []string
	if json.Unmarshal(q.Input, &many) == nil && len(many) > 0 {
		for _, t := range many {
			tokens += estimateTokens(len([]rune(t)))
		}
		return many, tokens, true
	}
	var ids []int64
	if json.Unmarshal(q.Input, &ids) == nil && len(ids) > 0 {
		return []string{fmt.Sprint(ids)}, len(ids), true
	}
	var batches [][]int64
	if json.Unmarshal(q.Input, &batches) == nil && len(batches) > 0 {
		for _, b := range batches {
			items = append(items, fmt.Sprint(b))
			tokens += len(b)
		}
		return items, tokens, true
	}
	return nil, 0, false
}

// vector is the deterministic unit vector of one input.
func vector(model, text string, dims int) []float32 {
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", model, text, i)))
		x := float64(binary.LittleEndian.Uint32(h[:4]))/math.MaxUint32*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	if norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(norm))
		}
	}
	return v
}

// embeddingData renders the data array: float arrays, or base64 of the
// little-endian float32 values as OpenAI's encoding_format base64 sends.
func embeddingData(q *embeddingsRequest, model string, items []string) []any {
	dims := q.Dimensions
	if dims <= 0 {
		dims = defaultDimensions
	}
	data := make([]any, len(items))
	for i, it := range items {
		v := vector(model, it, dims)
		var emb any = v
		if q.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = orderedJSON{{"object", "embedding"}, {"index", i}, {"embedding", emb}}
	}
	return data
}

// orderedJSON is a JSON object written in its members' order, as the
// upstreams write them.
type orderedJSON []struct {
	k string
	v any
}

// MarshalJSON implements [json.Marshaler].
func (o orderedJSON) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// embeddingsModel finds an embedding model; a chat model is not one.
func (s *Server) embeddingsModel(ref string) (*Model, bool) {
	m, ok := s.cfg.model(ref)
	return m, ok && m.Embedding
}

// serveEmbeddings tries the candidates in order, as the chat endpoints do:
// each attempt's faults apply (a failing one moves on to the next
// candidate), an input larger than the model's context window fails the
// attempt, and the first that serves answers with body(served, items,
// tokens). When none serves, the last failure is the answer. It walks on
// its own rather than through the chat endpoints' walk, so that it depends
// only on the fault machinery.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request, kind string, hdr []Fault, q *embeddingsRequest, cands []candidate,
	shape func(int, string) any, body func(c *candidate, items []string, tokens int) any) {
	items, tokens, ok := q.inputs()
	if !ok {
		writeJSON(w, http.StatusBadRequest, shape(400, "'input' must be a non-empty string, array of strings or array of token ids"))
		return
	}
	var last *failure
	for i := range cands {
		c := &cands[i]
		slug := c.ep.Slug()
		delay, f := s.plan(hdr, c.model.Slug, slug)
		if !s.sleep(r.Context(), delay) {
			return // the caller went away
		}
		fs := ""
		if f != nil {
			fs = f.String()
		}
		switch {
		case f != nil && f.failsAttempt():
			x := s.failWith(f, shape, slug)
			last = &x
		case c.model.ContextWindow > 0 && tokens > c.model.ContextWindow:
			b, _ := json.Marshal(shape(400, fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens in your input.", c.model.ContextWindow, tokens)))
			last = &failure{status: http.StatusBadRequest, body: b}
		default:
			s.record(r, Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: http.StatusOK, Fault: fs})
			s.answerEmbeddings(w, r, f, body(c, items, tokens))
			return
		}
		s.record(r, Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: last.status, Fault: fs})
	}
	if last != nil {
		last.write(w)
	}
}

// answerEmbeddings writes a served answer, unless a behaviour fault (hang,
// garbage, cut, ...) takes the attempt over.
func (s *Server) answerEmbeddings(w http.ResponseWriter, r *http.Request, f *Fault, answer any) {
	b, err := json.Marshal(answer)
	if err != nil {
		simError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if s.serveBehaviour(w, r, f, false, b) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// vercelEmbeddingEndpoints orders a model's endpoints as the gateway's
// providerOptions say: only filters, sort ranks (catalog order by
// default), order goes first and the other eligible providers follow.
func vercelEmbeddingEndpoints(m *Model, g *vercelGateway) []Endpoint {
	var eps []Endpoint
	for _, e := range m.Endpoints {
		if g != nil && len(g.Only) > 0 && !anyProvider(g.Only, e) {
			continue
		}
		eps = append(eps, e)
	}
	if g == nil {
		return eps
	}
	sortEndpoints(eps, vercelSort[g.Sort])
	var first, rest []Endpoint
	for _, ref := range g.Order {
		for _, e := range eps {
			if providerMatches(ref, e.Slug()) && !anyProvider(slugsOf(first), e) {
				first = append(first, e)
			}
		}
	}
	for _, e := range eps {
		if !anyProvider(slugsOf(first), e) {
			rest = append(rest, e)
		}
	}
	return append(first, rest...)
}

func anyProvider(refs []string, e Endpoint) bool {
	for _, r := range refs {
		if providerMatches(r, e.Slug()) {
			return true
		}
	}
	return false
}

func slugsOf(eps []Endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.Slug()
	}
	return out
}

func (s *Server) handleOpenAIEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serveDirectEmbeddings(w, r, openAIDirect)
}

// serveDirectEmbeddings answers an embeddings request of a direct provider.
func (s *Server) serveDirectEmbeddings(w http.ResponseWriter, r *http.Request, d direct) {
	var q embeddingsRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return openAIShape(400, "We could not parse the JSON body of your request.") })
	if !ok {
		return
	}
	m, ep, ok := s.directModel(q.Model, d.provider)
	if !ok || !m.Embedding {
		writeJSON(w, http.StatusNotFound, openAINoModel(q.Model))
		return
	}
	s.serveEmbeddings(w, r, d.kind, hdr, &q, []candidate{{m, ep}}, openAIShape, func(c *candidate, items []string, tokens int) any {
		return orderedJSON{{"object", "list"}, {"data", embeddingData(&q, c.model.Slug, items)}, {"model", q.Model},
			{"usage", orderedJSON{{"prompt_tokens", tokens}, {"total_tokens", tokens}}}}
	})
}

func (s *Server) handleOREmbeddings(w http.ResponseWriter, r *http.Request) {
	var q embeddingsRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return orShape(400, err.Error()) })
	if !ok {
		return
	}
	sortKey, err := q.Provider.sortKey()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, orShape(400, err.Error()))
		return
	}
	m, ok := s.embeddingsModel(q.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, orShape(404, fmt.Sprintf("Model %s is not an embeddings model", q.Model)))
		return
	}
	var cands []candidate
	for _, e := range openRouterEndpoints(m, q.Provider, sortKey) {
		cands = append(cands, candidate{m, e})
	}
	if len(cands) == 0 {
		writeJSON(w, http.StatusNotFound, orShape(404, fmt.Sprintf("No allowed providers are available for the selected model %s", m.Slug)))
		return
	}
	s.serveEmbeddings(w, r, KindOpenRouter, hdr, &q, cands, orShape, func(c *candidate, items []string, tokens int) any {
		return orderedJSON{{"id", s.nextID("gen-emb-sim-")}, {"object", "list"}, {"data", embeddingData(&q, c.model.Slug, items)},
			{"model", c.model.Slug},
			{"usage", orderedJSON{{"prompt_tokens", tokens}, {"total_tokens", tokens}, {"cost", cost(c.ep, tokens, 0)}}}}
	})
}

func (s *Server) handleVercelEmbeddings(w http.ResponseWriter, r *http.Request) {
	var q embeddingsRequest
	hdr, ok := s.readRequest(w, r, &q, func(err error) any { return vercelShape(400, err.Error()) })
	if !ok {
		return
	}
	g := q.ProviderOptions.gateway()
	m, ok := s.embeddingsModel(q.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, vercelShape(404, fmt.Sprintf("Model '%s' not found", q.Model)))
		return
	}
	var cands []candidate
	for _, e := range vercelEmbeddingEndpoints(m, g) {
		cands = append(cands, candidate{m, e})
	}
	if len(cands) == 0 {
		writeJSON(w, http.StatusNotFound, vercelShape(404, fmt.Sprintf("No providers available for model '%s' with the requested provider options", q.Model)))
		return
	}
	s.serveEmbeddings(w, r, KindVercel, hdr, &q, cands, vercelShape, func(c *candidate, items []string, tokens int) any {
		// The documented answer elides the routing report ("{ ... }"); the
		// simulator writes the member the chat answers were recorded
		// carrying there, the provider that served, spelled and costed as
		// the chat report (vercelRouting) writes them.
		return orderedJSON{{"object", "list"}, {"data", embeddingData(&q, c.model.Slug, items)}, {"model", c.model.Slug},
			{"usage", orderedJSON{{"prompt_tokens", tokens}, {"total_tokens", tokens}}},
			{"providerMetadata", map[string]any{"gateway": map[string]any{
				"routing": map[string]any{"finalProvider": s.cfg.providerName(KindVercel, c.ep)},
				"cost":    usdString(cost(c.ep, tokens, 0)),
			}}}}
	})
}
