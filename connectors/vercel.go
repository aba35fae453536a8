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
// so a denied list is refused by the check before translation. Its sort
// ranks the providers an explicit order leaves.
func (*vercel) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{Ranking: true, RankingWithOrder: true, PreferredOrder: true, AllowList: true, Chain: true,
		// zeroDataRetention and disallowPromptTraining; its docs say
		// neither is enforced for requests on the caller's own
		// provider credentials, so no DataKnobsCallerKey.
		ZeroRetention: true, NoTraining: true}
}

// Authorize implements [Connector.Authorize].
func (*vercel) Authorize(h http.Header, key string) { bearer(h, key) }

var vercelSort = map[string]string{"cost": "cost", "latency": "ttft", "throughput": "tps"}

// vercelRouting is the model and the gateway's provider options of a
// request: the provider order, the allow-list, the ranking and, for chat,
// the fallback models (chain).
// It appends them to set, so that a caller's small array can hold them
// without an allocation.
func vercelRouting(set []member, out *compiler.Outcome, chain []string) []member {
	ps := out.Providers
	var g object
	g.list("order", ps.Preferred)
	g.list("only", ps.Allowed)
	g.list("models", chain)
	g.str("sort", vercelSort[ps.RankBy])
	if out.Data.ZeroRetention {
		g.boolean("zeroDataRetention", true)
	}
	if out.Data.NoTraining {
		g.boolean("disallowPromptTraining", true)
	}
	set = append(set, member{"model", jsonscan.AppendString(nil, out.NativeModel)})
	if gb := g.bytes(); gb != nil {
		var po object
		po.raw("gateway", gb)
		set = append(set, member{"providerOptions", po.bytes()})
	}
	return set
}

// Translate implements [Connector.Translate]: providerOptions.gateway with
// order, only, models (the chain) and sort, in the upstream's own names; a
// stream asks for usage (see [withStreamUsage]).
func (*vercel) Translate(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	var buf [3]member // the model, the provider options, stream_options
	set, added := withStreamUsage(body, vercelRouting(buf[:0], out, out.Chain))
	return &Native{Path: "/chat/completions", Header: noHeaders, Body: encodeBody(body, set...), UsageAdded: added}, nil
}

// vercelReport is the upstream's routing report, which it puts inside the
// choice: message.provider_metadata in an answer, delta.provider_metadata
// on a stream's last chunk.
type vercelReport struct {
	Choices []struct {
		Message *vercelChoiceMeta `json:"message"`
		Delta   *vercelChoiceMeta `json:"delta"`
	} `json:"choices"`
}

type vercelChoiceMeta struct {
	ProviderMetadata *struct {
		Gateway struct {
			Routing struct {
				FinalProvider string `json:"finalProvider"`
				ModelAttempts []struct {
					ModelID          string `json:"modelId"`
					CanonicalSlug    string `json:"canonicalSlug"`
					Success          bool   `json:"success"`
					ProviderAttempts []struct {
						Provider   string `json:"provider"`
						StatusCode int    `json:"statusCode"`
					} `json:"providerAttempts"`
				} `json:"modelAttempts"`
			} `json:"routing"`
		} `json:"gateway"`
	} `json:"provider_metadata"`
}

// markVercelReport marks a chunk or answer that holds the routing report.
var markVercelReport = []byte(`"provider_metadata"`)

// readVercel reads an answer or chunk: the OpenAI-shaped head (whose model
// echoes the one asked for), then the routing report when there is one —
// the provider that finally served, in the upstream's slug, and the model
// whose attempt succeeded (a model fallback serves another), by its
// canonical slug.
func readVercel(b []byte, res *Result) error {
	if err := readHead(b, res); err != nil {
		return err
	}
	if !bytes.Contains(b, markVercelReport) {
		return nil
	}
	var rep vercelReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	for _, c := range rep.Choices {
		m := c.Message
		if m == nil {
			m = c.Delta
		}
		if m == nil || m.ProviderMetadata == nil {
			continue
		}
		r := m.ProviderMetadata.Gateway.Routing
		if r.FinalProvider != "" {
			res.ServedProvider = r.FinalProvider
		}
		res.Attempts = res.Attempts[:0]
		for _, ma := range r.ModelAttempts {
			// canonicalSlug is the model in the upstream's own slugs;
			// modelId is its internal "provider:model" id.
			model := ma.CanonicalSlug
			if model == "" {
				model = ma.ModelID
			}
			if ma.Success && model != "" {
				res.ServedModel = model
			}
			for _, pa := range ma.ProviderAttempts {
				res.Attempts = append(res.Attempts, Attempt{Provider: pa.Provider, Model: model, Status: pa.StatusCode})
			}
		}
		break
	}
	return nil
}

// vercelStrip is what the caller never sees: the routing report (with the
// upstream's internal notes and cost) inside each choice.
var vercelStrip = []string{"provider_metadata"}

// Response implements [Connector.Response].
func (*vercel) Response(_ *Call, body []byte) ([]byte, Result, error) {
	var res Result
	if err := readVercel(body, &res); err != nil {
		return nil, res, err
	}
	out, _ := stripInChoices(nil, body, vercelStrip)
	return out, res, nil
}

// NewStream implements [Connector.NewStream].
func (*vercel) NewStream(call *Call) Stream {
	return &openAIStream{read: readVercel, stripChoices: vercelStrip, hideUsage: call != nil && call.UsageAdded}
}
