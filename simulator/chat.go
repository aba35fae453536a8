package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// chatRequest is the OpenAI chat body plus the marketplaces' routing fields.
type chatRequest struct {
	Model         string        `json:"model"`
	Models        []string      `json:"models"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Provider        *orProvider    `json:"provider"`
	Plugins         []orPlugin     `json:"plugins"`
	ProviderOptions *vercelOptions `json:"providerOptions"`
	Tools           chatTools      `json:"tools"`
}

// orPlugin is one of an OpenRouter request's plugins (the auto router's
// allowed models are the simulator's concern).
type orPlugin struct {
	ID            string   `json:"id"`
	AllowedModels []string `json:"allowed_models"`
}

// script is what the request's tool-call directives ask for, or nil.
func (q *chatRequest) script(s *Server) *script {
	return scriptFor(chatTurns(q.Messages), q.Tools.names(), fmt.Sprint("chat ", s.seq.Add(1)))
}

func (q *chatRequest) includeUsage() bool {
	return q.StreamOptions != nil && q.StreamOptions.IncludeUsage
}

// attemptLog is one attempt as reported back in routing metadata.
type attemptLog struct {
	model  *Model
	ep     Endpoint
	status int
	// errMsg is a failed attempt's error message.
	errMsg string
	// start and end are when the attempt began and was decided.
	start, end time.Time
}

// attemptShape renders an attempt failed by a status fault in the upstream's
// error shape.
type attemptShape func(c candidate, status int, msg string) any

// anyAttempt adapts an error shape that does not depend on the attempt.
func anyAttempt(shape func(int, string) any) attemptShape {
	return func(_ candidate, status int, msg string) any { return shape(status, msg) }
}

// walkResult is what walking a candidate list produced.
type walkResult struct {
	served   *candidate
	fault    *Fault // behaviour fault on the served attempt, if any
	attempts []attemptLog
	last     *failure
	gone     bool // client went away / server closed mid-walk
}

// walk tries candidates in order, applying faults; failed attempts (status,
// error, huge_error faults, context overflow) move on to the next candidate.
func (s *Server) walk(r *http.Request, kind string, hdr []Fault, stream bool, prompt int,
	cands []candidate, shape attemptShape, overflow func(m *Model, prompt int) failure) walkResult {
	var res walkResult
	for i := range cands {
		c := cands[i]
		slug := c.ep.Slug()
		start := time.Now()
		delay, f := s.plan(hdr, c.model.Slug, slug)
		if s.cfg.ApplyLatency {
			delay += time.Duration(c.ep.LatencyMs * float64(time.Millisecond))
		}
		if !s.sleep(r.Context(), delay) {
			res.gone = true
			return res
		}
		fs := ""
		if f != nil {
			fs = f.String()
		}
		var fl *failure
		switch {
		case f != nil && f.failsAttempt():
			x := s.failWith(f, func(status int, msg string) any { return shape(c, status, msg) }, slug)
			fl = &x
		case c.model.ContextWindow > 0 && prompt > c.model.ContextWindow:
			x := overflow(c.model, prompt)
			fl = &x
		}
		if fl != nil {
			s.record(r, Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: fl.status, Fault: fs, Stream: stream})
			res.attempts = append(res.attempts, attemptLog{c.model, c.ep, fl.status, fl.message(), start, time.Now()})
			res.last = fl
			continue
		}
		st := http.StatusOK
		if f != nil && f.Action == FaultHang {
			st = 0
		}
		s.record(r, Call{Kind: kind, Model: c.model.Slug, Provider: slug, Status: st, Fault: fs, Stream: stream})
		res.attempts = append(res.attempts, attemptLog{c.model, c.ep, http.StatusOK, "", start, time.Now()})
		res.served, res.fault = &c, f
		return res
	}
	return res
}

// serveWalk walks the candidates like walk; when none served it answers with
// the last failure (nothing when the client went away) and reports false.
func (s *Server) serveWalk(w http.ResponseWriter, r *http.Request, kind string, hdr []Fault, stream bool, prompt int,
	cands []candidate, shape attemptShape, overflow func(m *Model, prompt int) failure) (walkResult, bool) {
	res := s.walk(r, kind, hdr, stream, prompt, cands, shape, overflow)
	if res.gone {
		return res, false
	}
	if res.served == nil {
		res.last.write(w)
		return res, false
	}
	return res, true
}

// streamEvent is one thing a simulated stream writes: an SSE comment line,
// or an event (its name optional) and its data.
type streamEvent struct {
	comment string
	name    string
	data    []byte
}

// dataEvent is an unnamed event carrying data.
func dataEvent(data []byte) streamEvent { return streamEvent{data: data} }

// doneData is the data of the event that ends an OpenAI-shaped stream.
var doneData = []byte("[DONE]")

// answer is a served attempt in its upstream's wire shape.
type answer struct {
	// body is the non-stream answer, byte for byte.
	body []byte
	// streamType is the Content-Type of the stream.
	streamType string
	// events is the stream, without its terminator.
	events []streamEvent
	// done: the stream ends with data: [DONE].
	done bool
	// midError is what the upstream sends when generation fails after it
	// started (the stream_error_after fault): the status and body of a
	// non-stream answer, and the events that end a stream, in place of the
	// rest of it.
	midError func(stream bool) (status int, body []byte, events []streamEvent)
}

// serveAnswer writes a served answer, honouring the behaviour fault f.
// Faults that count chunks count events with data; comments are not chunks.
func (s *Server) serveAnswer(w http.ResponseWriter, r *http.Request, stream bool, a *answer, f *Fault) {
	if s.serveBehaviour(w, r, f, stream, a.body) {
		return
	}
	failAt, cutAt := -1, -1
	if f != nil && f.Action == FaultStreamErrorAfter {
		failAt = f.N
	}
	if f != nil && f.Action == FaultCutAfter {
		cutAt = f.N
	}
	if !stream {
		if failAt >= 0 {
			status, body, _ := a.midError(false)
			writeBody(w, status, body)
			return
		}
		writeBody(w, http.StatusOK, a.body)
		return
	}
	e := s.newSSE(w, r, a.streamType)
	n := 0
	for _, ev := range a.events {
		if ev.comment != "" {
			if !e.comment(ev.comment) {
				return
			}
			continue
		}
		if n == cutAt {
			cut()
		}
		if n == failAt {
			_, _, evs := a.midError(true)
			for _, x := range evs {
				if !e.send(x.name, x.data) {
					return
				}
			}
			return
		}
		if !e.send(ev.name, ev.data) {
			return
		}
		n++
	}
	if cutAt >= 0 {
		cut()
	}
	if a.done && e.send("", doneData) && s.cfg.StreamEndDelay > 0 {
		s.sleep(e.ctx, s.cfg.StreamEndDelay)
	}
}

// writeBody writes a JSON answer with its length.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// mustJSON encodes v, which is plain data the simulator built.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("simulator: encoding an answer: %v", err))
	}
	return b
}
