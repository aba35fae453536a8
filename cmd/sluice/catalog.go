package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/profiles"
)

// runCatalog dispatches `sluice catalog <subcommand>`.
func runCatalog(env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(env.stderr, "Usage: sluice catalog import --config DIR --from openrouter|vercel [flags]  (sluice catalog import -h lists them)")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "import":
		return runCatalogImport(env, args[1:])
	}
	fmt.Fprintf(env.stderr, "sluice catalog: unknown subcommand %q (import)\n", args[0])
	return 2
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, splitList(v)...)
	return nil
}

var _ flag.Value = (*listFlag)(nil)

// runCatalogImport imports a marketplace's listing into the catalog: live
// from its API, or from saved responses. A listing that fails validation,
// or a merged catalog the loader would refuse, writes nothing and exits 1.
func runCatalogImport(env *cliEnv, args []string) int {
	fs := newFlags(env, "catalog import", "--config DIR --from openrouter|vercel [--base-url URL] [--models FILE [--endpoints DIR]] [--out FILE] [--only PATTERN]...")
	dir := fs.String("config", ".", "configuration directory")
	from := fs.String("from", "", `the listing: "openrouter" or "vercel" (required)`)
	baseURL := fs.String("base-url", "", "the API base to fetch from (default: the marketplace's public API, https://openrouter.ai/api/v1 or https://ai-gateway.vercel.sh/v1)")
	upstream := fs.String("upstream", "", "the [[upstreams]] entry whose api_key_env holds the API key (default: the first upstream of the --from connector)")
	models := fs.String("models", "", "a saved model-list response to read instead of fetching (offline)")
	endpoints := fs.String("endpoints", "", "with --models (openrouter): the directory of saved endpoints responses, DIR/<author>/<slug>.json")
	zdr := fs.String("zdr", "", "(openrouter) a saved zero-data-retention endpoint list (GET /endpoints/zdr) to read instead of fetching it; offline, without it zero_retention is not imported")
	out := fs.String("out", "", "the catalog to merge into and write (default: the config directory's catalog.json)")
	var only listFlag
	fs.Var(&only, "only", "import only the models this pattern matches (guardrail syntax: * within a segment, ** across; repeatable or comma-separated; default every model)")
	threshold := fs.Float64("price-change", 0.05, "list price changes larger than this fraction in the summary")
	concurrency := fs.Int("concurrency", listing.DefaultConcurrency, "endpoint listings fetched at once")
	attempts := fs.Int("attempts", listing.DefaultAttempts, "tries of one listing: a 429, 5xx or network error is retried with backoff")
	dryRun := fs.Bool("dry-run", false, "print the summary but write nothing")
	verbose := fs.Bool("verbose", false, "list every change and note (default: at most 50 of each)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(env.stderr, "sluice catalog import: "+format+"\n", a...)
		return 1
	}
	if *from != listing.SourceOpenRouter && *from != listing.SourceVercel {
		fmt.Fprintln(env.stderr, `sluice catalog import: --from must be "openrouter" or "vercel"`)
		fs.Usage()
		return 2
	}
	if *endpoints != "" && (*models == "" || *from != listing.SourceOpenRouter) {
		return fail("--endpoints goes with --models and --from openrouter")
	}
	if *zdr != "" && *from != listing.SourceOpenRouter {
		return fail("--zdr goes with --from openrouter")
	}
	if *out == "" {
		*out = filepath.Join(*dir, guardrails.CatalogFile)
	}
	client := &listing.Client{Concurrency: *concurrency, Attempts: *attempts, Progress: progressPrinter(env)}
	if *models == "" {
		if *baseURL == "" {
			*baseURL = profiles.DefaultBaseURLs[*from]
		}
		key, note := apiKey(*dir, *from, *upstream)
		if note != "" {
			fmt.Fprintln(env.stderr, note)
		}
		client.APIKey = key
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var imp *listing.Import
	var err error
	switch *from {
	case listing.SourceOpenRouter:
		if *models != "" && *endpoints == "" {
			fmt.Fprintln(env.stderr, "note: no --endpoints directory: every model is left as it is (only its endpoints listing gives endpoints)")
		}
		imp, err = (&listing.OpenRouter{BaseURL: *baseURL, Client: client, ModelsFile: *models, EndpointsDir: *endpoints, ZDRFile: *zdr, Only: only}).Import(ctx)
	case listing.SourceVercel:
		imp, err = (&listing.Vercel{BaseURL: *baseURL, Client: client, ModelsFile: *models, Only: only}).Import(ctx)
	}
	if err != nil {
		fmt.Fprintln(env.stdout, err.Error())
		return fail("the listing was refused; %s was not changed", *out)
	}
	base, err := listing.ReadDocument(*out)
	if err != nil {
		return fail("reading %s: %v", *out, err)
	}
	applied, diags := listing.Apply(filepath.Base(*out), base, imp, listing.MergeOptions{PriceThreshold: *threshold})
	raw, sum := applied.Raw, applied.Summary
	if len(diags) > 0 {
		fmt.Fprintln(env.stdout, diags.Error())
		return fail("the merged catalog would not load; %s was not changed", *out)
	}
	sum.Write(env.stdout, *verbose)
	if *dryRun {
		fmt.Fprintf(env.stdout, "dry run: %s was not changed\n", *out)
		return 0
	}
	if old, err := os.ReadFile(*out); err == nil && string(old) == string(raw) {
		fmt.Fprintf(env.stdout, "%s is up to date\n", *out)
		return 0
	}
	if err := listing.WriteFileAtomic(*out, raw); err != nil {
		return fail("writing %s: %v", *out, err)
	}
	fmt.Fprintf(env.stdout, "wrote %s\n", *out)
	return 0
}

// apiKey returns the API key for a live import: from the environment
// variable the chosen upstream names (api_key_env), and a line for stderr
// when there is none.
func apiKey(dir, connector, name string) (string, string) {
	cfg, diags := profiles.Load(dir)
	if len(diags) > 0 {
		return "", fmt.Sprintf("note: %s does not load (%s): fetching without an API key", filepath.Join(dir, profiles.ConfigFile), diags[0].String())
	}
	var up *profiles.Upstream
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if (name != "" && u.Name == name) || (name == "" && u.Connector == connector) {
			up = u
			break
		}
	}
	switch {
	case up == nil && name != "":
		return "", fmt.Sprintf("note: no upstream %q: fetching without an API key", name)
	case up == nil:
		return "", fmt.Sprintf("note: no %s upstream in %s: fetching without an API key", connector, profiles.ConfigFile)
	case up.APIKeyEnv == "":
		return "", fmt.Sprintf("note: upstream %q names no api_key_env: fetching without an API key", up.Name)
	}
	key := os.Getenv(up.APIKeyEnv)
	if key == "" {
		return "", fmt.Sprintf("note: %s (upstream %q) is not set: fetching without an API key; OpenRouter reports latency and throughput only to authenticated callers", up.APIKeyEnv, up.Name)
	}
	return key, ""
}

// progressPrinter reports the endpoint listings fetched on stderr: a line
// at each tenth and at the end, so that a log shows it too.
func progressPrinter(env *cliEnv) func(done, total int) {
	var mu sync.Mutex
	lastTenth := -1
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		tenth := done * 10 / max(total, 1)
		if tenth == lastTenth && done != total {
			return
		}
		lastTenth = tenth
		fmt.Fprintf(env.stderr, "endpoint listings: %d/%d\n", done, total)
	}
}
