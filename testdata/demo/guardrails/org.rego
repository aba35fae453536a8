# Org-wide guardrails: apply to every principal.
package sluice.guardrails

# No xAI model serves anywhere, under any author/name/variant.
deny_models contains "x-ai/**"

# DeepInfra's fp4 quantisation is below our quality bar; its other variants are fine.
deny_providers contains "deepinfra/fp4"
