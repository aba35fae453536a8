package listing

import (
	"fmt"
	"strings"
)

// VercelModel is one model of the Vercel AI Gateway's model list (GET
// /v1/models), prices converted to USD per million tokens.
type VercelModel struct {
	// ID is the gateway's model id, "creator/model" ("meta/llama-3.1-70b").
	ID string
	// OwnedBy is the model's creator as the gateway names it ("meta",
	// "anthropic").
	OwnedBy string
	// Type is the model's kind ("language", "embedding", "image", …); ""
	// when the listing gives none.
	Type string
	// ContextWindow is the context window in tokens, 0 when not given.
	ContextWindow int
	// Priced is set when the listing gives input and output prices.
	Priced bool
	// PriceIn and PriceOut are USD per million input and output tokens.
	PriceIn, PriceOut float64
	// CacheRead and CacheWrite are USD per million cached input tokens read
	// and written, nil when not given.
	CacheRead, CacheWrite *float64
	// Pointer locates the model in the listing.
	Pointer string
}

// ParseVercelModels reads the Vercel AI Gateway's model list, the body of
// GET /v1/models: {"object": "list", "data": [{"id", "owned_by", "type",
// "context_window", "pricing": {"input", "output", "input_cache_read",
// "input_cache_write"}, …}]}. Prices are decimal strings of USD per token;
// tiered and regional prices are ignored (the base price is the one
// below the first tier). Unknown members are ignored.
func ParseVercelModels(where string, raw []byte) ([]VercelModel, error) {
	c := &errs{where: where}
	data, ok := modelList(raw, c)
	if !ok {
		return nil, c.err()
	}
	out := make([]VercelModel, 0, len(data))
	seen := map[string]string{}
	for i, el := range data {
		ptr := fmt.Sprintf("/data/%d", i)
		o, ok := asObject(el, ptr, c)
		if !ok {
			continue
		}
		m := VercelModel{ID: o.str("id", true), OwnedBy: o.str("owned_by", false), Type: o.str("type", false), Pointer: ptr}
		if m.ID != "" && !slugPattern.MatchString(m.ID) {
			c.add(CodeShape, o.at("id"), "%q is not a model id creator/model", m.ID)
		}
		if prev, dup := seen[strings.ToLower(m.ID)]; dup && m.ID != "" {
			c.add(CodeShape, o.at("id"), "model %q is listed twice (first at %s)", m.ID, prev)
		}
		seen[strings.ToLower(m.ID)] = ptr
		m.ContextWindow, _ = o.integer("context_window")
		if pr, ok := o.obj("pricing", false); ok {
			in, outp := pr.price("input"), pr.price("output")
			if in.router || outp.router {
				c.add(CodeShape, pr.at("input"), "\"-1\" is no price in this listing")
			}
			m.Priced = in.set && outp.set && !in.router && !outp.router
			m.PriceIn, m.PriceOut = in.perM, outp.perM
			if p := pr.price("input_cache_read"); p.set && !p.router {
				v := p.perM
				m.CacheRead = &v
			}
			if p := pr.price("input_cache_write"); p.set && !p.router {
				v := p.perM
				m.CacheWrite = &v
			}
		}
		out = append(out, m)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}
