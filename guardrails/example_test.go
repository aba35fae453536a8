package guardrails_test

import (
	"context"
	"fmt"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

func Example() {
	catalog, ds := guardrails.LoadCatalog("../testdata/demo")
	if len(ds) > 0 {
		fmt.Println(ds)
		return
	}
	policy, ds := guardrails.LoadPolicy("../testdata/demo")
	if len(ds) > 0 {
		fmt.Println(ds)
		return
	}
	d, err := guardrails.NewIssuer(policy, catalog).Decide(context.Background(), profiles.Principal{Org: "acme", Team: "ml", Project: "p", Key: "k"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.CheckModel("google/gemini-2.5-pro"))
	kept, dropped := d.FilterChain([]string{"x-ai/grok-4", "Anthropic/Claude-Sonnet-4.5", "openai/*"}, nil)
	fmt.Println(kept, dropped)
	allowed, denied := guardrails.CombineProviders([]string{"deepinfra"}, nil, true, d)
	fmt.Println(allowed, denied)
	// Output:
	// model_forbidden: model "google/gemini-2.5-pro" is forbidden by guardrail for principal acme/ml/p/k
	// [anthropic/claude-sonnet-4.5] [{x-ai/grok-4 guardrail} {openai/* guardrail}]
	// [deepinfra] [deepinfra/fp4]
}
