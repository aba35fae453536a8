package main

import (
	"fmt"
	"io/fs"
	"path/filepath"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/simulator"
)

// The credentials `sluice simulate` has its Azure OpenAI and Amazon Bedrock
// endpoints accept (printed with their base URLs): those two check a
// credential as the clouds do, where the other kinds take any key.
const (
	simulateAzureKey   = "sluice-simulate-azure-key"
	simulateBedrockKey = "sluice-simulate-bedrock-key"
	simulateAWSKeyID   = "AKIDSLUICESIMULATE"
	simulateAWSSecret  = "sluice-simulate-aws-secret"
)

// runSimulate serves the upstream simulator on its own: the models of a
// configuration's catalog.json (the demo's when there is none) behind an
// OpenRouter-, a Vercel-, an OpenAI-, an Anthropic-, an Azure OpenAI- and
// an Amazon Bedrock-like API, so that `sluice serve` runs a user's own
// configuration without an upstream account. It prints the base_url per
// upstream kind (with the credential the two clouds check) and runs until
// Ctrl-C. Google Vertex AI is not among them: its simulator is a server of
// its own that checks tokens signed by a service-account key it is given.
func runSimulate(env *cliEnv, args []string) int {
	fs := newFlags(env, "simulate", "[--config DIR] [--listen ADDR]")
	dir := fs.String("config", "", "configuration directory whose catalog.json the simulator serves (default: the demo catalog)")
	listen := fs.String("listen", "127.0.0.1:9090", "the simulator's address")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	cat, from, err := simulateCatalog(*dir)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice simulate: %v\n", err)
		return 1
	}
	cfg := simulator.FromCatalog(cat)
	cfg.AzureAPIKey = simulateAzureKey
	cfg.BedrockAPIKeys = []string{simulateBedrockKey}
	cfg.AWSCredentials = map[string]string{simulateAWSKeyID: simulateAWSSecret}
	sim := simulator.New(cfg)
	base, err := sim.StartOn(*listen)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice simulate: %v\n", err)
		return 1
	}
	defer sim.Close()
	out := env.stdout
	fmt.Fprintf(out, "sluice simulate: %d models of %s at %s, until Ctrl-C\n\n", cat.Len(), from, base)
	fmt.Fprintln(out, "base_url per upstream kind (set it on your [[upstreams]] entry; the api_key_env may hold anything, but for the clouds):")
	kinds := []string{simulator.KindOpenRouter, simulator.KindVercel, simulator.KindOpenAI, simulator.KindAnthropic, simulator.KindAzure, simulator.KindBedrock}
	for _, k := range kinds {
		fmt.Fprintf(out, "  %-10s %s\n", k, sim.URL(k))
	}
	fmt.Fprintf(out, "  (azure: the api_key_env variable set to %q; bedrock: to the Bedrock API key %q, or signed with AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s)\n",
		simulateAzureKey, simulateBedrockKey, simulateAWSKeyID, simulateAWSSecret)
	if *dir != "" {
		if cfg, diags := profiles.Load(*dir); len(diags) == 0 && len(cfg.Upstreams) > 0 {
			fmt.Fprintln(out, "\nFor "+filepath.Join(*dir, profiles.ConfigFile)+":")
			for _, u := range cfg.Upstreams {
				fmt.Fprintf(out, "  [[upstreams]] name = %q  →  base_url = %q\n", u.Name, sim.URL(u.Connector))
			}
		}
	}
	fmt.Fprintln(out, "\nA request may carry X-Sim-Fault (forward it with [server] forward_headers) to make an upstream fail, e.g. X-Sim-Fault: status=503;model=openai/gpt-4o.")
	env.serveUntilStopped()
	return 0
}

// simulateCatalog loads DIR/catalog.json, or the demo's when dir is "".
func simulateCatalog(dir string) (*guardrails.Catalog, string, error) {
	if dir == "" {
		raw, err := fs.ReadFile(sluice.DemoConfig(), guardrails.CatalogFile)
		if err != nil {
			return nil, "", err
		}
		cat, diags := guardrails.ParseCatalog(guardrails.CatalogFile, raw)
		if len(diags) > 0 {
			return nil, "", diags
		}
		return cat, "the demo catalog", nil
	}
	cat, diags := guardrails.LoadCatalog(dir)
	if len(diags) > 0 {
		return nil, "", diags
	}
	return cat, filepath.Join(dir, guardrails.CatalogFile), nil
}
