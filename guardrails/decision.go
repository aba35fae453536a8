package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/sluicegw/sluice/profiles"
)

// Stable codes of the errors this package returns at decision and request time.
const (
	// CodeModelForbidden: a guardrail forbids the model for the principal.
	CodeModelForbidden = "model_forbidden"
	// CodeModelNotInCatalog: the model is not in the model catalog, and a
	// guardrail's model rules apply to the principal (rules admit only
	// catalog models). Without model rules an uncatalogued model goes on.
	CodeModelNotInCatalog = "model_not_in_catalog"
	// CodeEvalError: evaluating the policy failed (the OPA error code, e.g.
	// eval_conflict_error, is kept in [EvalError.OPACode]).
	CodeEvalError = "guardrail_eval_error"
	// CodeBadOutput: a rule produced a value of the wrong type.
	CodeBadOutput = "guardrail_bad_output"
)

// Reasons a fallback-chain entry is dropped by [Decision.FilterChain].
const (
	// DropGuardrail: a guardrail forbids the model for the principal.
	DropGuardrail = "guardrail"
	// DropDuplicate: the model already appears earlier in the chain.
	DropDuplicate = "duplicate"
	// DropKind: the model does another kind of work than the request asks
	// for (an embedding model in a chat request's chain, or the reverse).
	DropKind = "kind"
)

// ErrForbidden is wrapped by every [Refusal], so that callers can map refusals
// to a user-facing status with errors.Is.
var ErrForbidden = errors.New("forbidden by guardrail")

// Refusal is a request-time refusal with a stable code.
type Refusal struct {
	// Code is stable, e.g. [CodeModelForbidden].
	Code string
	// Message is the human-readable explanation, safe to show the caller.
	Message string
}

// Error implements error.
func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Unwrap returns [ErrForbidden].
func (r *Refusal) Unwrap() error { return ErrForbidden }

// EvalError is returned by [Issuer.Decide] when the policy cannot be evaluated
// for a principal, e.g. two modules define content_filter differently.
type EvalError struct {
	// Code is [CodeEvalError] or [CodeBadOutput].
	Code string
	// OPACode is OPA's own error code when there is one (e.g. "eval_conflict_error").
	OPACode string
	// Principal is who the decision was being issued for.
	Principal profiles.Principal
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *EvalError) Error() string {
	return fmt.Sprintf("%s: guardrails for principal %s: %v", e.Code, e.Principal, e.Err)
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

// Patterns are the rule values a policy returned for one principal, lower-cased
// and sorted: what applied, before expansion. They are kept for explain output.
type Patterns struct {
	AllowModels    []string `json:"allow_models,omitempty"`
	DenyModels     []string `json:"deny_models,omitempty"`
	AllowProviders []string `json:"allow_providers,omitempty"`
	DenyProviders  []string `json:"deny_providers,omitempty"`
	ContentFilter  string   `json:"content_filter,omitempty"`
	// DataRules are the data restrictions the policy requires; their
	// members appear in the patterns' JSON as their own.
	DataRules
}

// DataRules are a policy's data restrictions, which bind like its provider
// lists whatever the profiles say.
type DataRules struct {
	// ZeroRetention and NoTraining: rules zero_retention and no_training.
	ZeroRetention bool `json:"zero_retention,omitempty"`
	NoTraining    bool `json:"no_training,omitempty"`
	// Quantizations admits only endpoints at these precisions (rule
	// quantizations); nil when the policy does not restrict them.
	Quantizations []string `json:"quantizations,omitempty"`
	// MaxPrice is the policy's price ceiling (rule max_price, an object
	// with input and/or output in USD per million tokens); nil when none.
	MaxPrice *profiles.MaxPrice `json:"max_price,omitempty"`
	// Regions admits only endpoints known to process in one of these
	// geographies (rule regions, a set of [profiles.Geographies]); nil when
	// the policy does not restrict where.
	Regions []string `json:"regions,omitempty"`
}

// Any reports whether the policy sets any data restriction.
func (r *DataRules) Any() bool {
	return r.ZeroRetention || r.NoTraining || r.Quantizations != nil || r.MaxPrice != nil || r.Regions != nil
}

// Counts are the sizes of a decision's literal sets, for explain output.
type Counts struct {
	// AllowedModels is the number of catalog models the principal may use, or -1
	// when there is no model rule at all.
	AllowedModels int `json:"allowed_models"`
	// DeniedModels is the number of catalog models a deny rule matched.
	DeniedModels int `json:"denied_models"`
	// AllowedProviders is the number of allowed provider entries, or -1 when
	// there is no provider allow restriction.
	AllowedProviders int `json:"allowed_providers"`
	// DeniedProviders is the number of denied provider entries.
	DeniedProviders int `json:"denied_providers"`
}

// bitset is a set of catalog model indexes.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }
func (b bitset) count() (n int) {
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// Decision is what the guardrails let one principal do, expanded into literal
// sets over one catalog revision. It is immutable and safe for concurrent use.
type Decision struct {
	principal  profiles.Principal
	revision   string
	cat        *Catalog
	patterns   Patterns
	modelRules bool   // any allow_models or deny_models pattern applied
	allowed    bitset // effective: (allow or all) minus deny
	denied     bitset
	allowProv  []string // nil: no restriction; empty non-nil: nothing may serve
	denyProv   []string
}

// Principal returns who the decision was issued for.
func (d *Decision) Principal() profiles.Principal { return d.principal }

// Revision identifies the policy and catalog revisions the decision was issued
// from: "POLICY.CATALOG", each the first 16 hex digits of its revision.
func (d *Decision) Revision() string { return d.revision }

// Patterns returns the rule values that applied to the principal, before expansion.
func (d *Decision) Patterns() Patterns { return d.patterns }

// PatternsRef returns the rule values without copying them; the caller
// must not modify them.
func (d *Decision) PatternsRef() *Patterns { return &d.patterns }

// ContentFilter returns the name of the content filter that must run on the
// principal's traffic, or "" when none is required.
func (d *Decision) ContentFilter() string { return d.patterns.ContentFilter }

// ModelAllowed reports whether the principal may use the model. The slug is
// matched case-insensitively and literally: "*" is not a wildcard here. A slug
// that is not in the catalog is allowed only when no model rule applies to the
// principal.
func (d *Decision) ModelAllowed(slug string) bool {
	i, ok := d.cat.index[strings.ToLower(slug)]
	if !ok {
		return !d.modelRules
	}
	return d.allowed.has(i)
}

// CheckModel returns nil when the principal may use the model, a [*Refusal]
// with code [CodeModelNotInCatalog] when the model is not in the catalog
// (naming the catalog slug it may mean), and one with [CodeModelForbidden]
// otherwise.
func (d *Decision) CheckModel(slug string) error {
	if d.ModelAllowed(slug) {
		return nil
	}
	lower := strings.ToLower(slug)
	if _, ok := d.cat.index[lower]; !ok {
		msg := fmt.Sprintf("model %q is not in the model catalog, and the guardrails for principal %s admit only catalog models", lower, d.principal)
		if m := d.cat.likely(lower); m != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", m)
		}
		return &Refusal{Code: CodeModelNotInCatalog, Message: msg}
	}
	return &Refusal{Code: CodeModelForbidden, Message: fmt.Sprintf("model %q is forbidden by guardrail for principal %s", lower, d.principal)}
}

// likely returns the catalog slug an uncatalogued model name most likely
// means: the one model whose name without the author is that name
// ("gpt-5" → "openai/gpt-5"), or "" when none or several are.
func (c *Catalog) likely(name string) string {
	_, bare, ok := strings.Cut(name, "/")
	if !ok {
		bare = name
	}
	found := ""
	for _, m := range c.models {
		if _, n, _ := strings.Cut(m.Slug, "/"); n == bare {
			if found != "" {
				return ""
			}
			found = m.Slug
		}
	}
	return found
}

// Dropped is a fallback-chain entry [Decision.FilterChain] removed, and why.
type Dropped struct {
	// Model is the entry as it appeared in the chain.
	Model string `json:"model"`
	// Reason is [DropGuardrail], [DropDuplicate] or [DropKind].
	Reason string `json:"reason"`
}

// FilterChain drops the entries of a fallback chain the principal may not use
// (and repeated entries), keeping the order of the rest. Kept entries are
// appended to dst[:0], so a caller can reuse a buffer; they are lower-cased.
// dropped is allocated only when something is dropped. A chain that resolves
// empty returns an empty kept slice: it means no chain, never "try anything".
func (d *Decision) FilterChain(chain []string, dst []string) (kept []string, dropped []Dropped) {
	kept = dst[:0]
outer:
	for _, m := range chain {
		slug := strings.ToLower(m)
		if i, ok := d.cat.index[slug]; ok {
			if !d.allowed.has(i) {
				dropped = append(dropped, Dropped{Model: m, Reason: DropGuardrail})
				continue
			}
			slug = d.cat.models[i].Slug // the catalog's string: no copy retained
		} else if d.modelRules {
			dropped = append(dropped, Dropped{Model: m, Reason: DropGuardrail})
			continue
		}
		for _, k := range kept {
			if k == slug {
				dropped = append(dropped, Dropped{Model: m, Reason: DropDuplicate})
				continue outer
			}
		}
		kept = append(kept, slug)
	}
	return kept, dropped
}

// AllowedModels returns the sorted slugs of the catalog models the principal
// may use, or nil when no model rule applies (every model is allowed, and so is
// a slug outside the catalog).
func (d *Decision) AllowedModels() []string {
	if !d.modelRules {
		return nil
	}
	return d.slugs(d.allowed)
}

// DeniedModels returns the sorted slugs of the catalog models a deny rule
// matched, or nil when there are none.
func (d *Decision) DeniedModels() []string {
	if d.denied.count() == 0 {
		return nil
	}
	return d.slugs(d.denied)
}

func (d *Decision) slugs(b bitset) []string {
	out := make([]string, 0, b.count())
	for i, m := range d.cat.models { // models are sorted, so the output is too
		if b.has(i) {
			out = append(out, m.Slug)
		}
	}
	return out
}

// AllowedProviders returns the sorted provider entries ("provider" covering all
// its endpoints, or "provider/tag") the principal is restricted to. nil means no
// restriction; an empty non-nil slice means no provider may serve.
func (d *Decision) AllowedProviders() []string {
	if d.allowProv == nil {
		return nil
	}
	return append([]string{}, d.allowProv...)
}

// RestrictsProviders reports, without copying, whether the decision has an
// allowed-provider restriction and whether it denies any provider.
func (d *Decision) RestrictsProviders() (allow, deny bool) {
	return d.allowProv != nil, len(d.denyProv) > 0
}

// DeniedProviders returns the sorted provider entries that may never serve, or
// nil when there are none.
func (d *Decision) DeniedProviders() []string { return append([]string(nil), d.denyProv...) }

// Counts returns the sizes of the literal sets.
func (d *Decision) Counts() Counts {
	c := Counts{AllowedModels: -1, DeniedModels: d.denied.count(), AllowedProviders: -1, DeniedProviders: len(d.denyProv)}
	if d.modelRules {
		c.AllowedModels = d.allowed.count()
	}
	if d.allowProv != nil {
		c.AllowedProviders = len(d.allowProv)
	}
	return c
}

// DefaultCacheSize is the number of decisions an [Issuer] keeps by default.
const DefaultCacheSize = 4096

// Issuer issues decisions for one policy revision over one catalog revision and
// caches them per principal. A new revision of either gets a new Issuer, so the
// cache never serves a stale decision. It is safe for concurrent use.
type Issuer struct {
	policy   *Policy
	catalog  *Catalog
	revision string

	mu        sync.RWMutex
	cur, prev map[profiles.Principal]*Decision
	half      int
}

// NewIssuer returns an issuer for the policy and catalog with a cache of
// [DefaultCacheSize] decisions.
func NewIssuer(policy *Policy, catalog *Catalog) *Issuer {
	return NewIssuerSize(policy, catalog, DefaultCacheSize)
}

// NewIssuerSize is [NewIssuer] with a cache bound: at most about size decisions
// are kept (minimum 2).
func NewIssuerSize(policy *Policy, catalog *Catalog, size int) *Issuer {
	half := max(size/2, 1)
	return &Issuer{
		policy:   policy,
		catalog:  catalog,
		revision: short(policy.Revision()) + "." + short(catalog.Revision()),
		cur:      make(map[profiles.Principal]*Decision),
		half:     half,
	}
}

func short(rev string) string {
	if len(rev) > 16 {
		return rev[:16]
	}
	return rev
}

// Policy returns the issuer's policy.
func (is *Issuer) Policy() *Policy { return is.policy }

// Catalog returns the issuer's catalog.
func (is *Issuer) Catalog() *Catalog { return is.catalog }

// Revision returns the revision its decisions carry (see [Decision.Revision]).
func (is *Issuer) Revision() string { return is.revision }

// Decide returns the principal's decision, from the cache when it has been
// issued before. An evaluation failure returns an [*EvalError] and is not cached.
func (is *Issuer) Decide(ctx context.Context, p profiles.Principal) (*Decision, error) {
	is.mu.RLock()
	d, ok := is.cur[p]
	if !ok {
		d, ok = is.prev[p]
	}
	is.mu.RUnlock()
	if ok {
		return d, nil
	}
	d, err := is.issue(ctx, p)
	if err != nil {
		return nil, err
	}
	is.mu.Lock()
	// The cache is two generations: when the current one is full it becomes
	// the previous one and the oldest is dropped. A hit in the previous
	// generation is promoted, so frequently used principals survive: an
	// approximate LRU with map-speed lookups and no per-hit bookkeeping.
	if len(is.cur) >= is.half {
		is.prev, is.cur = is.cur, make(map[profiles.Principal]*Decision, is.half)
	}
	is.cur[p] = d
	is.mu.Unlock()
	return d, nil
}

// issue evaluates the prepared query once and expands the returned patterns.
func (is *Issuer) issue(ctx context.Context, p profiles.Principal) (*Decision, error) {
	pats, err := is.policy.patterns(ctx, p)
	if err != nil {
		return nil, err
	}
	return expand(is.catalog, p, is.revision, pats), nil
}

// patterns evaluates the prepared query for the principal and reads the
// rule values, type-checked: an [*EvalError] when either fails.
func (pol *Policy) patterns(ctx context.Context, p profiles.Principal) (Patterns, error) {
	var pats Patterns
	if pol.prepared == nil {
		return pats, nil
	}
	input := map[string]any{"principal": map[string]any{
		"org": p.Org, "team": p.Team, "project": p.Project, "key": p.Key,
	}}
	rs, err := pol.prepared.Eval(ctx, rego.EvalInput(input))
	if err != nil {
		ee := &EvalError{Code: CodeEvalError, Principal: p, Err: err}
		var te *topdown.Error
		if errors.As(err, &te) {
			ee.OPACode = te.Code
		}
		return pats, ee
	}
	if len(rs) > 0 && len(rs[0].Expressions) > 0 {
		doc, _ := rs[0].Expressions[0].Value.(map[string]any)
		if pats, err = readPatterns(doc); err != nil {
			return pats, &EvalError{Code: CodeBadOutput, Principal: p, Err: err}
		}
	}
	return pats, nil
}

// readPatterns reads the rule values out of the package document.
func readPatterns(doc map[string]any) (Patterns, error) {
	var pats Patterns
	var err error
	for _, f := range []struct {
		name string
		dst  *[]string
	}{
		{"allow_models", &pats.AllowModels},
		{"deny_models", &pats.DenyModels},
		{"allow_providers", &pats.AllowProviders},
		{"deny_providers", &pats.DenyProviders},
	} {
		if *f.dst, err = stringSet(f.name, doc[f.name]); err != nil {
			return pats, err
		}
	}
	if v, ok := doc["content_filter"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return pats, outErr("content_filter", "content_filter must be a string, got %s", typeName(v))
		}
		pats.ContentFilter = s
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"zero_retention", &pats.ZeroRetention}, {"no_training", &pats.NoTraining}} {
		if v, ok := doc[f.name]; ok {
			b, isBool := v.(bool)
			if !isBool {
				return pats, outErr(f.name, "%s must be a boolean, got %s", f.name, typeName(v))
			}
			*f.dst = b
		}
	}
	if pats.Quantizations, err = stringSet("quantizations", doc["quantizations"]); err != nil {
		return pats, err
	}
	if v, ok := doc["max_price"]; ok {
		if pats.MaxPrice, err = readMaxPrice(v); err != nil {
			return pats, &OutputError{Output: "max_price", msg: err.Error()}
		}
	}
	if pats.Regions, err = stringSet("regions", doc["regions"]); err != nil {
		return pats, err
	}
	for _, g := range pats.Regions {
		if !profiles.IsGeography(g) {
			return pats, outErr("regions", "regions lists %q, which is not a geography (one of %v)", g, profiles.Geographies)
		}
	}
	return pats, nil
}

// readMaxPrice reads a max_price rule value: an object with input and/or
// output, each a number of USD per million tokens, at least zero.
func readMaxPrice(v any) (*profiles.MaxPrice, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("max_price must be an object with input and/or output, got %s", typeName(v))
	}
	var mp profiles.MaxPrice
	for k, x := range obj {
		var f float64
		switch n := x.(type) {
		case json.Number:
			var err error
			if f, err = n.Float64(); err != nil {
				return nil, fmt.Errorf("max_price.%s: %v", k, err)
			}
		case float64:
			f = n
		case int:
			f = float64(n)
		default:
			return nil, fmt.Errorf("max_price.%s must be a number, got %s", k, typeName(x))
		}
		if f < 0 {
			return nil, fmt.Errorf("max_price.%s must be at least 0, got %g", k, f)
		}
		switch k {
		case "input":
			mp.Input = &f
		case "output":
			mp.Output = &f
		default:
			return nil, fmt.Errorf("max_price has an unknown member %q (it takes input and output)", k)
		}
	}
	if mp.Input == nil && mp.Output == nil {
		return nil, fmt.Errorf("max_price must set input or output")
	}
	return &mp, nil
}

// OutputError is a rule value of the wrong type: what [Issuer.Decide] wraps
// in an [EvalError] with code [CodeBadOutput], and what [Policy.CheckPrincipals]
// locates at the rule that produced it.
type OutputError struct {
	// Output is the rule's name, e.g. "quantizations".
	Output string
	msg    string
}

// Error implements error: what the value should have been and the type it got.
func (e *OutputError) Error() string { return e.msg }

func outErr(name, format string, args ...any) *OutputError {
	return &OutputError{Output: name, msg: fmt.Sprintf(format, args...)}
}

// typeName names a decoded Rego value's type as Rego spells it.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64, int, int64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func stringSet(name string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, outErr(name, "%s must be a set of strings, got %s", name, typeName(v))
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, outErr(name, "%s must be a set of strings, got an element of type %s", name, typeName(e))
		}
		out = append(out, strings.ToLower(s))
	}
	return dedupSorted(out), nil
}

func dedupSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i > 0 && x == s[i-1] {
			continue
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// expand turns the patterns into literal sets over the catalog.
func expand(c *Catalog, p profiles.Principal, rev string, pats Patterns) *Decision {
	n := len(c.models)
	d := &Decision{principal: p, revision: rev, cat: c, patterns: pats,
		modelRules: len(pats.AllowModels) > 0 || len(pats.DenyModels) > 0,
		allowed:    newBitset(n), denied: newBitset(n)}
	allow := compileAll(pats.AllowModels)
	deny := compileAll(pats.DenyModels)
	for i, m := range c.models {
		if anyMatch(deny, m.Slug) {
			d.denied.set(i)
			continue
		}
		if len(allow) == 0 || anyMatch(allow, m.Slug) {
			d.allowed.set(i)
		}
	}
	if len(pats.AllowProviders) > 0 {
		d.allowProv = expandProviders(c, pats.AllowProviders)
		if d.allowProv == nil {
			d.allowProv = []string{} // restricted to nothing
		}
	}
	d.denyProv = expandProviders(c, pats.DenyProviders)
	return d
}

func compileAll(ps []string) []matcher {
	ms := make([]matcher, len(ps))
	for i, p := range ps {
		ms[i] = compilePattern(p)
	}
	return ms
}

func anyMatch(ms []matcher, s string) bool {
	for i := range ms {
		if ms[i].match(s) {
			return true
		}
	}
	return false
}

// expandProviders turns provider patterns into sorted literal entries. A
// pattern without "/" yields the base slugs of matching providers (each covers
// all its endpoints); a pattern with "/" yields matching provider/tag endpoint
// slugs. A pattern without wildcards is kept as written even when the catalog
// does not list it, so a guardrail naming a provider the catalog does not know
// yet still binds on a direct upstream. Entries covered by a base entry in the
// same set are dropped.
func expandProviders(c *Catalog, ps []string) []string {
	var out []string
	for _, p := range ps {
		m := compilePattern(p)
		if m.literal {
			out = append(out, m.pattern)
			continue
		}
		space := c.providers
		if m.hasSep {
			space = c.tagged
		}
		for _, s := range space {
			if m.match(s) {
				out = append(out, s)
			}
		}
	}
	out = dedupSorted(out)
	if len(out) == 0 {
		return nil
	}
	// Sorted order puts "x" right before "x/..." entries.
	res := out[:0]
	for _, e := range out {
		if len(res) > 0 && covers(res[len(res)-1], e) {
			continue
		}
		res = append(res, e)
	}
	return res
}

// covers reports whether provider entry a covers entry b: they are equal, or a
// is a base provider and b one of its tagged endpoints.
func covers(a, b string) bool {
	return a == b || (len(b) > len(a) && b[len(a)] == '/' && b[:len(a)] == a)
}

// CombineProviders merges a routing profile's provider lists with a decision's
// guardrail lists into the effective literal lists.
//
// Allowed: when both the profile (profileAllowedSet and non-empty) and the
// guardrail restrict, the result is their intersection, where entry A covers
// entry B when A == B or B starts with A + "/", and each covering pair keeps the
// more specific entry; when only one restricts, its list. nil means no
// restriction; an empty non-nil result means nothing may serve. An empty profile
// allowed list means no restriction, the same as unset.
//
// Denied: the union of both lists, deduplicated and sorted. Entries are
// lower-cased. d may be nil (no guardrail).
func CombineProviders(profileAllowed, profileDenied []string, profileAllowedSet bool, d *Decision) (allowed, denied []string) {
	var gAllow, gDeny []string
	gSet := false
	if d != nil {
		gAllow, gDeny, gSet = d.allowProv, d.denyProv, d.allowProv != nil
	}
	pSet := profileAllowedSet && len(profileAllowed) > 0
	var pAllow []string
	if pSet {
		pAllow = lowerAll(profileAllowed)
	}
	switch {
	case pSet && gSet:
		allowed = []string{}
		for _, a := range pAllow {
			for _, g := range gAllow {
				switch {
				case covers(g, a):
					allowed = append(allowed, a)
				case covers(a, g):
					allowed = append(allowed, g)
				}
			}
		}
		if out := dedupSorted(allowed); out != nil {
			allowed = out
		}
	case pSet:
		allowed = dedupSorted(pAllow)
	case gSet:
		allowed = append([]string{}, gAllow...)
	}
	denied = dedupSorted(append(lowerAll(profileDenied), gDeny...))
	return allowed, denied
}

// lowerAll returns a lower-cased copy. It must copy: the results are sorted
// in place, and the inputs are profile lists shared by concurrent requests.
func lowerAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.ToLower(x)
	}
	return out
}
