package sluice.guardrails

deny_models contains "x-ai/**"

deny_models contains "*/*:free"
