package simulator

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
)

// candidate is one (model, endpoint) attempt in routing order.
type candidate struct {
	model *Model
	ep    Endpoint
}

// orProvider is OpenRouter's `provider` request object (the knobs the
// simulator honours).
type orProvider struct {
	Order          []string        `json:"order"`
	Only           []string        `json:"only"`
	Ignore         []string        `json:"ignore"`
	Sort           json.RawMessage `json:"sort"`
	AllowFallbacks *bool           `json:"allow_fallbacks"`
	// The data policy (datapolicy.go): zdr, data_collection,
	// quantizations and max_price.
	ZDR            *bool       `json:"zdr"`
	DataCollection *string     `json:"data_collection"`
	Quantizations  []string    `json:"quantizations"`
	MaxPrice       *orMaxPrice `json:"max_price"`
}

// orSortKey reads `sort` as "price" | "throughput" | "latency" or {by, partition}.
func (p *orProvider) sortKey() (string, error) {
	if p == nil || len(p.Sort) == 0 || string(p.Sort) == "null" {
		return "", nil
	}
	var key string
	if err := json.Unmarshal(p.Sort, &key); err != nil {
		var obj struct {
			By string `json:"by"`
		}
		if err := json.Unmarshal(p.Sort, &obj); err != nil {
			return "", fmt.Errorf("provider.sort must be a string or {by, partition}")
		}
		key = obj.By
	}
	switch key {
	case "price", "throughput", "latency":
		return key, nil
	}
	return "", fmt.Errorf("provider.sort: invalid value %q (expected price, throughput or latency)", key)
}

// endpointMatch reports whether a provider reference of a request names an
// endpoint.
type endpointMatch func(ref string, e Endpoint) bool

// slugMatch matches references by catalog slug (OpenRouter takes slugs).
func slugMatch(ref string, e Endpoint) bool { return providerMatches(ref, e.Slug()) }

func matchesAny(refs []string, e Endpoint, match endpointMatch) bool {
	for _, r := range refs {
		if match(r, e) {
			return true
		}
	}
	return false
}

// sortEndpoints orders endpoints stably by key: price (cheapest first),
// throughput (fastest first), latency (lowest first); "" keeps catalog order.
func sortEndpoints(eps []Endpoint, key string) {
	less := map[string]func(a, b Endpoint) bool{
		"price":      func(a, b Endpoint) bool { return a.PriceIn+a.PriceOut < b.PriceIn+b.PriceOut },
		"throughput": func(a, b Endpoint) bool { return a.ThroughputTPS > b.ThroughputTPS },
		"latency":    func(a, b Endpoint) bool { return a.LatencyMs < b.LatencyMs },
	}[key]
	if less == nil {
		return
	}
	sort.SliceStable(eps, func(i, j int) bool { return less(eps[i], eps[j]) })
}

// orderEndpoints puts the endpoints named by order first (in that order; a
// base slug brings all its endpoints), then, if fallbacks are allowed, the
// rest in their current order.
func orderEndpoints(eps []Endpoint, order []string, fallbacks bool, match endpointMatch) []Endpoint {
	if len(order) == 0 {
		return eps
	}
	used := make([]bool, len(eps))
	var out []Endpoint
	for _, ref := range order {
		for i, e := range eps {
			if !used[i] && match(ref, e) {
				used[i] = true
				out = append(out, e)
			}
		}
	}
	if fallbacks {
		for i, e := range eps {
			if !used[i] {
				out = append(out, e)
			}
		}
	}
	return out
}

// openRouterEndpoints returns m's endpoints in the order OpenRouter would try
// them. Without sort the simulator tries the cheapest first: OpenRouter's
// default load balancing favours the lowest price, made deterministic here.
// With allow_fallbacks false only the ordered endpoints (or, without order,
// the single best one) are tried.
func openRouterEndpoints(m *Model, p *orProvider, sortKey string) []Endpoint {
	eps, _ := openRouterFiltered(m, p, sortKey)
	return eps
}

// openRouterFiltered is openRouterEndpoints and, when no endpoint is
// left, the filter that removed the last ones ("allowed_providers" for
// only and ignore, else a data-policy filter's excluded_by name; "" when
// the model has none).
func openRouterFiltered(m *Model, p *orProvider, sortKey string) ([]Endpoint, string) {
	var eps []Endpoint
	for _, e := range m.Endpoints {
		if p != nil && len(p.Only) > 0 && !matchesAny(p.Only, e, slugMatch) {
			continue
		}
		if p != nil && matchesAny(p.Ignore, e, slugMatch) {
			continue
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		if len(m.Endpoints) > 0 {
			return nil, excludedProviders
		}
		return nil, ""
	}
	eps, excluded := p.dataPolicy(eps)
	if len(eps) == 0 {
		return nil, excluded
	}
	if sortKey == "" {
		sortKey = "price"
	}
	sortEndpoints(eps, sortKey)
	fallbacks := p == nil || p.AllowFallbacks == nil || *p.AllowFallbacks
	if p != nil && len(p.Order) > 0 {
		return orderEndpoints(eps, p.Order, fallbacks, slugMatch), ""
	}
	if !fallbacks && len(eps) > 1 {
		eps = eps[:1]
	}
	return eps, ""
}

// vercelOptions is a request's providerOptions, of which the Vercel AI
// Gateway reads the gateway object.
type vercelOptions struct {
	Gateway *vercelGateway `json:"gateway"`
}

// gateway is the gateway object, nil when the request has none.
func (o *vercelOptions) gateway() *vercelGateway {
	if o == nil {
		return nil
	}
	return o.Gateway
}

// vercelGateway is Vercel AI Gateway's providerOptions.gateway object.
type vercelGateway struct {
	Order  []string `json:"order"`
	Only   []string `json:"only"`
	Models []string `json:"models"`
	Sort   string   `json:"sort"`
	// ZeroDataRetention and DisallowPromptTraining are the data policy
	// (datapolicy.go); BYOK are request-scoped credentials by provider,
	// whose endpoints the policy does not bind.
	ZeroDataRetention      bool                       `json:"zeroDataRetention"`
	DisallowPromptTraining bool                       `json:"disallowPromptTraining"`
	BYOK                   map[string]json.RawMessage `json:"byok"`
}

var vercelSort = map[string]string{"cost": "price", "ttft": "latency", "tps": "throughput"}

// vercelEndpoints returns m's endpoints in the order the Vercel-like gateway
// tries them: `only` filters, `sort` ranks (catalog order by default),
// `order` goes first and every other eligible provider follows. match reads
// the gateway's provider names.
func vercelEndpoints(m *Model, g *vercelGateway, match endpointMatch) []Endpoint {
	eps, _ := vercelFiltered(m, g, match)
	return eps
}

// vercelFiltered is vercelEndpoints and whether the data policy removed
// the last endpoints.
func vercelFiltered(m *Model, g *vercelGateway, match endpointMatch) ([]Endpoint, bool) {
	var eps []Endpoint
	for _, e := range m.Endpoints {
		if g != nil && len(g.Only) > 0 && !matchesAny(g.Only, e, match) {
			continue
		}
		eps = append(eps, e)
	}
	if g == nil {
		return eps, false
	}
	if len(eps) > 0 {
		if eps = g.dataPolicy(eps, match); len(eps) == 0 {
			return nil, true
		}
	}
	sortEndpoints(eps, vercelSort[g.Sort])
	return orderEndpoints(eps, g.Order, true, match), false
}

// autoPick resolves openrouter/auto: the first catalog model matching the
// allowed_models patterns (in pattern order; "*" globs allowed) that has an
// eligible endpoint, or the first such catalog model when no patterns.
func (c *Config) autoPick(allowed []string, eligible func(*Model) bool) (*Model, bool) {
	if len(allowed) == 0 {
		allowed = []string{"*/*"}
	}
	for _, pat := range allowed {
		pat = strings.ToLower(strings.TrimSpace(pat))
		for i := range c.Models {
			m := &c.Models[i]
			slug := strings.ToLower(m.Slug)
			ok, err := path.Match(pat, slug)
			if (ok && err == nil || pat == slug) && eligible(m) {
				return m, true
			}
		}
	}
	return nil, false
}
