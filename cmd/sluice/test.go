package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/sluicegw/sluice/guardrails"
)

func runTest(env *cliEnv, args []string) int {
	fs := newFlags(env, "test", "[--config DIR] [--run REGEX] [-v]")
	dir := fs.String("config", ".", "configuration directory")
	runExpr := fs.String("run", "", "run only the tests whose name matches this regular expression")
	verbose := fs.Bool("v", false, "print every test, not only failures")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	var re *regexp.Regexp
	if *runExpr != "" {
		var err error
		if re, err = regexp.Compile(*runExpr); err != nil {
			fmt.Fprintf(env.stderr, "sluice test: --run: %v\n", err)
			return 2
		}
	}
	passed, err := guardrails.RunTests(context.Background(), *dir, re, *verbose, env.stdout)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice test: %v\n", err)
		return 1
	}
	if !passed {
		return 1
	}
	return 0
}
