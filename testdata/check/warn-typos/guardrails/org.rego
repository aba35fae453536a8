package sluice.guardrails

deny_models contains "gogle/**"
