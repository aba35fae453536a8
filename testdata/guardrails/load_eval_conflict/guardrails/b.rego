package sluice.guardrails

content_filter := "pii-redact" if input.principal.team == "clash"
