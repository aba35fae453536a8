package sluice.guardrails

# Nobody may use x-ai models, nor 4-bit endpoints.
deny_models contains "x-ai/**"

deny_providers contains "deepinfra/fp4" if input.principal.team in {"guard", "tags", "finance"}

# The filter team's traffic must pass a PII filter.
content_filter := "pii-redact" if input.principal.team == "filter"

# The guard team may use only these models.
allow_models contains m if {
	input.principal.team == "guard"
	some m in {"openai/*", "anthropic/*", "meta-llama/**"}
}

# Finance may only be served by providers under contract.
allow_providers contains p if {
	input.principal.team == "finance"
	some p in {"anthropic", "amazon-bedrock", "openai", "azure"}
}
