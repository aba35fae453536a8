package connectors

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// Embeddings, for the upstreams that serve them, each as its own published
// API reference documents its embeddings endpoint: OpenAI's POST
// /embeddings; OpenRouter's POST /api/v1/embeddings, which takes the same
// provider object as its chat endpoint but no model chain, and bills in
// usage.cost; the Vercel AI Gateway's OpenAI-compatible POST /v1/embeddings,
// whose answer carries its routing report and cost in a top-level
// providerMetadata.gateway. Anthropic's API has no embeddings endpoint.
// The request is the caller's, with the model (and the routing knobs) in
// the upstream's own names; the answer is relayed without the upstream's
// routing report.

var (
	_ embedder = (*openAI)(nil)
	_ embedder = (*openRouter)(nil)
	_ embedder = (*vercel)(nil)
)

// embeddingsPath is every embeddings upstream's path, relative to its base
// URL.
const embeddingsPath = "/embeddings"

// embeddingsHead is the part of an embeddings answer every upstream shares:
// the model, the usage (with OpenRouter's billed cost) and, for a
// marketplace that reports it, the provider.
type embeddingsHead struct {
	Object   string  `json:"object"`
	Data     isArray `json:"data"`
	Model    string  `json:"model"`
	Provider string  `json:"provider"`
	Usage    *struct {
		PromptTokens int64    `json:"prompt_tokens"`
		Cost         *float64 `json:"cost"`
	} `json:"usage"`
}

// isArray records whether a member is a JSON array, without keeping it: an
// embeddings answer's data is nearly all of its bytes, which a
// json.RawMessage would copy only to look at the first.
type isArray bool

// UnmarshalJSON implements [json.Unmarshaler]; v is valid JSON, spaces
// trimmed.
func (a *isArray) UnmarshalJSON(v []byte) error {
	*a = len(v) > 0 && v[0] == '['
	return nil
}

// readEmbeddings reads an embeddings answer into res; an answer without a
// data array is not an embeddings answer.
func readEmbeddings(b []byte, res *Result) error {
	var h embeddingsHead
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	return h.read(res)
}

// read is [readEmbeddings] once the head is decoded.
func (h *embeddingsHead) read(res *Result) error {
	if !h.Data {
		return fmt.Errorf("connectors: an embeddings answer without a data array")
	}
	if h.Model != "" {
		res.ServedModel = h.Model
	}
	if h.Provider != "" {
		res.ServedProvider = h.Provider
	}
	if u := h.Usage; u != nil {
		res.Usage = Usage{PromptTokens: u.PromptTokens}
		if u.Cost != nil {
			res.Cost, res.CostReported = *u.Cost, true
		}
	}
	return nil
}

// --- OpenAI -------------------------------------------------------------------

func (o *openAI) embeddingsCapabilities() compiler.Capabilities { return o.Capabilities() }

// translateEmbeddings sends the request with the native model id.
func (*openAI) translateEmbeddings(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return &Native{Path: embeddingsPath, Header: noHeaders,
		Body: encodeBody(body, member{"model", jsonscan.AppendString(nil, out.NativeModel)})}, nil
}

func (*openAI) embeddingsResponse(_ *Call, body []byte) ([]byte, Result, error) {
	res := Result{ServedProvider: "openai"}
	if err := readEmbeddings(body, &res); err != nil {
		return nil, res, err
	}
	return body, res, nil
}

// --- OpenRouter ---------------------------------------------------------------

// embeddingsCapabilities: the embeddings endpoint takes the provider object
// (order, only, ignore, sort) but no models list, and has no auto router.
func (*openRouter) embeddingsCapabilities() compiler.Capabilities {
	return compiler.Capabilities{Ranking: true, PreferredOrder: true, AllowList: true, DenyList: true,
		ZeroRetention: true, NoTraining: true, Quantizations: true, MaxPrice: true, DataKnobsCallerKey: true}
}

func (*openRouter) translateEmbeddings(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	set := []member{{"model", jsonscan.AppendString(nil, out.NativeModel)}}
	if b := openRouterProvider(out); b != nil {
		set = append(set, member{"provider", b})
	}
	return &Native{Path: embeddingsPath, Header: noHeaders, Body: encodeBody(body, set...)}, nil
}

func (*openRouter) embeddingsResponse(_ *Call, body []byte) ([]byte, Result, error) {
	var res Result
	if err := readEmbeddings(body, &res); err != nil {
		return nil, res, err
	}
	return jsonscan.StripMembers(body, "provider"), res, nil
}

// openRouterProvider is the provider object (order, only, ignore, sort),
// nil when it has no member.
func openRouterProvider(out *compiler.Outcome) []byte {
	ps := &out.Providers
	var prov object
	prov.list("order", ps.Preferred)
	prov.list("only", ps.Allowed)
	prov.list("ignore", ps.Denied)
	prov.str("sort", openRouterSort[ps.RankBy])
	if k := &out.Data; !k.Empty() {
		// The data restrictions the check left to the upstream, in its
		// ProviderPreferences members (OpenRouterTeam/typescript-sdk
		// .speakeasy/in.openapi.yaml at cb9393a8: zdr; data_collection
		// "deny", only providers that do not collect user data;
		// quantizations; max_price with prompt and completion as strings
		// of USD per million tokens).
		if k.ZeroRetention {
			prov.boolean("zdr", true)
		}
		if k.NoTraining {
			prov.str("data_collection", "deny")
		}
		if k.Quantizations != nil {
			prov.field("quantizations")
			prov.buf = appendStringList(prov.buf, k.Quantizations)
		}
		if k.MaxPriceIn != nil || k.MaxPriceOut != nil {
			var mp object
			if k.MaxPriceIn != nil {
				mp.field("prompt")
				mp.buf = appendPriceString(mp.buf, *k.MaxPriceIn)
			}
			if k.MaxPriceOut != nil {
				mp.field("completion")
				mp.buf = appendPriceString(mp.buf, *k.MaxPriceOut)
			}
			prov.raw("max_price", mp.bytes())
		}
	}
	return prov.bytes()
}

// appendPriceString appends a price as a JSON string of its shortest
// decimal form ("3", "0.15").
func appendPriceString(buf []byte, v float64) []byte {
	buf = append(buf, '"')
	buf = strconv.AppendFloat(buf, v, 'f', -1, 64)
	return append(buf, '"')
}

// --- Vercel AI Gateway --------------------------------------------------------

// embeddingsCapabilities: the gateway's provider options (order, only,
// sort) apply; a model chain for embeddings is not documented, so none is
// sent.
func (*vercel) embeddingsCapabilities() compiler.Capabilities {
	return compiler.Capabilities{Ranking: true, RankingWithOrder: true, PreferredOrder: true, AllowList: true}
}

func (*vercel) translateEmbeddings(body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	// No fallback models: the embeddings endpoint takes none.
	return &Native{Path: embeddingsPath, Header: noHeaders, Body: encodeBody(body, vercelRouting(make([]member, 0, 2), out, nil)...)}, nil
}

// vercelEmbeddingsReport is the routing report of an embeddings answer: a
// top-level providerMetadata.gateway with the routing and the cost (a
// decimal string).
type vercelEmbeddingsReport struct {
	ProviderMetadata *struct {
		Gateway struct {
			Routing struct {
				FinalProvider string `json:"finalProvider"`
			} `json:"routing"`
			Cost json.RawMessage `json:"cost"`
		} `json:"gateway"`
	} `json:"providerMetadata"`
}

func (*vercel) embeddingsResponse(_ *Call, body []byte) ([]byte, Result, error) {
	var res Result
	// One decode for the head and the report: the answer is mostly its
	// data, which each decode scans.
	var a struct {
		embeddingsHead
		vercelEmbeddingsReport
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, res, err
	}
	if err := a.embeddingsHead.read(&res); err != nil {
		return nil, res, err
	}
	if m := a.ProviderMetadata; m != nil {
		if p := m.Gateway.Routing.FinalProvider; p != "" {
			res.ServedProvider = p
		}
		if c, ok := decimal(m.Gateway.Cost); ok {
			res.Cost, res.CostReported = c, true
		}
	}
	return jsonscan.StripMembers(body, "providerMetadata"), res, nil
}

// decimal reads a number written as a JSON number or a decimal string.
func decimal(v json.RawMessage) (float64, bool) {
	s := strings.Trim(string(jsonscan.TrimSpace(v)), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
