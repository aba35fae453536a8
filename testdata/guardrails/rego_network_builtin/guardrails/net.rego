package sluice.guardrails

# A guardrail may not reach the network nor read the gateway's environment:
# each call fails to compile, located.
allow_models contains m if {
	resp := http.send({"method": "GET", "url": "http://127.0.0.1:1/models"})
	some m in resp.body.models
}

deny_models contains m if {
	some m in net.lookup_ip_addr("example.com")
}

content_filter := opa.runtime().env.OPENAI_API_KEY
