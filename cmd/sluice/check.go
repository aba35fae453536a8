package main

import (
	"fmt"

	"github.com/sluicegw/sluice/profiles"
)

func runCheck(env *cliEnv, args []string) int {
	fs := newFlags(env, "check", "[--config DIR]")
	dir := fs.String("config", ".", "configuration directory")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	cfg, diags := profiles.Load(*dir)
	if len(diags) > 0 {
		for _, d := range diags {
			fmt.Fprintln(env.stdout, d.String())
		}
		fmt.Fprintf(env.stderr, "sluice check: %d error(s) in %s\n", len(diags), *dir)
		return 1
	}
	fmt.Fprintf(env.stdout, "ok: %d profiles, %d keys, %d upstreams, %d routes\n",
		cfg.Profiles.Count(), len(cfg.Keys), len(cfg.Upstreams), len(cfg.Routes))
	return 0
}
