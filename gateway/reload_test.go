package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
)

// TestReloadUnderLoad: while a bounded load runs, every kind of broken file
// is written and reloaded (through the file watcher), then repaired; no
// request fails, the last good configuration keeps serving, and a good
// reload takes effect for the next request.
func TestReloadUnderLoad(t *testing.T) {
	h := newHarness(t, [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	ctx, cancel := contextWithTimeout(30 * time.Second)
	defer cancel()
	watchUntil(t, ctx, h.srv)

	var sent, failed atomic.Int64
	var failures sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 5000; i++ { // bounded in count; stopped by the test
				select {
				case <-stop:
					return
				default:
				}
				resp, b := h.post(secretChat, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"w%d-%d"`, w, i)))
				sent.Add(1)
				if resp.StatusCode != 200 {
					failed.Add(1)
					failures.Store(resp.StatusCode, string(b))
				}
			}
		}(w)
	}
	good := h.srv.Snapshot().Revision
	waitReloads := func(failedBefore float64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for metric(t, h, `sluice_config_reloads_total{result="failed"}`) <= failedBefore {
			require.True(t, time.Now().Before(deadline), "the watcher did not try the broken file")
			time.Sleep(20 * time.Millisecond)
		}
	}
	breaks := []struct {
		name string
		file string
		data string // "" deletes the file
	}{
		{"toml syntax", "sluice.toml", "[server\nlisten = 1\n"},
		{"schema error", "profiles/org.toml", "fallbacks = 3\n"},
		{"rego compile error", "guardrails/org.rego", "package sluice.guardrails\n\nallow_models contains x if { y }\n"},
		{"all targets restricted", "sluice.toml", ""},
		{"catalog with no models", "catalog.json", `{"models": []}`},
		{"file deleted mid-write", "catalog.json", ""},
	}
	for _, br := range breaks {
		p := filepath.Join(h.dir, br.file)
		orig, err := os.ReadFile(p)
		require.NoError(t, err)
		before := metric(t, h, `sluice_config_reloads_total{result="failed"}`)
		switch {
		case br.name == "all targets restricted":
			broken := []byte(string(orig) + "\n[[routes]]\nmodel = \"broken\"\n[[routes.targets]]\nupstream = \"market\"\ntakes_over = [\"refusal\"]\n")
			require.NoError(t, os.WriteFile(p, broken, 0o644))
		case br.data == "":
			require.NoError(t, os.Remove(p))
		default:
			require.NoError(t, os.WriteFile(p, []byte(br.data), 0o644))
		}
		waitReloads(before)
		require.Equal(t, good, h.srv.Snapshot().Revision, "%s: the last good config keeps serving", br.name)
		_, rb := h.get("/readyz", "")
		require.Contains(t, string(rb), `"last_reload_failed":true`, br.name)
		require.NoError(t, os.WriteFile(p, orig, 0o644))
	}
	// Repaired: the watcher reloads and the failure clears.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, rb := h.get("/readyz", "")
		if string(rb) != "" && !contains(rb, `"last_reload_failed":true`) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the repaired config was not reloaded")
		time.Sleep(20 * time.Millisecond)
	}
	// A good change takes effect for the next request.
	editConfig(t, h.dir, [2]string{"project = \"chat\"\n", "project = \"chat\"\nupstream = \"openai\"\n"})
	deadline = time.Now().Add(5 * time.Second)
	for {
		resp, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"after-good-reload"`))
		if resp.Header.Get("X-Sluice-Upstream") == "openai" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the good change did not take effect")
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Greater(t, sent.Load(), int64(20), "the load ran")
	failures.Range(func(k, v any) bool { t.Errorf("status %v: %v", k, v); return true })
	require.Zero(t, failed.Load(), "no request failed during the reloads")
	require.Contains(t, h.logs.String(), "config reload failed")
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// metric reads one sample's value from /metrics (0 when absent).
func metric(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	b := scrape(t, h.srv)
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > len(name) && line[:len(name)] == name && line[len(name)] == ' ' {
			var v float64
			_, err := fmt.Sscanf(line[len(name)+1:], "%g", &v)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

// watch runs srv's watcher until the test ends (10 s at most) and returns
// once it watches: a change from then on is seen (a "no reload" test that
// wrote before would pass for a watcher that was not watching yet).
func watch(t *testing.T, srv *gateway.Server) {
	t.Helper()
	ctx, cancel := contextWithTimeout(10 * time.Second)
	t.Cleanup(cancel)
	watchUntil(t, ctx, srv)
}

// watchUntil runs srv's watcher until ctx ends and returns once it watches.
func watchUntil(t *testing.T, ctx context.Context, srv *gateway.Server) {
	t.Helper()
	watching := make(chan struct{})
	go func() { _ = srv.Watch(ctx, func() { close(watching) }) }()
	select {
	case <-watching:
	case <-ctx.Done():
		t.Fatal("the watcher did not start watching")
	}
}

// waitLoaded waits (5 s at most) for srv to load its configuration again
// after loaded, the LoadedAt it had: a reload of the same revision counts.
func waitLoaded(t *testing.T, srv *gateway.Server, loaded time.Time) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Snapshot().LoadedAt.Equal(loaded) {
		require.True(t, time.Now().Before(deadline), "watcher did not reload within 5s")
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReload waits (bounded) for the revision to move from before.
func waitReload(t *testing.T, h *harness, before string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.srv.Snapshot().Revision == before {
		require.True(t, time.Now().Before(deadline), "watcher did not reload within 5s")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchWithRelativeConfigDir: served from a relative --config (the CLI's
// default is "."), the watcher still tells data_dir's writes — the request
// log's, every flush — from configuration changes.
func TestWatchWithRelativeConfigDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	for env, v := range platformKeys {
		t.Setenv(env, v)
	}
	t.Chdir(dir)
	srv, err := gateway.New(gateway.Options{ConfigDir: ".", Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	watch(t, srv)
	loaded := srv.Snapshot().LoadedAt
	require.NoError(t, os.WriteFile(filepath.Join("data", "scratch"), []byte("x"), 0o644))
	// Past the debounce: a reload for that write would have happened.
	time.Sleep(3 * gateway.WatchDebounce)
	require.Equal(t, loaded, srv.Snapshot().LoadedAt, "a write under data_dir reloaded the configuration")
	// A configuration change still reloads.
	appendFile(t, dir, "profiles/projects/chat.toml", "\n# touched\n")
	waitLoaded(t, srv, loaded)
}

// TestWatchFollowsDataSymlinkSwap: a directory whose files are symlinks into
// "..data", updated by renaming a new "..data" symlink over the old one (a
// Kubernetes ConfigMap volume), reloads.
func TestWatchFollowsDataSymlinkSwap(t *testing.T) {
	h := newHarness(t)
	p := filepath.Join(h.dir, "sluice.toml")
	orig, err := os.ReadFile(p)
	require.NoError(t, err)
	version := func(name string, b []byte) {
		require.NoError(t, os.Mkdir(filepath.Join(h.dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, name, "sluice.toml"), b, 0o644))
	}
	version("..v1", orig)
	require.NoError(t, os.Symlink("..v1", filepath.Join(h.dir, "..data")))
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink(filepath.Join("..data", "sluice.toml"), p))
	require.Empty(t, h.srv.Reload())
	require.True(t, h.srv.Snapshot().Config.Cache.Enabled)

	watch(t, h.srv)
	before := h.srv.Snapshot().Revision
	version("..v2", []byte(strings.Replace(string(orig), "[cache]\nenabled = true", "[cache]\nenabled = false", 1)))
	require.NoError(t, os.Symlink("..v2", filepath.Join(h.dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(h.dir, "..data_tmp"), filepath.Join(h.dir, "..data")))
	waitReload(t, h, before)
	require.False(t, h.srv.Snapshot().Config.Cache.Enabled)
}

// TestWatchReloadsOnlyForConfiguration: the watcher reloads for the files
// the configuration directory documents — sluice.toml, catalog.json,
// profiles/**, guardrails/** — and for nothing else kept in the directory:
// a log file written line by line, a file in a folder of its own, an
// editor's swap file.
func TestWatchReloadsOnlyForConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string // relative to the directory; created when missing
		reload bool
	}{
		{"sluice.toml", "sluice.toml", true},
		{"catalog.json", "catalog.json", true},
		{"a profile", "profiles/projects/chat.toml", true},
		{"a guardrail", "guardrails/org.rego", true},
		{"a guardrail test", "guardrails/org_test.rego", true},
		{"a log file beside the configuration", "sluice.log", false},
		{"a file in a folder of its own", "notes/todo.txt", false},
		{"an editor's swap file in profiles", "profiles/.org.toml.swp", false},
		{"a hidden file at the top", ".env", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			require.NoError(t, os.MkdirAll(filepath.Join(h.dir, filepath.Dir(tc.file)), 0o755))
			watch(t, h.srv)
			loaded := h.srv.Snapshot().LoadedAt
			write := func() {
				f, err := os.OpenFile(filepath.Join(h.dir, tc.file), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				require.NoError(t, err)
				_, err = f.WriteString("\n") // blank: every kind of file stays valid
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			if tc.reload {
				write()
				waitLoaded(t, h.srv, loaded)
				return
			}
			for range 5 { // as a log is written: a line at a time
				write()
				time.Sleep(gateway.WatchDebounce / 2)
			}
			// Past the debounce: a reload for those writes would have happened.
			time.Sleep(3 * gateway.WatchDebounce)
			require.Equal(t, loaded, h.srv.Snapshot().LoadedAt, "a write to %s reloaded the configuration", tc.file)
		})
	}
}

// TestWatchIgnoresALogFileInTheDirectory: a gateway whose own log is a file
// in its configuration directory reloads once for a change, not once per
// log line (each reload logs a line, which used to trigger the next).
func TestWatchIgnoresALogFileInTheDirectory(t *testing.T) {
	var logFile *os.File
	h := newHarnessOpts(t, func(dir string) {
		var err error
		logFile, err = os.Create(filepath.Join(dir, "sluice.log"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = logFile.Close() })
	}, nil, func(o *gateway.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logFile, nil))
	})
	watch(t, h.srv)
	before := h.srv.Snapshot().Revision
	appendFile(t, h.dir, "profiles/projects/chat.toml", "\n# touched\n")
	waitReload(t, h, before)
	loaded := h.srv.Snapshot().LoadedAt
	time.Sleep(4 * gateway.WatchDebounce)
	require.Equal(t, loaded, h.srv.Snapshot().LoadedAt, "the reload's own log line reloaded the configuration again")
	logged, err := os.ReadFile(filepath.Join(h.dir, "sluice.log"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(logged), `"msg":"config reloaded"`), "%s", logged)
}
