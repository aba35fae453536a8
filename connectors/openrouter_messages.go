package connectors

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The openrouter connector's Messages API: OpenRouter's Anthropic-shaped
// POST /api/v1/messages, which takes the same routing members as its chat
// completions (model, models, provider, session_id; OpenRouter's OpenAPI
// document, MessagesRequest), so a Messages request keeps everything the
// chat shape lacks (cache breakpoints, thinking, context editing). The
// answer is Anthropic's message with the serving provider beside it
// (provider; on a stream, in message_start's message) and the billed cost
// in its usage; the router's report rides on the answer, or on a stream's
// message_stop. See testdata/recorded/ENDPOINTS.md.

var _ messagesNative = (*openRouter)(nil)

// messagesCapabilities implements [messagesNative]: the chat endpoint's.
func (c *openRouter) messagesCapabilities() compiler.Capabilities { return c.Capabilities() }

// translateMessages implements [messagesNative]: the caller's body with the
// routing members set; the anthropic-beta flags the check kept go along.
func (*openRouter) translateMessages(_ *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set, affinity := openRouterRouting(body, plan, out)
	return &Native{Path: "/messages", Header: withBeta(openRouterHeaders, out), Body: encodeBody(body, set...), Affinity: affinity}, nil
}

// withBeta adds the anthropic-beta flags the check kept for the upstream
// ([compiler.Outcome.Betas], never the inbound request's own list) to a
// connector's shared headers (copied, never changed).
func withBeta(h http.Header, out *compiler.Outcome) http.Header {
	if out == nil || len(out.Betas) == 0 {
		return h
	}
	c := h.Clone()
	c.Set("Anthropic-Beta", strings.Join(out.Betas, ","))
	return c
}

// orMessagesStrip is what the caller of a Messages answer never sees: the
// provider and the router's report.
var orMessagesStrip = []string{"provider", "openrouter_metadata"}

// messagesResponse implements [messagesNative].
func (*openRouter) messagesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	res, err := readMessageAnswer(body, "")
	if err != nil {
		return nil, res, err
	}
	if err := readOpenRouterReport(body, &res); err != nil {
		return nil, res, err
	}
	readMessagesCost(jsonscan.Member(body, "usage"), &res)
	return jsonscan.StripMembers(body, orMessagesStrip...), res, nil
}

// readMessagesCost reads a marketplace's billed cost from a Messages usage.
func readMessagesCost(usage []byte, res *Result) {
	if usage == nil {
		return
	}
	if num := jsonscan.NumberText(jsonscan.Member(usage, "cost")); num != nil {
		if c, err := strconv.ParseFloat(string(num), 64); err == nil {
			res.Cost, res.CostReported = c, true
		}
	}
}

// newMessagesStream implements [messagesNative].
func (*openRouter) newMessagesStream(*Call) Stream {
	return &orMessagesRelay{relay: anthRelay{read: newMsgReadBack("")}}
}

// orMessagesRelay relays OpenRouter's Messages event stream as Anthropic's
// relay does, reading the provider from message_start, the cost from the
// usage and the router's report from message_stop, and removing both.
type orMessagesRelay struct {
	relay    anthRelay
	provider string
	report   Result
	cost     Result
}

// Event implements [Stream.Event].
func (s *orMessagesRelay) Event(event, data []byte, emit func([]byte) error) (bool, error) {
	if string(data) == string(doneData) {
		return true, nil // the sentinel OpenRouter's document declares after message_stop
	}
	name := string(event)
	if name == "" {
		name = string(jsonscan.StringContent(jsonscan.Member(data, "type")))
	}
	switch name {
	case "message_start":
		if msg := jsonscan.Member(data, "message"); msg != nil {
			var m struct {
				Provider string `json:"provider"`
			}
			if json.Unmarshal(msg, &m) == nil && m.Provider != "" {
				s.provider = m.Provider
			}
			if jsonMayHold(msg, orMessagesStrip...) {
				stripped := jsonscan.StripMembers(msg, orMessagesStrip...)
				data = spliceMember(data, "message", stripped)
			}
		}
	case "message_delta":
		readMessagesCost(jsonscan.Member(data, "usage"), &s.cost)
	case "message_stop":
		if jsonMayHold(data, "openrouter_metadata") {
			if err := readOpenRouterReport(data, &s.report); err != nil {
				return false, err
			}
			data = jsonscan.StripMembers(data, "openrouter_metadata")
		}
	}
	return s.relay.Event([]byte(name), data, emit)
}

// Result implements [Stream.Result].
func (s *orMessagesRelay) Result() Result {
	r := s.relay.Result()
	r.ServedProvider = s.provider
	if s.report.ServedProvider != "" {
		r.ServedProvider = s.report.ServedProvider
	}
	r.Attempts = s.report.Attempts
	if s.cost.CostReported {
		r.Cost, r.CostReported = s.cost.Cost, true
	}
	return r
}

// spliceMember returns obj with one top-level member's value replaced.
func spliceMember(obj []byte, key string, value []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return obj
	}
	m[key] = value
	b, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return b
}
