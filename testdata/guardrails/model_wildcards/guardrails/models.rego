package sluice.guardrails

# Upper-case patterns: matching is case-insensitive.
allow_models contains "OPENAI/*" if input.principal.team == "single"

allow_models contains "openai/**" if input.principal.team == "double"

# Allow a family, then deny one member: deny subtracts.
allow_models contains p if {
	input.principal.team == "mixed"
	some p in {"openai/gpt-4o*", "meta-llama/**", "meta-llama/**"}
}

deny_models contains "openai/gpt-4o-mini" if input.principal.team == "mixed"

# A pattern matching nothing still restricts.
allow_models contains "nobody/*" if input.principal.team == "nothing"
