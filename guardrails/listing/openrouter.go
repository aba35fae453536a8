package listing

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// slugPattern is the catalog's model slug, author/name[:variant] (the
// schema's pattern for models[].slug).
var slugPattern = regexp.MustCompile(`^[^\s/*]+/[^\s*]+$`)

// providerPattern is the catalog's provider slug and tag.
var providerPattern = regexp.MustCompile(`^[^\s/*]+$`)

// ORModel is one model of OpenRouter's model list (GET /api/v1/models), as
// sluice reads it. Prices are read from each endpoint of the model, not
// from here: the list's price is one endpoint's.
type ORModel struct {
	// ID is the routable id as listed: "openai/gpt-4o", a variant
	// "meta-llama/llama-3.3-70b-instruct:free", or an alias
	// "~google/gemini-pro-latest".
	ID string
	// CanonicalSlug is the permanent slug ("qwen/qwen3.8-27b-20260814");
	// "" in listings older than the field.
	CanonicalSlug string
	// ContextLength is the context window in tokens; 0 when the listing
	// gives none.
	ContextLength int
	// Router is set when the listing prices the model "-1": a router or
	// dynamic model with no fixed price (openrouter/auto).
	Router bool
	// AliasTarget is the slug an alias id stands for ("" for other models).
	AliasTarget string
	// Pointer locates the model in the listing ("/data/17").
	Pointer string
}

// Alias reports whether the id is one of OpenRouter's moving aliases
// ("~anthropic/claude-haiku-latest"), which route to another listed model.
func (m ORModel) Alias() bool { return strings.HasPrefix(m.ID, "~") || m.AliasTarget != "" }

// Variant returns the id's ":variant" suffix ("free", "batch"), or "".
func (m ORModel) Variant() string {
	_, name, _ := strings.Cut(m.ID, "/")
	if _, v, ok := strings.Cut(name, ":"); ok {
		return v
	}
	return ""
}

// EndpointsPath is the path below the API base of the model's endpoints
// listing, "models/AUTHOR/SLUG/endpoints": by the canonical slug, as the
// listing's links.details gives it, except for a variant id, whose
// endpoints are its own.
func (m ORModel) EndpointsPath() string {
	id := m.ID
	if m.CanonicalSlug != "" && m.Variant() == "" {
		id = m.CanonicalSlug
	}
	return "models/" + escapePath(id) + "/endpoints"
}

// ParseOpenRouterModels reads OpenRouter's model list, the body of GET
// /api/v1/models: {"data": [Model, …]} (total_count and links of newer
// listings are ignored). where names the file or URL in errors. Every model
// needs an id (an author/name slug) and a pricing object whose prices are
// decimal strings; unknown members are ignored. A list of no models is an
// error ([CodeEmpty]).
func ParseOpenRouterModels(where string, raw []byte) ([]ORModel, error) {
	c := &errs{where: where}
	data, ok := modelList(raw, c)
	if !ok {
		return nil, c.err()
	}
	out := make([]ORModel, 0, len(data))
	seen := make(map[string]string, len(data))
	for i, el := range data {
		ptr := fmt.Sprintf("/data/%d", i)
		o, ok := asObject(el, ptr, c)
		if !ok {
			continue
		}
		m := ORModel{ID: o.str("id", true), CanonicalSlug: o.str("canonical_slug", false), Pointer: ptr}
		if m.ID != "" && !slugPattern.MatchString(strings.TrimPrefix(m.ID, "~")) {
			c.add(CodeShape, o.at("id"), "%q is not a model slug author/name", m.ID)
		}
		if m.CanonicalSlug != "" && !slugPattern.MatchString(strings.TrimPrefix(m.CanonicalSlug, "~")) {
			c.add(CodeShape, o.at("canonical_slug"), "%q is not a model slug author/name", m.CanonicalSlug)
		}
		key := strings.ToLower(m.ID)
		if prev, dup := seen[key]; dup && m.ID != "" {
			c.add(CodeShape, o.at("id"), "model %q is listed twice (first at %s)", m.ID, prev)
		}
		seen[key] = ptr
		m.ContextLength, _ = o.integer("context_length")
		if pr, ok := o.obj("pricing", true); ok {
			in, out := pr.price("prompt"), pr.price("completion")
			m.Router = in.router || out.router
			for _, k := range []string{"request", "image", "input_cache_read", "input_cache_write"} {
				if p := pr.price(k); p.router {
					c.add(CodeShape, pr.at(k), "\"-1\" is only meaningful for prompt and completion")
				}
			}
		}
		if at, ok := o.obj("alias_target", false); ok {
			m.AliasTarget = at.str("slug", false)
		}
		out = append(out, m)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// OREndpoint is one endpoint of OpenRouter's endpoints listing (GET
// /api/v1/models/{author}/{slug}/endpoints), prices converted to USD per
// million tokens.
type OREndpoint struct {
	// ProviderName is the provider's display name ("Google", "DeepInfra"),
	// the name OpenRouter reports when it says who served.
	ProviderName string
	// Tag is the routing slug as listed, "google-vertex" or
	// "deepinfra/fp8"; "" in listings older than the field.
	Tag string
	// ContextLength is the endpoint's context window; 0 when not given.
	ContextLength int
	// PriceIn and PriceOut are USD per million prompt and completion
	// tokens, the listing's discount applied.
	PriceIn, PriceOut float64
	// Router is set when the endpoint is priced "-1".
	Router bool
	// CacheRead and CacheWrite are USD per million cached prompt tokens
	// read and written (input_cache_read, input_cache_write), nil when the
	// listing gives none.
	CacheRead, CacheWrite *float64
	// LatencyP50 is the median time to first token over the last 30
	// minutes in milliseconds, nil when not reported (unauthenticated
	// listings report null).
	LatencyP50 *float64
	// ThroughputP50 is the median output tokens per second over the last
	// 30 minutes, nil when not reported.
	ThroughputP50 *float64
	// Status is the listing's status: 0 normal, negative degraded or
	// de-ranked (the values are not documented).
	Status int
	// Quantization is the listed precision, lower-cased ("fp8", "bf16");
	// "" when the listing says "unknown" or null, or lists none (listings
	// older than the field): an unknown the import does not write.
	Quantization string
	// Pointer locates the endpoint in the listing.
	Pointer string
}

// quantizationPattern is the catalog's quantization (the schema's
// pattern for endpoints[].quantization).
var quantizationPattern = regexp.MustCompile(`^[a-z0-9]+$`)

// quantization reads an endpoint's quantization member: a Quantization
// name or null; "unknown" and null are unknown ("").
func quantization(o object) string {
	q := strings.ToLower(o.str("quantization", false))
	switch {
	case q == "" || q == "unknown":
		return ""
	case !quantizationPattern.MatchString(q):
		o.c.add(CodeShape, o.at("quantization"), "%q is not a quantization level (fp8, bf16, …)", q)
		return ""
	}
	return q
}

// ParseOpenRouterEndpoints reads one model's endpoints listing: {"data":
// {"id": …, "endpoints": [Endpoint, …]}}. It returns the model id the
// listing names and its endpoints; an endpoint needs a provider_name and a
// pricing object, and its tag, when present, must be a provider slug with
// at most one variant ("deepinfra/fp8"). latency_last_30m and
// throughput_last_30m are {p50, p75, p90, p99} or null.
func ParseOpenRouterEndpoints(where string, raw []byte) (string, []OREndpoint, error) {
	c := &errs{where: where}
	root, ok := parseRoot(raw, c)
	if !ok {
		return "", nil, c.err()
	}
	data, ok := root.obj("data", true)
	if !ok {
		return "", nil, c.err()
	}
	id := data.str("id", false)
	list, _ := data.arr("endpoints", true)
	out := make([]OREndpoint, 0, len(list))
	for i, el := range list {
		ptr := data.at("endpoints", fmt.Sprint(i))
		o, ok := asObject(el, ptr, c)
		if !ok {
			continue
		}
		e := OREndpoint{ProviderName: o.str("provider_name", true), Tag: strings.ToLower(o.str("tag", false)), Pointer: ptr}
		if e.Tag != "" {
			base, variant, _ := strings.Cut(e.Tag, "/")
			if !providerPattern.MatchString(base) || (variant != "" && strings.ContainsAny(variant, " \t\n*")) {
				c.add(CodeShape, o.at("tag"), "%q is not a provider slug, optionally with a variant (deepinfra/fp8)", e.Tag)
			}
		}
		e.ContextLength, _ = o.integer("context_length")
		if st, ok := o.num("status"); ok {
			e.Status = int(st)
		}
		if pr, ok := o.obj("pricing", true); ok {
			discount := 0.0
			if d, ok := pr.num("discount"); ok {
				if d < 0 || d >= 1 {
					c.add(CodeShape, pr.at("discount"), "%v is not a fraction in [0, 1)", d)
				} else {
					discount = d
				}
			}
			in, outp := pr.price("prompt"), pr.price("completion")
			e.Router = in.router || outp.router
			e.PriceIn, e.PriceOut = discounted(in.perM, discount), discounted(outp.perM, discount)
			if p := pr.price("input_cache_read"); p.set && !p.router {
				v := discounted(p.perM, discount)
				e.CacheRead = &v
			}
			if p := pr.price("input_cache_write"); p.set && !p.router {
				v := discounted(p.perM, discount)
				e.CacheWrite = &v
			}
		}
		e.LatencyP50 = p50(o, "latency_last_30m")
		e.ThroughputP50 = p50(o, "throughput_last_30m")
		e.Quantization = quantization(o)
		out = append(out, e)
	}
	if err := c.err(); err != nil {
		return "", nil, err
	}
	return id, out, nil
}

// p50 reads the median of a percentile object {p50, p75, p90, p99}; null
// or absent is nil.
func p50(o object, key string) *float64 {
	if !o.has(key) {
		return nil
	}
	st, ok := o.obj(key, false)
	if !ok {
		return nil
	}
	v, ok := st.num("p50")
	if !ok {
		st.c.add(CodeShape, st.at("p50"), "p50 is required: a number")
		return nil
	}
	if v < 0 {
		st.c.add(CodeShape, st.at("p50"), "%v is negative", v)
		return nil
	}
	return &v
}

// escapePath escapes each segment of a slug for a URL path, keeping the
// "/" between them.
func escapePath(slug string) string {
	parts := strings.Split(slug, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// discounted applies a listing's discount fraction to a price, rounded to
// 12 significant digits so that 0.1 × 0.75 is 0.075, not
// 0.07500000000000001.
func discounted(perM, discount float64) float64 {
	if discount == 0 {
		return perM
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(perM*(1-discount), 'g', 12, 64), 64)
	return v
}

// ORZDREndpoint is one entry of OpenRouter's zero-data-retention endpoint
// list (GET /api/v1/endpoints/zdr): an endpoint, of a model, that has a
// zero-data-retention policy. The list's entries are PublicEndpoint
// objects, as in the endpoints listings; sluice reads which endpoint each
// names.
type ORZDREndpoint struct {
	// ModelID is the model's permanent slug (PublicEndpoint.model_id),
	// lower-cased.
	ModelID string
	// Tag is the endpoint's routing slug, lower-cased ("deepinfra/fp8");
	// "" when the entry has none.
	Tag string
	// ProviderName is the provider's display name.
	ProviderName string
	// Pointer locates the entry in the list.
	Pointer string
}

// ParseOpenRouterZDR reads OpenRouter's zero-data-retention endpoint
// list, the body of GET /api/v1/endpoints/zdr: {"data": [PublicEndpoint,
// …]}. Every entry needs a model_id and a tag or a provider_name; other
// members are not read. An empty list is a list (no endpoint has the
// policy), not an error.
func ParseOpenRouterZDR(where string, raw []byte) ([]ORZDREndpoint, error) {
	c := &errs{where: where}
	root, ok := parseRoot(raw, c)
	if !ok {
		return nil, c.err()
	}
	list, _ := root.arr("data", true)
	out := make([]ORZDREndpoint, 0, len(list))
	for i, el := range list {
		ptr := fmt.Sprintf("/data/%d", i)
		o, ok := asObject(el, ptr, c)
		if !ok {
			continue
		}
		z := ORZDREndpoint{ModelID: strings.ToLower(o.str("model_id", true)), Tag: strings.ToLower(o.str("tag", false)),
			ProviderName: o.str("provider_name", false), Pointer: ptr}
		if z.Tag == "" && z.ProviderName == "" {
			c.add(CodeShape, ptr, "an entry needs a tag or a provider_name")
		}
		out = append(out, z)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}
