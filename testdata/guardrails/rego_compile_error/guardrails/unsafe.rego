package sluice.guardrails

allow_models contains p if {
	input.principal.team == "ml"
}
