package sluice.guardrails

content_filter := "pii-redact" if input.principal.team == "research"

# Only the support team's value has the wrong type: the check finds it
# because the configuration names a support key.
content_filter := 42 if input.principal.team == "support"
