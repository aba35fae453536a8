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

// runSimulate serves the upstream simulator on its own: the models of a
// configuration's catalog.json (the demo's when there is none) behind an
// OpenRouter-, a Vercel-, an OpenAI- and an Anthropic-like API, so that
// `sluice serve` runs a user's own configuration without an upstream
// account. It prints the base_url per upstream kind and runs until Ctrl-C.
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
	sim := simulator.New(simulator.FromCatalog(cat))
	base, err := sim.StartOn(*listen)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice simulate: %v\n", err)
		return 1
	}
	defer sim.Close()
	out := env.stdout
	fmt.Fprintf(out, "sluice simulate: %d models of %s at %s, until Ctrl-C\n\n", cat.Len(), from, base)
	fmt.Fprintln(out, "base_url per upstream kind (set it on your [[upstreams]] entry; the api_key_env may hold anything):")
	kinds := []string{simulator.KindOpenRouter, simulator.KindVercel, simulator.KindOpenAI, simulator.KindAnthropic}
	for _, k := range kinds {
		fmt.Fprintf(out, "  %-10s %s\n", k, sim.URL(k))
	}
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
