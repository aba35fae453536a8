package sluice.guardrails_test

import data.sluice.guardrails

test_xai_denied_for_everyone if {
	"x-ai/**" in guardrails.deny_models with input as {"principal": {"org": "acme", "team": "ml"}}
	"x-ai/**" in guardrails.deny_models with input as {"principal": {"org": "acme", "team": ""}}
}

test_fp4_denied_for_everyone if {
	guardrails.deny_providers == {"deepinfra/fp4"} with input as {"principal": {"org": "acme", "team": "finance"}}
}
