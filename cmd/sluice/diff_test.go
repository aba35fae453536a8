package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

var updateDiff = flag.Bool("update-diff", false, "rewrite the expected outputs of testdata/diff")

const diffDir = "../../testdata/diff"

// TestDiff runs the testdata/diff corpus: each case is a base and a head
// configuration directory with the expected text output in want.txt (stdout,
// then stderr and the exit code) and, optionally, want.md and want.json.
// A few usage errors follow the corpus.
func TestDiff(t *testing.T) {
	cases, err := os.ReadDir(diffDir)
	require.NoError(t, err)
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(diffDir, c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			args := []string{"diff", "--base", filepath.Join(dir, "base"), "--head", filepath.Join(dir, "head")}
			if _, err := os.Stat(filepath.Join(dir, "traffic.tsv")); err == nil {
				// The same log in each store must read the same: the
				// second store is compared with what the first wrote.
				for i, kind := range []string{"sqlite", "clickhouse"} {
					t.Run(kind, func(t *testing.T) {
						cfg := trafficLog(t, kind, filepath.Join(dir, "traffic.tsv"))
						extra, err := os.ReadFile(filepath.Join(dir, "args.txt"))
						if err != nil && !os.IsNotExist(err) {
							t.Fatal(err)
						}
						a := append(append(slices.Clone(args), "--traffic", "--config", cfg, "--from", trafficFrom, "--to", trafficTo), strings.Fields(string(extra))...)
						diffCase(t, dir, a, i == 0)
					})
				}
				return
			}
			diffCase(t, dir, args, true)
		})
	}
	forbid := diffDir + "/traffic-forbidden-family"
	log := trafficLog(t, "sqlite", forbid+"/traffic.tsv")
	offDir, noLogDir, downDir := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(offDir, "sluice.toml"), []byte("[store]\nkind = \"off\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(noLogDir, "sluice.toml"), []byte("[store]\nkind = \"sqlite\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(downDir, "sluice.toml"), []byte("[store]\nkind = \"clickhouse\"\nclickhouse_addr = \"127.0.0.1:1\"\n"), 0o644))
	weigh := func(extra ...string) []string {
		return append([]string{"diff", "--base", forbid + "/base", "--head", forbid + "/head", "--traffic", "--config", log,
			"--from", trafficFrom, "--to", trafficTo}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"gate: refusals not more than --fail-over pass", weigh("--fail-over", "1400"), 0, "would be refused: 1,400 (200/day)"},
		{"gate: one more than --fail-over fails", weigh("--fail-over", "1399"), 1, "1400 recorded requests would be refused, more than --fail-over 1399"},
		{"team filter: the plain team loses nothing", weigh("--team", "plain", "--fail-over", "0"), 0, "5,064 requests recorded, 0 on changed combinations"},
		{"team filter keeps the change", weigh("--team", "plain"), 1, "teams plain: 5,064 requests recorded, 0 on changed"},
		{"window before the log", weigh("--to", "2025-11-30", "--from", "2025-11-01"), 1, "(30 days): 0 requests recorded"},
		{"window edge: a millisecond before the case's start", weigh("--from", "2025-12-25", "--to", "2025-12-31"), 1, "(7 days): 8 requests recorded"},
		{"traffic needs config", []string{"diff", "--base", forbid + "/base", "--head", forbid + "/head", "--traffic"}, 2, "--traffic needs --config"},
		{"window flags need traffic", []string{"diff", "--base", forbid + "/base", "--head", forbid + "/head", "--from", "2026-01-01"}, 2, "--from needs --traffic"},
		{"fail-over needs traffic", []string{"diff", "--base", forbid + "/base", "--head", forbid + "/head", "--fail-over", "3"}, 2, "--fail-over needs --traffic"},
		{"negative fail-over", weigh("--fail-over", "-3"), 2, "--fail-over must be 0 or more"},
		{"bad from", weigh("--from", "last week"), 2, "--from must be a date"},
		{"from after to", weigh("--from", "2026-02-01"), 2, "must be before --to"},
		{"store off", weigh("--config", offDir), 2, `kind = "off", which records nothing`},
		{"no sqlite log", weigh("--config", noLogDir), 2, "no request log at " + filepath.Join(noLogDir, "data", "requests.db")},
		{"clickhouse down", weigh("--config", downDir), 2, "the request log cannot be read"},
		{"config that does not load", weigh("--config", "/nonexistent"), 2, "config: sluice.toml: read_error"},
		{"needs base and head", []string{"diff", "--head", diffDir}, 2, "--base and --head are required"},
		{"unknown format", []string{"diff", "--base", "x", "--head", "y", "--format", "yaml"}, 2, "unknown --format"},
		{"unknown key", []string{"diff", "--base", diffDir + "/no-change/base", "--head", diffDir + "/no-change/head", "--keys", "k-plain,k-nope"}, 2, "no key k-nope"},
		{"selected key and model", []string{"diff", "--base", diffDir + "/rank-by-change/base", "--head", diffDir + "/rank-by-change/head", "--keys", "k-plain", "--models", "openai/gpt-4o"}, 0, "compared 1 key × 1 model"},
		{"missing dir", []string{"diff", "--base", "/nonexistent", "--head", diffDir + "/no-change/head"}, 2, "base: sluice.toml: read_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out+errOut, tc.want)
		})
	}
}

// diffCase runs one case's arguments in every format and compares the
// outputs with the case's want files; update lets -update-diff rewrite
// them (the first store of a traffic case writes, the second compares).
func diffCase(t *testing.T, dir string, args []string, update bool) {
	t.Helper()
	code, out, errOut := runCLI(t, "", args...)
	got := out
	if errOut != "" {
		got += "--- stderr\n" + errOut
	}
	got += fmt.Sprintf("--- exit %d\n", code)
	check := func(path, got string, create bool) {
		if update {
			golden(t, path, got, create)
			return
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, strings.TrimRight(string(want), "\n"), strings.TrimRight(got, "\n"))
	}
	check(filepath.Join(dir, "want.txt"), got, true)
	for _, f := range []struct{ format, file string }{{"markdown", "want.md"}, {"json", "want.json"}} {
		path := filepath.Join(dir, f.file)
		if _, err := os.Stat(path); err != nil {
			continue // optional: create the file empty and run with -update-diff
		}
		fcode, fout, ferr := runCLI(t, "", append(args, "--format", f.format)...)
		require.Equal(t, code, fcode, ferr)
		check(path, fout, false)
	}
}

// The window of the traffic cases: seven whole days (a date --to includes
// its day).
const trafficFrom, trafficTo = "2026-01-01", "2026-01-07"

var (
	windowStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	windowEnd   = time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)
)

// trafficLog writes a configuration directory whose [store] of kind
// (sqlite, or clickhouse on a throwaway server) holds the requests that the
// case's traffic.tsv lists, spread over the window, plus two more per line
// just outside it (a millisecond before its start, and at its end), which
// must not count. It returns the directory.
func trafficLog(t *testing.T, kind, tsv string) string {
	t.Helper()
	b, err := os.ReadFile(tsv)
	require.NoError(t, err)
	var rows []requestlog.Row
	for n, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		require.Len(t, f, 7, "%s:%d: team, key, model, upstream, route, routing, requests", tsv, n+1)
		count, err := strconv.Atoi(f[6])
		require.NoError(t, err, "%s:%d", tsv, n+1)
		row := requestlog.Row{Org: "acme", Team: f[0], Project: "p-" + f[0], KeyID: f[1], DecidedModel: f[2], Upstream: f[3],
			RequestRouting: f[5] == "yes", Status: 200}
		if f[4] != "-" {
			row.Route = f[4]
		}
		step := windowEnd.Sub(windowStart) / time.Duration(count)
		for i := range count + 2 {
			r := row
			r.RequestID = fmt.Sprintf("%04d-%06d", n, i)
			switch i {
			case count:
				r.TS = windowStart.Add(-time.Millisecond)
			case count + 1:
				r.TS = windowEnd
			default:
				r.TS = windowStart.Add(time.Duration(i) * step)
			}
			rows = append(rows, r)
		}
	}
	dir := t.TempDir()
	ctx := t.Context()
	var store requestlog.Store
	switch kind {
	case "sqlite":
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte("[store]\nkind = \"sqlite\"\n"), 0o644))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "data"), 0o755))
		store, err = requestlog.OpenSQLite(filepath.Join(dir, "data", "requests.db"))
	default:
		srv := chtest.Shared(t)
		db := chtest.NewDatabaseName("diff")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.toml"), []byte(fmt.Sprintf(
			"[store]\nkind = \"clickhouse\"\nclickhouse_addr = %q\nclickhouse_database = %q\n", srv.Addr(), db)), 0o644))
		store, err = requestlog.OpenClickHouse(ctx, requestlog.Options{Addr: srv.Addr(), Database: db})
	}
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.Insert(ctx, rows))
	return dir
}

// golden compares got with the file, or rewrites it under -update-diff.
func golden(t *testing.T, path, got string, create bool) {
	t.Helper()
	if *updateDiff {
		if _, err := os.Stat(path); err == nil || create {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, strings.TrimRight(string(want), "\n"), strings.TrimRight(got, "\n"))
}
