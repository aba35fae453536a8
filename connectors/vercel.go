package connectors

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// vercel translates for a marketplace upstream with fewer knobs: an order, an
// allow list, a model chain and a sort, but no deny list.
type vercel struct{}

var _ Connector = (*vercel)(nil)

func newVercel() *vercel { return &vercel{} }

// Kind implements [Connector.Kind].
func (*vercel) Kind() string { return "vercel" }

// Capabilities implements [Connector.Capabilities]. There is no deny knob,
// so a denied list is refused by the check before translation.
func (*vercel) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{Ranking: true, PreferredOrder: true, AllowList: true, Chain: true}
}

// Authorize implements [Connector.Authorize].
func (*vercel) Authorize(h http.Header, key string) { bearer(h, key) }

var vercelSort = map[string]string{"cost": "cost", "latency": "ttft", "throughput": "tps"}

// Translate implements [Connector.Translate]: providerOptions.gateway with
// order, only, models (the chain) and sort.
func (*vercel) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	ps := plan.Providers
	var g object
	g.list("order", ps.Preferred)
	g.list("only", ps.Allowed)
	g.list("models", out.Chain)
	g.str("sort", vercelSort[ps.RankBy])
	set := []member{{"model", jsonscan.AppendString(nil, out.NativeModel)}}
	if gb := g.bytes(); gb != nil {
		var po object
		po.raw("gateway", gb)
		set = append(set, member{"providerOptions", po.bytes()})
	}
	return &Native{Path: "/chat/completions", Header: noHeaders, Body: encodeBody(body, set...)}, nil
}

// vercelMeta is the upstream's routing report.
type vercelMeta struct {
	ProviderMetadata *struct {
		Gateway struct {
			Routing struct {
				FinalProvider string `json:"finalProvider"`
				ModelAttempts []struct {
					ModelID          string `json:"modelId"`
					ProviderAttempts []struct {
						Provider   string `json:"provider"`
						StatusCode int    `json:"statusCode"`
					} `json:"providerAttempts"`
				} `json:"modelAttempts"`
			} `json:"routing"`
		} `json:"gateway"`
	} `json:"providerMetadata"`
}

func readVercel(b []byte, res *Result) error {
	if err := readHead(b, res); err != nil {
		return err
	}
	if !bytes.Contains(b, markProvMD) {
		return nil
	}
	var m vercelMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m.ProviderMetadata == nil {
		return nil
	}
	r := m.ProviderMetadata.Gateway.Routing
	if r.FinalProvider != "" {
		res.ServedProvider = r.FinalProvider
	}
	res.Attempts = res.Attempts[:0]
	for _, ma := range r.ModelAttempts {
		for _, pa := range ma.ProviderAttempts {
			res.Attempts = append(res.Attempts, Attempt{Provider: pa.Provider, Model: ma.ModelID, Status: pa.StatusCode})
		}
	}
	return nil
}

// Response implements [Connector.Response].
func (*vercel) Response(_ *Call, body []byte) ([]byte, Result, error) {
	var res Result
	if err := readVercel(body, &res); err != nil {
		return nil, res, err
	}
	return jsonscan.StripMembers(body, "providerMetadata"), res, nil
}

// NewStream implements [Connector.NewStream].
func (*vercel) NewStream(*Call) Stream {
	return &openAIStream{read: readVercel, strip: []string{"providerMetadata"}}
}
