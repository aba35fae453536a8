package connectors

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/sluicegw/sluice/compiler"
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
		Chain: true, MaxChain: openRouterMaxModels, Auto: true}
}

// Authorize implements [Connector.Authorize].
func (*openRouter) Authorize(h http.Header, key string) { bearer(h, key) }

// openRouterProvider is the upstream's per-request provider object; it
// applies to every model of the chain.
type openRouterProvider struct {
	Order  []string `json:"order,omitempty"`
	Only   []string `json:"only,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
	Sort   string   `json:"sort,omitempty"`
}

var openRouterSort = map[string]string{"cost": "price", "latency": "latency", "throughput": "throughput"}

// Translate implements [Connector.Translate].
func (*openRouter) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set := map[string]json.RawMessage{}
	if plan.Auto {
		set["model"] = mustJSON(openRouterAuto)
		plugin := map[string]any{"id": "auto-router"}
		if plan.AutoModels != nil {
			plugin["allowed_models"] = plan.AutoModels
		}
		set["plugins"] = mustJSON([]any{plugin})
	} else {
		set["model"] = mustJSON(out.NativeModel)
	}
	if len(out.Chain) > 0 {
		set["models"] = mustJSON(out.Chain)
	}
	ps := plan.Providers
	prov := openRouterProvider{Order: ps.Preferred, Only: ps.Allowed, Ignore: ps.Denied, Sort: openRouterSort[ps.RankBy]}
	if len(prov.Order) > 0 || len(prov.Only) > 0 || len(prov.Ignore) > 0 || prov.Sort != "" {
		set["provider"] = mustJSON(prov)
	}
	h := http.Header{}
	// Ask the upstream to report its attempts and the provider that served.
	h.Set("X-OpenRouter-Metadata", "enabled")
	return &Native{Path: "/chat/completions", Header: h, Body: encodeBody(withMembers(body, set))}, nil
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
	return stripMembers(body, "openrouter_metadata", "provider"), res, nil
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
