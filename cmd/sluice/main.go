// Command sluice is the LLM gateway and policy compiler: it checks and
// explains a configuration directory, runs guardrail tests, serves the
// OpenAI-compatible and Messages APIs, and reads the request log. It is the
// one place that wires the rooms together: the gateway with the compliance
// pages and diff's what-if view, and the demo with the simulator.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(env *cliEnv, args []string) int
}

// cliEnv is what a subcommand talks to; tests give it buffers.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// interrupt, when set, stops a command that serves until Ctrl-C (demo
	// --serve, simulate) as SIGINT does; tests close it.
	interrupt <-chan struct{}
	// serving, when set, is called once such a command has printed its
	// URLs and serves.
	serving func()
}

// serveUntilStopped tells the test (serving) that the command serves, then
// waits for SIGINT, SIGTERM or the test's interrupt.
func (env *cliEnv) serveUntilStopped() {
	if env.serving != nil {
		env.serving()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	select {
	case <-sigs:
	case <-env.interrupt:
	}
}

func commands() []command {
	return []command{
		{"demo", "serve the demo config against the built-in simulator, send scripted requests, print the rows", runDemo},
		{"simulate", "serve the upstream simulator on its own, for your own configuration's base_url (until Ctrl-C)", runSimulate},
		{"serve", "serve the OpenAI-compatible API (reloads on SIGHUP and file changes)", runServe},
		{"rows", "read the request log (same filters as the analytics API)", runRows},
		{"migrate", "apply the ClickHouse request-log migrations", runMigrate},
		{"import", "seed the state store with sluice.toml's routes (replacing the stored ones)", runImport},
		{"catalog", "catalog import: build or refresh catalog.json from OpenRouter's or Vercel's model listings", runCatalog},
		{"check", "validate a configuration directory and report every error, located", runCheck},
		{"explain", "show the merged profile (with provenance) for a key and an optional request", runExplain},
		{"diff", "compile every key, model and upstream under two config revisions and report what changed", runDiff},
		{"keys", "hash a key secret (keys hash) or make a new one (keys new)", runKeys},
		{"test", "run the guardrails' Rego unit tests (*_test.rego)", runTest},
		{"version", "print the module version, VCS commit and Go version (--json)", runVersion},
		{"help", "list the subcommands", runHelp},
	}
}

func main() {
	os.Exit(run(&cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(env *cliEnv, args []string) int {
	if len(args) == 0 {
		runHelp(env, nil)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "--help" {
		name = "help"
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(env, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "sluice: unknown command %q (run 'sluice help')\n", name)
	return 2
}

func runHelp(env *cliEnv, _ []string) int {
	fmt.Fprintln(env.stdout, "sluice — an LLM gateway and policy compiler")
	fmt.Fprintln(env.stdout, "\nUsage: sluice <command> [flags]\n\nCommands:")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(env.stdout, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(env.stdout, "\nRun 'sluice <command> -h' for a command's flags.")
	return 0
}

// newFlags returns a flag set that reports to the env's stderr and never exits.
func newFlags(env *cliEnv, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: sluice %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and returns the exit code to stop with, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2
	}
	return -1
}
