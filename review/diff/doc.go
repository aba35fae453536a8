// Package diff compares two configuration revisions the way a reviewer needs
// before a change to profiles, guardrails, routes or upstreams merges: it
// compiles every (key, model, upstream) combination under both and reports
// what changed. `sluice diff` is its command; docs/diff.md has the usage,
// the exit codes and an example of each output.
//
// # What is compiled
//
// Keys: every key of either revision (or [Options.Keys]). Models: every
// catalog model of either revision plus every route alias (or
// [Options.Models]); the request is a minimal chat request with one user
// message and no routing object. Upstreams: those present in both revisions;
// an upstream present in one only is reported once, under "upstreams". A
// route alias compiles each of its targets (the tail included) for its own
// upstream and model.
//
// # How it stays fast
//
// The ladder merge and the guardrail decision are per key; keys of one
// revision whose merged profile values and guardrail patterns are equal form
// a group, and a plan depends only on (group, model). A (base group, head
// group) pair is compared once and shared by every key in it; when the two
// groups are equal and the catalog, upstreams and routes did not change, the
// pair is skipped without compiling. Each combination is compared by its
// outcome and its native bytes first; a JSON member diff is built only when
// the bytes differ.
//
// # JSON form (format 1)
//
// [Report.WriteJSON] writes:
//
//	{
//	  "format": 1,
//	  "changed": true,                       // false: nothing differs (exit 0)
//	  "summary": {
//	    "keys_affected": 2, "keys_added": 0, "keys_removed": 0,
//	    "models_newly_forbidden": 1,           // (key, model) pairs: model_forbidden appears
//	    "models_newly_allowed": 0,             // ... disappears
//	    "new_refusals": {"provider_restriction_inexpressible": 6},   // (key, model, upstream), by code
//	    "resolved_refusals": {}, "new_degrades": {"chain": 5}, "resolved_degrades": {},
//	    "native_changed": 24                   // combinations served on both sides, native body changed
//	  },
//	  "upstreams": [{"name": "edge", "status": "removed", "connector": "vercel"}],
//	  "routes": [{"model": "assistant", "status": "changed",
//	              "fields": [{"field": "targets", "base": ["market:a/x"], "head": ["market:b/y"]}]}],
//	  "keys": [{
//	    "key": "k-rank", "status": "changed",  // or "added" / "removed" (no further detail)
//	    "base": {"org": "acme", "team": "rank", "project": "p", "key": "k-rank"}, "head": {...},
//	    "fields": [{"field": "profile.rank_by", "base": "latency", "head": "cost"}],
//	    "models": [{
//	      "model": "openai/gpt-4o",
//	      "route": false,                      // true: a route alias; upstreams are its targets
//	      "access": "newly_forbidden",         // or "newly_allowed"; omitted otherwise, and when
//	                                           // present nothing else is given for the model
//	      "chain": {"base": [...], "head": [...], "added": [...], "removed": [...]},
//	      "dropped": {"base": ["x-ai/grok-4 (guardrail)"], "head": [...], "added": [...], "removed": [...]},
//	      "providers": [{"field": "allowed", "base": null, "head": ["anthropic"]}],
//	      "upstreams": [{
//	        "upstream": "market", "model": "",   // model: the target's, for a route alias
//	        "status": "changed",                 // or "added" / "removed" (route targets)
//	        "base": {"refused": "", "degraded": []},
//	        "head": {"refused": "provider_restriction_inexpressible", "degraded": []},
//	        "native": [{"field": "/provider/sort", "base": "latency", "head": "price"}]
//	      }]
//	    }]
//	  }],
//	  "compared": {"keys": 12, "models": 9, "upstreams": 4, "groups": 3},
//	  "traffic": {                             // only with --traffic ([CompareTraffic])
//	    "from": "2026-01-01T00:00:00Z", "to": "2026-01-08T00:00:00Z", "days": 7,
//	    "teams": [],                           // the team filter; [] = every team
//	    "requests": 6871,                      // recorded in the window
//	    "affected": 1807,                      // with at least one effect
//	    "request_routing": 207,                // of affected: brought their own routing object
//	    "totals": {"refused": 1400, "unrefused": 0, "degraded": 0, "undegraded": 0,
//	               "chain_dropped": 307, "chain_added": 0, "rerouted": 100, "affected": 1807},
//	    "by_team": [{"team": "chain", "refused": 1400, ..., "affected": 1807}],
//	    "impacts": [{                          // combinations with traffic, heaviest first
//	      "effect": "refused", "detail": "model_forbidden",
//	      "team": "chain", "key": "k-chain", "model": "mistralai/mistral-large",
//	      "upstream": "market", "route": "",   // route: the alias asked for, "" for a model
//	      "requests": 1400, "per_day": 200, "request_routing": 200
//	    }],
//	    "untouched": [{                        // changes no recorded request used
//	      "effect": "chain_dropped", "detail": "mistralai/mistral-large",
//	      "team": "chain", "key": "k-chain", "upstream": "edge",   // "": every upstream
//	      "models": ["anthropic/claude-haiku-4.5", "pool → meta-llama/llama-3.1-70b-instruct"]
//	    }]
//	  }
//	}
//
// Rules: lists are sorted (keys by id, models by slug, upstream entries by
// upstream then model, native members by JSON pointer) and empty lists are
// [] rather than absent, except the optional members "fields" of upstreams
// and routes, "chain", "dropped", "providers", "upstreams" and "native" of a
// model, which are omitted when nothing changed. In a field change, a side
// where the value is absent is omitted, while null is a value (an allowed
// list of null means "no restriction", as in `sluice explain`). "field" of
// a native change is a JSON pointer into the native body; "/path" stands
// for the upstream path. Arrays in native bodies are compared whole.
// Key "fields" are "org", "team", "project", "upstream", the merged profile
// ("profile.fallbacks", "profile.rank_by", "profile.preferred",
// "profile.allowed", "profile.denied"; null = unset) and the guardrail
// patterns that apply ("guardrail.allow_models", "guardrail.deny_models",
// "guardrail.allow_providers", "guardrail.deny_providers",
// "guardrail.content_filter"). model_forbidden is never counted in
// new_refusals or resolved_refusals: it is counted in
// models_newly_forbidden/allowed (a route target that becomes forbidden
// shows as its upstream entry's refusal). Members are only added within a
// format; the format number changes if one is removed or changes meaning.
//
// # Traffic
//
// "traffic" weighs the changes by the request log (see docs/diff.md for
// what each effect means). Effects are "refused", "unrefused", "degraded",
// "undegraded", "chain_dropped", "chain_added" and "rerouted"; a request
// counts once under each effect of its combination, and once in
// "affected". "impacts" are sorted by requests (descending), then effect in
// that order, team, key, model, upstream, route and detail; "untouched" by
// effect, team, key, upstream and detail, its models sorted. "per_day" is
// requests over "days", to the hundredth. "by_team" is sorted by refused,
// then affected, descending, then team.
package diff
