package sluice.guardrails_test

import data.sluice.guardrails

ml := {"principal": {"org": "acme", "team": "ml", "project": "p1", "key": "k1"}}

research := {"principal": {"org": "acme", "team": "research", "project": "p2", "key": "k2"}}

finance := {"principal": {"org": "acme", "team": "finance", "project": "p3", "key": "k3"}}

test_ml_allowed_families if {
	guardrails.allow_models == {"openai/*", "anthropic/*", "meta-llama/**", "mistralai/*", "a/*", "b/*"} with input as ml
}

test_ml_has_no_content_filter if {
	not guardrails.content_filter with input as ml
}

test_research_unrestricted_but_filtered if {
	count(guardrails.allow_models) == 0 with input as research
	guardrails.content_filter == "pii-redact" with input as research
}

test_finance_providers if {
	guardrails.allow_providers == {"anthropic", "amazon-bedrock", "openai", "azure"} with input as finance
	count(guardrails.allow_models) == 0 with input as finance
}

test_other_teams_unrestricted if {
	count(guardrails.allow_providers) == 0 with input as ml
	count(guardrails.allow_providers) == 0 with input as research
}
