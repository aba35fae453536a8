package connectors

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// openRouter translates for a marketplace upstream that serves one model from
// many providers and walks a model chain itself.
type openRouter struct{}

var _ Connector = (*openRouter)(nil)

func newOpenRouter() *openRouter { return &openRouter{} }

// openRouterMaxModels is the longest `models` list the live API accepts (it
// refuses more than 3 entries, although its spec sets no maximum).
const openRouterMaxModels = 3

// openRouterAuto is the upstream's own auto-mode model.
const openRouterAuto = "openrouter/auto"

// Kind implements [Connector.Kind].
func (*openRouter) Kind() string { return "openrouter" }

// Capabilities implements [Connector.Capabilities].
func (*openRouter) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{Ranking: true, PreferredOrder: true, AllowList: true, DenyList: true,
		Chain: true, MaxChain: openRouterMaxModels, Auto: true,
		// The provider object's data members bind whichever key the
		// request carries: they are the request's own routing filter.
		ZeroRetention: true, NoTraining: true, Quantizations: true, MaxPrice: true, DataKnobsCallerKey: true}
}

// Authorize implements [Connector.Authorize].
func (*openRouter) Authorize(h http.Header, key string) { bearer(h, key) }

var openRouterSort = map[string]string{"cost": "price", "latency": "latency", "throughput": "throughput"}

// openRouterHeaders asks the upstream to report its attempts and the
// provider that served. Shared and read-only.
var openRouterHeaders = http.Header{"X-Openrouter-Metadata": {"enabled"}}

// Translate implements [Connector.Translate]: model, models (the chain), and
// one provider object (order, only, ignore, sort) that applies to every model
// of the chain, all in the upstream's own names. The upstream sorts only when
// no order is given, so the check leaves the sort out beside an order.
func (*openRouter) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set, affinity := openRouterRouting(body, plan, out)
	return &Native{Path: "/chat/completions", Header: openRouterHeaders, Body: encodeBody(body, set...), Affinity: affinity}, nil
}

// openRouterRouting is what every OpenRouter endpoint (chat completions,
// Messages, Responses) takes of a plan, in the same members: the model (or
// the auto mode), models, the provider object and session_id.
func openRouterRouting(body Body, plan *compiler.Plan, out *compiler.Outcome) ([]member, string) {
	set := make([]member, 0, 4)
	if plan.Auto {
		set = append(set, member{"model", jsonscan.AppendString(nil, openRouterAuto)})
		var plugin object
		if out.AutoModels != nil {
			plugin.field("allowed_models")
			plugin.buf = appendStringList(plugin.buf, out.AutoModels)
		}
		plugin.str("id", "auto-router")
		set = append(set, member{"plugins", append(append([]byte{'['}, plugin.bytes()...), ']')})
	} else {
		set = append(set, member{"model", jsonscan.AppendString(nil, out.NativeModel)})
	}
	if len(out.Chain) > 0 {
		set = append(set, member{"models", appendStringList(nil, out.Chain)})
	}
	if b := openRouterProvider(out); b != nil {
		set = append(set, member{"provider", b})
	}
	sticky, affinity := openRouterSession(body, plan.Session, out.Providers)
	return append(set, sticky...), affinity
}

// openRouterSession adds the session's id as session_id, which the
// upstream's API reference documents as its sticky-routing key: the turns
// that carry the same one go to the same provider, whose prompt cache is
// warm (at most 256 characters; sluice's session ids are at most 128). Its prompt-caching guide says sticky
// routing is not used when provider.order is set, so with an order (a
// profile's preferred providers, or the session's own pin) nothing is sent
// and nothing claimed: the pin alone keeps the session. A session_id the
// client sent itself is left as it is.
func openRouterSession(body Body, session string, ps compiler.Providers) ([]member, string) {
	if session == "" || len(ps.Preferred) > 0 {
		return nil, ""
	}
	if _, own := body["session_id"]; own {
		return nil, ""
	}
	return []member{{"session_id", jsonscan.AppendString(nil, session)}}, "session_id"
}

// openRouterMeta is the attempt report the upstream adds when asked.
type openRouterMeta struct {
	Meta *struct {
		Attempts []Attempt `json:"attempts"`
	} `json:"openrouter_metadata"`
}

// Response implements [Connector.Response]. The upstream's own report is read
// and then removed, so no upstream shape reaches sluice's callers.
func (*openRouter) Response(_ *Call, body []byte) ([]byte, Result, error) {
	var res Result
	if err := readOpenRouter(body, &res); err != nil {
		return nil, res, err
	}
	return jsonscan.StripMembers(body, "openrouter_metadata", "provider"), res, nil
}

func readOpenRouter(b []byte, res *Result) error {
	if err := readHead(b, res); err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(`"openrouter_metadata"`)) {
		return nil
	}
	var m openRouterMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m.Meta != nil {
		res.Attempts = m.Meta.Attempts
	}
	return nil
}

// NewStream implements [Connector.NewStream].
func (*openRouter) NewStream(*Call) Stream {
	return &openAIStream{read: readOpenRouter, strip: []string{"openrouter_metadata", "provider"}}
}
