package main

import (
	"fmt"

	"github.com/sluicegw/sluice/snapshot"
)

func runCheck(env *cliEnv, args []string) int {
	fs := newFlags(env, "check", "[--config DIR]")
	dir := fs.String("config", ".", "configuration directory")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	snap, diags := snapshot.Load(*dir)
	if len(diags) > 0 {
		fmt.Fprintln(env.stdout, diags.Error())
		fmt.Fprintf(env.stderr, "sluice check: %d error(s) in %s\n", len(diags), *dir)
		return 1
	}
	cfg := snap.Config
	models, guardrails := 0, 0
	if snap.Catalog != nil {
		models = snap.Catalog.Len()
	}
	if snap.Policy != nil {
		guardrails = len(snap.Policy.Files())
	}
	if w := storeDiffers(cfg); w != "" {
		fmt.Fprintln(env.stderr, w)
	}
	fmt.Fprintf(env.stdout, "ok: %d profiles, %d keys, %d upstreams, %d routes, %d guardrail files, %d catalog models\n",
		cfg.Profiles.Count(), len(cfg.Keys), len(cfg.Upstreams), len(cfg.Routes), guardrails, models)
	return 0
}
