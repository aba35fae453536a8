package sluice.guardrails

# Regulated teams: nothing retained, nothing trained on.
zero_retention := true if input.principal.team in {"health", "legal"}

no_training := true if input.principal.team == "health"

# Batch work only on 8- and 16-bit endpoints, under a price ceiling.
quantizations contains q if {
	input.principal.project == "batch"
	some q in {"FP8", "bf16"}
}

max_price := {"input": 2, "output": 8.5} if input.principal.project == "batch"

# A wrong type is reported, not guessed at.
zero_retention := "yes" if input.principal.team == "typo"

max_price := {"input": -1} if input.principal.team == "negative"

max_price := {"prompt": 1} if input.principal.team == "foreign"

# The legal team's traffic stays in Europe; a misspelt geography is reported.
regions contains g if {
	input.principal.team == "legal"
	some g in {"EU"}
}

regions contains "europe" if input.principal.team == "geo-typo"
