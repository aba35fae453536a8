package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/store/requestlog"
)

func runRows(env *cliEnv, args []string) int {
	fs := newFlags(env, "rows", "[--config DIR] [filters] [--format table|csv|json]")
	dir := fs.String("config", ".", "configuration directory (its [store] is read)")
	format := fs.String("format", "table", "output format: table, csv or json")
	all := fs.Bool("all", false, "follow next_cursor through every page (default: one page)")
	q := url.Values{}
	for _, name := range requestlog.FilterParams {
		fs.Func(name, "filter: "+name+" (as in GET /api/v1/analytics/invocations)", func(v string) error { q.Set(name, v); return nil })
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	filter, problems := requestlog.ParseFilter(q, requestlog.ParseOptions{})
	if len(problems) > 0 {
		fmt.Fprintf(env.stderr, "sluice rows: invalid query: %s %s\n", problems[0].Param, problems[0].Message)
		return 2
	}
	cfg, diags := profiles.Load(*dir)
	if len(diags) > 0 {
		printLoadError(env, diags)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := requestlog.Open(&cfg.Store)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice rows: %v\n", err)
		return 1
	}
	defer store.Close()
	var rows []requestlog.Row
	for {
		page, err := store.Query(ctx, filter)
		if err != nil {
			fmt.Fprintf(env.stderr, "sluice rows: %v\n", err)
			return 1
		}
		rows = append(rows, page.Rows...)
		if !*all || page.NextCursor == "" {
			if !*all && page.NextCursor != "" {
				fmt.Fprintf(env.stderr, "more rows: --cursor %s (or --all)\n", page.NextCursor)
			}
			break
		}
		filter.Cursor = page.NextCursor
	}
	if rows == nil {
		rows = []requestlog.Row{}
	}
	if err := requestlog.WriteRows(env.stdout, rows, *format); err != nil {
		fmt.Fprintf(env.stderr, "sluice rows: %v\n", err)
		return 2
	}
	return 0
}

func runMigrate(env *cliEnv, args []string) int {
	fs := newFlags(env, "migrate", "[--config DIR]")
	dir := fs.String("config", ".", "configuration directory (its [store] is read)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	cfg, diags := profiles.Load(*dir)
	if len(diags) > 0 {
		printLoadError(env, diags)
		return 1
	}
	switch cfg.Store.Kind {
	case "off":
		fmt.Fprintln(env.stdout, `the request log is off ([store] kind = "off"): nothing to migrate`)
		return 0
	case "sqlite":
		fmt.Fprintln(env.stdout, "store kind is sqlite: its schema is created when the gateway opens it; nothing to migrate")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := requestlog.ClickHouseOptions(&cfg.Store)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice migrate: %v\n", err)
		return 1
	}
	applied, err := requestlog.MigrateClickHouse(ctx, o)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice migrate: %v\n", err)
		return 1
	}
	if len(applied) == 0 {
		fmt.Fprintln(env.stdout, "up to date")
	}
	for _, m := range applied {
		fmt.Fprintf(env.stdout, "applied %s\n", m)
	}
	return 0
}
