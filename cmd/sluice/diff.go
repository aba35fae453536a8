package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicegw/sluice/diff"
	"github.com/sluicegw/sluice/snapshot"
)

// runDiff compiles every (key, model, upstream) under two configuration
// revisions and reports what changed. Exit 0: no change; 1: a change; 2: an
// error (either side failing to load prints its located diagnostics,
// prefixed by the side).
func runDiff(env *cliEnv, args []string) int {
	fs := newFlags(env, "diff", "--base DIR --head DIR [--keys all|K1,K2] [--models catalog|M1,M2] [--format text|json|markdown]")
	baseDir := fs.String("base", "", "configuration directory of the base revision (required)")
	headDir := fs.String("head", "", "configuration directory of the head revision (required)")
	keys := fs.String("keys", "all", `keys to compare: "all" (every key of either revision) or a comma-separated list of key ids`)
	models := fs.String("models", "catalog", `models to compile: "catalog" (every catalog model of either revision, plus route aliases) or a comma-separated list`)
	format := fs.String("format", "text", "output format: text, json (stable, see docs/diff.md) or markdown (for a pull-request comment)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *baseDir == "" || *headDir == "" {
		fmt.Fprintln(env.stderr, "sluice diff: --base and --head are required")
		fs.Usage()
		return 2
	}
	if *format != "text" && *format != "json" && *format != "markdown" {
		fmt.Fprintf(env.stderr, "sluice diff: unknown --format %q (text, json or markdown)\n", *format)
		return 2
	}
	var opts diff.Options
	if *keys != "all" {
		opts.Keys = splitList(*keys)
	}
	if *models != "catalog" {
		opts.Models = splitList(*models)
	}
	base, bd := snapshot.Load(*baseDir)
	head, hd := snapshot.Load(*headDir)
	if len(bd) > 0 || len(hd) > 0 {
		for _, d := range bd {
			fmt.Fprintf(env.stderr, "base: %s\n", d.String())
		}
		for _, d := range hd {
			fmt.Fprintf(env.stderr, "head: %s\n", d.String())
		}
		return 2
	}
	r, err := diff.Compare(context.Background(), base, head, opts)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice diff: %v\n", err)
		return 2
	}
	switch *format {
	case "json":
		err = r.WriteJSON(env.stdout)
	case "markdown":
		err = r.WriteMarkdown(env.stdout)
	default:
		err = r.WriteText(env.stdout)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice diff: %v\n", err)
		return 2
	}
	if r.Changed {
		return 1
	}
	return 0
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
