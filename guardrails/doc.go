// Package guardrails decides what may serve at all, per principal.
//
// Platform teams write guardrails in Rego (OPA v1 syntax) in DIR/guardrails/*.rego,
// package sluice.guardrails, with unit tests beside them in *_test.rego. A
// guardrail says which model and provider patterns apply to a principal; it
// never sees a request. When a decision is issued for a principal, the
// patterns are evaluated once and expanded in Go against the model catalog
// (DIR/catalog.json) into literal sets, so that request time is a set test and
// no pattern survives into it: a caller who sends "*" as a model gets a literal
// that matches nothing.
//
// The stages are:
//
//   - [LoadCatalog] and [LoadPolicy] read and check the configuration, reporting
//     every problem as a located [profiles.Diagnostic];
//   - an [Issuer] evaluates the policy for a principal and caches the resulting
//     [Decision] per (principal, policy revision, catalog revision);
//   - the compiler applies a decision with [Decision.CheckModel],
//     [Decision.FilterChain] and [CombineProviders];
//   - reloading (SIGHUP, file changes, keeping the last good revision) is the
//     gateway's: it reloads the whole configuration directory as one snapshot;
//   - [RunTests] runs the guardrails' own Rego unit tests.
//
// # Policy contract
//
// The query is data.sluice.guardrails with input
// {"principal": {"org", "team", "project", "key"}}. Every rule is optional:
//
//   - allow_models, deny_models: sets of model patterns;
//   - allow_providers, deny_providers: sets of provider patterns, either
//     "provider" (every endpoint of it) or "provider/tag" (one serving variant);
//   - content_filter: the name of a content filter that must run on the
//     principal's traffic.
//
// An empty or undefined allow set places no restriction; a deny set always
// subtracts. Patterns are matched case-insensitively against whole slugs: "*"
// matches within one "/"-separated segment and "**" across segments (see
// [MatchPattern]).
package guardrails
