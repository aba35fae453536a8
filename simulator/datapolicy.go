package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The data policy the marketplaces enforce (testdata/recorded/ENDPOINTS.md,
// "Data policy"): OpenRouter's provider.zdr, data_collection,
// quantizations and max_price, and the Vercel AI Gateway's
// providerOptions.gateway zeroDataRetention and disallowPromptTraining.
// Each removes the endpoints whose facts (Endpoint.ZeroRetention,
// NoTraining, Quantization and prices) do not meet it; when none is left
// the request fails with the marketplace's error for it.

// excluded_by names of OpenRouter's availability errors (its errors
// guide's fixed vocabulary).
const (
	excludedProviders = "allowed_providers"
	excludedZDR       = "data_policy:zdr"
	excludedTraining  = "data_policy:training"
	excludedQuant     = "quantization"
	excludedMaxPrice  = "max_price"
)

// orQuantizations are the levels OpenRouter's Quantization enum lists.
var orQuantizations = map[string]bool{"int4": true, "int8": true, "fp4": true, "mxfp4": true, "nvfp4": true, "fp6": true,
	"fp8": true, "mxfp8": true, "fp16": true, "bf16": true, "fp32": true, "unknown": true}

// orMaxPrice is provider.max_price: USD per million prompt and completion
// tokens, per request and per image, each a number or a decimal string
// (the OpenAPI document types them as strings, the routing guide's
// example as numbers). nil is no ceiling.
type orMaxPrice struct {
	Prompt, Completion, Request, Image, Audio *float64
}

// UnmarshalJSON reads each member as a number or a decimal string.
func (mp *orMaxPrice) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("provider.max_price must be an object")
	}
	for key, dst := range map[string]**float64{"prompt": &mp.Prompt, "completion": &mp.Completion,
		"request": &mp.Request, "image": &mp.Image, "audio": &mp.Audio} {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			continue
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return fmt.Errorf("provider.max_price.%s must be a number", key)
			}
			if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
				return fmt.Errorf("provider.max_price.%s must be a number", key)
			}
		}
		if f < 0 {
			return fmt.Errorf("provider.max_price.%s must not be negative", key)
		}
		*dst = &f
	}
	return nil
}

// validate checks the data-policy members' values.
func (p *orProvider) validate() error {
	if p == nil {
		return nil
	}
	if p.DataCollection != nil && *p.DataCollection != "allow" && *p.DataCollection != "deny" {
		return fmt.Errorf("provider.data_collection: invalid value %q (expected allow or deny)", *p.DataCollection)
	}
	for _, q := range p.Quantizations {
		if !orQuantizations[q] {
			return fmt.Errorf("provider.quantizations: invalid value %q", q)
		}
	}
	return nil
}

// dataPolicy keeps the endpoints that meet the request's data policy,
// filter by filter (zdr, data_collection, quantizations, max_price), and
// names the filter that removed the last ones.
func (p *orProvider) dataPolicy(eps []Endpoint) ([]Endpoint, string) {
	if p == nil {
		return eps, ""
	}
	filters := []struct {
		name string
		on   bool
		keep func(Endpoint) bool
	}{
		{excludedZDR, p.ZDR != nil && *p.ZDR, func(e Endpoint) bool { return e.ZeroRetention }},
		{excludedTraining, p.DataCollection != nil && *p.DataCollection == "deny", func(e Endpoint) bool { return e.NoTraining || e.ZeroRetention }},
		{excludedQuant, len(p.Quantizations) > 0, func(e Endpoint) bool { return containsFold(p.Quantizations, e.quantization()) }},
		{excludedMaxPrice, p.MaxPrice != nil, func(e Endpoint) bool {
			// The simulated endpoints have no per-request or per-image
			// price: those ceilings are always met.
			return (p.MaxPrice.Prompt == nil || e.PriceIn <= *p.MaxPrice.Prompt) &&
				(p.MaxPrice.Completion == nil || e.PriceOut <= *p.MaxPrice.Completion)
		}},
	}
	for _, f := range filters {
		if !f.on {
			continue
		}
		var kept []Endpoint
		for _, e := range eps {
			if f.keep(e) {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			return nil, f.name
		}
		eps = kept
	}
	return eps, ""
}

// orAvailability is the error object of a request whose data policy or
// routing constraints left no endpoint, as OpenRouter's errors guide
// documents it: 404, error_type "not_found", and the availability object
// (privacy_restricted for a data policy, constraint_filtered for
// quantizations and max_price). The message for ZDR is the guide's
// example; the others follow it (a simulator choice).
func orAvailability(requested []string, m *Model, excluded string) map[string]any {
	slug := strings.Join(requested, ", ")
	affected := []string{}
	if m != nil {
		slug = orModelID(m)
		for _, e := range m.Endpoints {
			if !containsFold(affected, e.Provider) {
				affected = append(affected, e.Provider)
			}
		}
	}
	code, what := "privacy_restricted", ""
	var constraint map[string]any
	switch excluded {
	case excludedZDR:
		what = "No endpoints for " + slug + " match your data policy (zero data retention). Adjust at https://openrouter.ai/settings/privacy."
	case excludedTraining:
		what = "No endpoints for " + slug + " match your data policy (no prompt training). Adjust at https://openrouter.ai/settings/privacy."
	case excludedQuant:
		code = "constraint_filtered"
		what = "No endpoints for " + slug + " match your routing constraints (quantization)."
		constraint = map[string]any{"field": "quantizations", "detail": "no endpoint serves one of the requested quantizations"}
	default:
		code = "constraint_filtered"
		what = "No endpoints for " + slug + " match your routing constraints (max price)."
		constraint = map[string]any{"field": "max_price", "detail": "every endpoint is priced above max_price"}
	}
	avail := map[string]any{"code": code, "retryable": false, "requested_models": requested,
		"affected_providers": affected, "excluded_by": []string{excluded},
		"docs_url": "https://openrouter.ai/docs/errors#" + code}
	if constraint != nil {
		avail["constraint"] = constraint
	}
	return map[string]any{"code": http.StatusNotFound, "message": what, "error_type": "not_found",
		"http_status": http.StatusNotFound, "availability": avail}
}

// orPolicyError is the chat and Responses endpoints' body for it:
// {"error": {...}}.
func orPolicyError(requested []string, m *Model, excluded string) any {
	return map[string]any{"error": orAvailability(requested, m, excluded)}
}

// orMessagesPolicyError is the Messages endpoint's: Anthropic's envelope,
// type not_found_error with error_type not_found (the errors guide's
// mapping), the availability object inside error (where the guide does
// not say for a non-streamed answer: a simulator choice), request_id null
// (no routing happened).
func orMessagesPolicyError(requested []string, m *Model, excluded string) any {
	a := orAvailability(requested, m, excluded)
	return map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": a["message"],
		"error_type": "not_found", "availability": a["availability"]}, "request_id": nil}
}

// dataPolicy keeps the endpoints that meet the gateway's data policy: with
// zeroDataRetention only ZeroRetention ones, with disallowPromptTraining
// only NoTraining or ZeroRetention ones (ZDR is a superset of no
// training); an endpoint of a provider the request brings its own key for
// (byok) is not filtered, as the gateway does not enforce either for BYOK
// requests.
func (g *vercelGateway) dataPolicy(eps []Endpoint, match endpointMatch) []Endpoint {
	if g == nil || !g.ZeroDataRetention && !g.DisallowPromptTraining {
		return eps
	}
	var kept []Endpoint
	for _, e := range eps {
		byok := false
		for p := range g.BYOK {
			byok = byok || match(p, e)
		}
		switch {
		case byok:
		case g.ZeroDataRetention && !e.ZeroRetention:
			continue
		case g.DisallowPromptTraining && !e.NoTraining && !e.ZeroRetention:
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// vercelPolicyMessage says which policy left no provider (the gateway's
// docs: an error explaining there is no compliant provider for the
// model; the wording is the simulator's).
func (g *vercelGateway) policyMessage(model string) string {
	if g.ZeroDataRetention {
		return fmt.Sprintf("No providers with zero data retention are available for model '%s'", model)
	}
	return fmt.Sprintf("No providers that disallow prompt training are available for model '%s'", model)
}

// vercelPolicyError is the chat and Responses endpoints' body: the
// gateway's error envelope with type no_providers_available.
func vercelPolicyError(msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "no_providers_available"}}
}
