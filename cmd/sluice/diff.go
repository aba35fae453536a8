package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/review/diff"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// defaultTrafficWindow is how far back --traffic counts when --from is not
// given.
const defaultTrafficWindow = 7 * 24 * time.Hour

// trafficTimeout bounds reading the request log.
const trafficTimeout = 2 * time.Minute

// runDiff compiles every (key, model, upstream) under two configuration
// revisions and reports what changed, weighed by the request log with
// --traffic. Exit 0: no change; 1: a change; 2: an error (either side
// failing to load prints its located diagnostics, prefixed by the side; a
// request log that cannot be read prints the cause). With --fail-over N,
// exit 1 only when more than N recorded requests would be refused.
func runDiff(env *cliEnv, args []string) int {
	fs := newFlags(env, "diff", "--base DIR --head DIR [--keys all|K1,K2] [--models catalog|M1,M2] [--format text|json|markdown]\n"+
		"       [--traffic --config DIR [--from T] [--to T] [--team T1,T2] [--fail-over N]]")
	baseDir := fs.String("base", "", "configuration directory of the base revision (required)")
	headDir := fs.String("head", "", "configuration directory of the head revision (required)")
	keys := fs.String("keys", "all", `keys to compare: "all" (every key of either revision) or a comma-separated list of key ids`)
	models := fs.String("models", "catalog", `models to compile: "catalog" (every catalog model of either revision, plus route aliases; with --traffic, plus every model a recorded request decided on) or a comma-separated list`)
	format := fs.String("format", "text", "output format: text, json (stable, see docs/diff.md) or markdown (for a pull-request comment)")
	traffic := fs.Bool("traffic", false, "weigh every change by the requests the request log of --config recorded")
	configDir := fs.String("config", "", "with --traffic: the configuration directory whose [store] (SQLite or ClickHouse) is read")
	from := fs.String("from", "", "with --traffic: start of the window, RFC 3339 or a date (default: 7 days before --to)")
	to := fs.String("to", "", "with --traffic: end of the window, RFC 3339 or a date, which includes that whole day (default: now)")
	team := fs.String("team", "", "with --traffic: only these teams' requests (comma-separated)")
	failOver := fs.Int64("fail-over", -1, "with --traffic: exit 1 only when more than N recorded requests would be refused (a CI gate), 0 otherwise")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintln(env.stderr, "sluice diff: "+msg)
		fs.Usage()
		return 2
	}
	if *baseDir == "" || *headDir == "" {
		return usage("--base and --head are required")
	}
	if *format != "text" && *format != "json" && *format != "markdown" {
		fmt.Fprintf(env.stderr, "sluice diff: unknown --format %q (text, json or markdown)\n", *format)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !*traffic {
		for _, n := range []string{"config", "from", "to", "team", "fail-over"} {
			if set[n] {
				return usage("--" + n + " needs --traffic")
			}
		}
	}
	var topts diff.TrafficOptions
	if *traffic {
		if *configDir == "" {
			return usage("--traffic needs --config DIR, the configuration whose request log is read")
		}
		if set["fail-over"] && *failOver < 0 {
			return usage(fmt.Sprintf("--fail-over must be 0 or more, not %d", *failOver))
		}
		var err error
		if topts, err = trafficWindow(*from, *to, *team, time.Now()); err != nil {
			return usage(err.Error())
		}
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
	var (
		r   *diff.Report
		err error
	)
	if *traffic {
		r, err = diffTraffic(env, base, head, opts, *configDir, topts)
	} else {
		r, err = diff.Compare(context.Background(), base, head, opts)
	}
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
	if set["fail-over"] {
		if refused := r.Traffic.Totals.Refused; refused > *failOver {
			fmt.Fprintf(env.stderr, "sluice diff: %d recorded requests would be refused, more than --fail-over %d\n", refused, *failOver)
			return 1
		}
		return 0
	}
	if r.Changed {
		return 1
	}
	return 0
}

// trafficWindow reads --from, --to and --team. Times are RFC 3339 or dates
// (UTC; a date --to includes its whole day), parsed as the analytics
// filters are; --to defaults to now and --from to 7 days before --to.
func trafficWindow(from, to, teams string, now time.Time) (diff.TrafficOptions, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	f, problems := requestlog.ParseFilter(q, requestlog.ParseOptions{Dates: true})
	if len(problems) > 0 {
		return diff.TrafficOptions{}, fmt.Errorf("--%s %s", problems[0].Param, problems[0].Message)
	}
	if f.To.IsZero() {
		f.To = now.UTC()
	}
	if f.From.IsZero() {
		f.From = f.To.Add(-defaultTrafficWindow)
	}
	if !f.From.Before(f.To) {
		return diff.TrafficOptions{}, fmt.Errorf("--from (%s) must be before --to (%s)", f.From.Format(time.RFC3339), f.To.Format(time.RFC3339))
	}
	t := diff.TrafficOptions{From: f.From, To: f.To}
	if teams != "" {
		t.Teams = splitList(teams)
	}
	return t, nil
}

// errNoLog is the cause when --config's [store] has no log to read.
var errNoLog = errors.New("no request log")

// diffTraffic opens the request log of the configuration at dir and
// compares base and head weighed by it.
func diffTraffic(env *cliEnv, base, head *snapshot.Snapshot, opts diff.Options, dir string, topts diff.TrafficOptions) (*diff.Report, error) {
	cfg, diags := profiles.Load(dir)
	if len(diags) > 0 {
		for _, d := range diags {
			fmt.Fprintf(env.stderr, "config: %s\n", d.String())
		}
		return nil, fmt.Errorf("--config %s does not load", dir)
	}
	switch cfg.Store.Kind {
	case "off":
		return nil, fmt.Errorf("%w: --config %s has [store] kind = \"off\", which records nothing", errNoLog, dir)
	case "clickhouse":
	default:
		// Opening SQLite creates a missing file: an empty log would read as
		// "no traffic", which is not what the reviewer asked for.
		p := filepath.Join(cfg.Store.DataDir, requestlog.File)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w at %s: %w", errNoLog, p, err)
		}
	}
	store, err := requestlog.Open(&cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", diff.ErrTraffic, err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), trafficTimeout)
	defer cancel()
	return diff.CompareTraffic(ctx, base, head, opts, store, topts)
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
