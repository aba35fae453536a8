package snapshot

import (
	"encoding/json"
	"fmt"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Pin is a session's routing pin: the model and provider that served its
// last turn. A plan for the pinned model puts the provider first.
type Pin struct {
	Model, Provider string
}

// Memo compiles one request for one principal: the plan once per model, and
// the check and translation once per (upstream, model), since a route's
// targets often share both. The gateway, explain, diff and the compliance
// pages all compile through a Memo, so a request is planned and compiled the
// same way wherever it is looked at. A Memo is not safe for concurrent use.
type Memo struct {
	snap      *Snapshot
	principal profiles.Principal
	merged    profiles.Merged
	decision  *guardrails.Decision
	pin       Pin
	session   string
	body      connectors.Body
	// in is the API the request came in on (nil for chat completions).
	in *connectors.Inbound

	// The memo is searched linearly: a request plans a model or a route's
	// few targets. The first entries live in the memo itself, so the common
	// request allocates nothing for them; more spill into the slices.
	nplans, ncomps int
	planBuf        [2]memoPlan
	compBuf        [2]memoCompile
	morePlans      []memoPlan
	moreComps      []memoCompile
}

type memoPlan struct {
	model string
	plan  *compiler.Plan
}

type memoCompile struct {
	upstream, model string
	c               *Compiled
}

// Memo returns the compile memo of one request of a key: its ladder merged
// with the request rung (routing, nil when the request has none), the key's
// guardrail decision (nil when no guardrail applies), the session's pin (the
// zero Pin without one) and the body to translate.
func (s *Snapshot) Memo(key *profiles.Key, d *guardrails.Decision, routing *profiles.Profile, pin Pin, body connectors.Body) *Memo {
	m := new(Memo)
	s.InitMemo(m, key, d, routing, pin, body)
	return m
}

// InitMemo makes m the compile memo [Snapshot.Memo] returns, in place: the
// gateway keeps a request's memo inside the request's own state.
func (s *Snapshot) InitMemo(m *Memo, key *profiles.Key, d *guardrails.Decision, routing *profiles.Profile, pin Pin, body connectors.Body) {
	layers := s.layers[key.ID]
	if routing != nil {
		layers = append(layers[:len(layers):len(layers)], profiles.Layer{Rung: "request", File: profiles.RequestFile, Profile: routing})
	}
	// Field by field, the merge off the connection's stack: a Memo built
	// whole, and a Merged returned, are temporaries of the caller's frame
	// (over 2 KiB together), at the request's planning (stack_test.go).
	*m = Memo{}
	m.snap, m.principal, m.decision, m.pin, m.body = s, key.Principal(), d, pin, body
	connectors.OffStack(func() { m.merged = profiles.Merge(layers...) })
}

// MemoMerged is [Snapshot.Memo] for a profile already merged (the request
// rung included): diff compiles once for every key whose merged profile and
// decision are equal.
func (s *Snapshot) MemoMerged(p profiles.Principal, merged profiles.Merged, d *guardrails.Decision, pin Pin, body connectors.Body) *Memo {
	return &Memo{snap: s, principal: p, merged: merged, decision: d, pin: pin, body: body}
}

// SetInbound says which API the request came in on (nil: chat
// completions), before anything is planned or compiled: its translation,
// and the kind of model its chains keep.
func (m *Memo) SetInbound(in *connectors.Inbound) { m.in = in }

// SetSession names the request's session ("" for none), before anything is
// planned: every plan carries it, for the connectors' stickiness knobs.
func (m *Memo) SetSession(id string) { m.session = id }

// Snapshot returns the configuration the memo compiles against.
func (m *Memo) Snapshot() *Snapshot { return m.snap }

// Body returns the request body the memo translates.
func (m *Memo) Body() connectors.Body { return m.body }

// Plan decides the request for one model: the merged profile and the
// guardrail decision apply to every model alike.
func (m *Memo) Plan(model string) *compiler.Plan {
	for _, e := range m.planBuf[:m.nplans] {
		if e.model == model {
			return e.plan
		}
	}
	for _, e := range m.morePlans {
		if e.model == model {
			return e.plan
		}
	}
	req := compiler.Request{Principal: m.principal, Model: model, Session: m.session}
	if m.in != nil && len(m.in.Beta) > 0 {
		req.Betas = compiler.SplitBetas(m.in.Beta) // the check keeps, per upstream, those it takes
	}
	if m.pin.Model == model {
		req.PinnedProvider = m.pin.Provider
	}
	// Off the connection's stack, as the merge and the compile: a refusal
	// formats its message here (fmt's frames), at the request's deepest.
	var p *compiler.Plan
	connectors.OffStack(func() {
		p = keepKind(compiler.DecideMerged(req, &m.merged, m.decision), m.snap.Catalog, m.in)
		p = compiler.KeepSatisfiable(p, m.snap.Catalog, m.snap.agreements)
	})
	if m.nplans < len(m.planBuf) {
		m.planBuf[m.nplans] = memoPlan{model, p}
		m.nplans++
	} else {
		m.morePlans = append(m.morePlans, memoPlan{model, p})
	}
	return p
}

// Compile checks and translates the request for one (upstream, model).
// Compiled.Refused says when that upstream must not serve it.
func (m *Memo) Compile(upstream, model string) (*Compiled, error) {
	for _, e := range m.compBuf[:m.ncomps] {
		if e.upstream == upstream && e.model == model {
			return e.c, nil
		}
	}
	for _, e := range m.moreComps {
		if e.upstream == upstream && e.model == model {
			return e.c, nil
		}
	}
	// Off the connection's stack: compiling is the deepest part of
	// planning (gateway/stack_test.go).
	var c *Compiled
	var err error
	connectors.OffStack(func() { c, err = m.snap.CompileFor(m.Plan(model), upstream, m.body, m.in) })
	if err != nil {
		return nil, err
	}
	if m.ncomps < len(m.compBuf) {
		m.compBuf[m.ncomps] = memoCompile{upstream, model, c}
		m.ncomps++
	} else {
		m.moreComps = append(m.moreComps, memoCompile{upstream, model, c})
	}
	return c, nil
}

// CompileBody compiles a variant of the request's body (one whose completion
// cap a budget lowered) for one (upstream, model); it is not memoised.
func (m *Memo) CompileBody(upstream, model string, body connectors.Body) (c *Compiled, err error) {
	connectors.OffStack(func() { c, err = m.snap.CompileFor(m.Plan(model), upstream, body, m.in) })
	return c, err
}

// Usable returns the route without the targets the request may not be sent
// to at all (a refusal or a translation error on that target): those are
// skipped, never failed over to. When no ordinary target is left, refused is
// the first target's refusal (in written order), or an upstream_unavailable
// refusal when there was none.
func (m *Memo) Usable(rt *profiles.Route) (usable *profiles.Route, refused *compiler.Refusal, err error) {
	u, ok := failover.Without(rt, func(t profiles.Target) bool {
		if err != nil {
			return true
		}
		c, cerr := m.Compile(t.Upstream, t.Model)
		if cerr != nil {
			err = cerr
			return true
		}
		if r := c.Refused(); r != nil {
			if refused == nil {
				refused = r
			}
			return true
		}
		return false
	})
	switch {
	case err != nil:
		return nil, nil, err
	case ok:
		return u, nil, nil
	case refused == nil:
		refused = &compiler.Refusal{Code: CodeUpstreamUnavailable, Message: fmt.Sprintf("route %q has no ordinary target", rt.Model)}
	}
	return u, refused, nil
}

// keepKind drops from a plan's chain the catalog's models of the other kind
// than the request's API (a chain is the profile's, written for chat): an
// embeddings request never falls back to a chat model, nor the reverse. The
// plan is returned as it is when nothing is dropped.
func keepKind(p *compiler.Plan, cat *guardrails.Catalog, in *connectors.Inbound) *compiler.Plan {
	if cat == nil || len(p.Chain) == 0 {
		return p
	}
	embeddings := in != nil && in.API == connectors.APIEmbeddings
	mismatch := func(slug string) bool {
		m, ok := cat.Model(slug)
		return ok && m.Embedding() != embeddings
	}
	return p.DropFromChain(mismatch, guardrails.DropKind)
}

// CodeUpstreamUnavailable is the refusal code of a route left with no target
// the request may be sent to.
const CodeUpstreamUnavailable = "upstream_unavailable"

// ModelBody is the request compiled when only a model is known (the admin
// API's explain, a request-log row re-run for review, diff): the model and
// one user message.
func ModelBody(model string) connectors.Body {
	m, _ := json.Marshal(model)
	return connectors.Body{"model": m, "messages": modelBodyMessages}
}

var modelBodyMessages = json.RawMessage(`[{"role":"user","content":"Hello."}]`)
