package sluice.guardrails

# Base pattern: covers every endpoint of the matching providers.
allow_providers contains p if {
	input.principal.team == "base"
	some p in {"Open*", "azure", "deepinfra"}
}

# Tag pattern: only the matching serving variants.
allow_providers contains "deepinfra/fp*" if input.principal.team == "tags"

# Wildcard matching nothing in the catalog: nothing may serve.
allow_providers contains "nope*" if input.principal.team == "none"

# Literal providers are kept even when the catalog does not list them.
allow_providers contains "groq" if input.principal.team == "none"

deny_providers contains "deepinfra/FP4"

deny_providers contains p if {
	input.principal.team == "tags"
	some p in {"**", "together/*"}
}
