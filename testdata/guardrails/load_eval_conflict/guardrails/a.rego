package sluice.guardrails

content_filter := "toxicity" if input.principal.team == "clash"
