package sluice.guardrails

content_filter := "pii-redact" if input.principal.team in {"research", "clash"}
