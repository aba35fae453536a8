package main

import (
	"context"
	"fmt"

	"github.com/sluicegw/sluice/snapshot"
)

func runCheck(env *cliEnv, args []string) int {
	fs := newFlags(env, "check", "[--config DIR] [--strict]")
	dir := fs.String("config", ".", "configuration directory")
	strict := fs.Bool("strict", false, "treat warnings (settings that match nothing in the catalog) as errors")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	snap, diags := snapshot.Load(*dir)
	if len(diags) > 0 {
		fmt.Fprintln(env.stdout, diags.Error())
		fmt.Fprintf(env.stderr, "sluice check: %s in %s\n", plural(len(diags), "error"), *dir)
		return 1
	}
	// Warnings: what loads but can never take effect, typos most often.
	warnings := snap.Lint(context.Background())
	for _, w := range warnings {
		fmt.Fprintf(env.stdout, "%s: warning: %s: %s\n", w.Location(), w.Code, w.Message)
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
	if *strict && len(warnings) > 0 {
		fmt.Fprintf(env.stderr, "sluice check: %s in %s (--strict)\n", plural(len(warnings), "warning"), *dir)
		return 1
	}
	fmt.Fprintf(env.stdout, "ok: %s, %s, %s, %s, %s, %s\n",
		plural(cfg.Profiles.Count(), "profile"), plural(len(cfg.Keys), "key"), plural(len(cfg.Upstreams), "upstream"),
		plural(len(cfg.Routes), "route"), plural(guardrails, "guardrail file"), plural(models, "catalog model"))
	if len(warnings) > 0 {
		fmt.Fprintf(env.stderr, "sluice check: %s (--strict makes them errors)\n", plural(len(warnings), "warning"))
	}
	return 0
}

// plural renders "1 key", "2 keys", "0 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
