# Per-team guardrails.
package sluice.guardrails

ml_models := {"openai/*", "anthropic/*", "meta-llama/**", "mistralai/*", "a/*", "b/*"}

# The ml team may use these model families only.
allow_models contains p if {
	input.principal.team == "ml"
	some p in ml_models
}

# Research traffic carries personal data: it is always redacted.
content_filter := "pii-redact" if input.principal.team == "research"

finance_providers := {"anthropic", "amazon-bedrock", "openai", "azure"}

# Finance may only send data to providers under a signed DPA.
allow_providers contains p if {
	input.principal.team == "finance"
	some p in finance_providers
}
