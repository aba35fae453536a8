package sluice.guardrails

deny_models contains "x-ai/**" if {
