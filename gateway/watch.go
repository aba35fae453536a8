package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// WatchDebounce is how long the watcher waits after the last change before
// reloading, so that an editor's burst of writes becomes one reload.
const WatchDebounce = 250 * time.Millisecond

// Watch reloads the configuration whenever one of the files the
// configuration directory documents changes, until ctx ends: sluice.toml,
// catalog.json, anything under profiles/ or guardrails/ (their loaders
// read, or refuse, every file there), and a swap of the "..data" symlink
// (how a Kubernetes ConfigMap volume changes). Nothing else in the
// directory reloads it: not the request log, the spool or the state
// database under [store] data_dir, not a log file or any other file kept
// beside the configuration, nor an editor's hidden swap files. Editors
// that save by renaming are handled: directories are watched, not files,
// and only the directory itself, profiles/** and guardrails/**. A broken
// save keeps the last good configuration. Each watching func (tests pass
// one) is called once the watches are in place: a change from then on is
// seen.
func (s *Server) Watch(ctx context.Context, watching ...func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// Absolute paths, so that events (named from the watched directories)
	// compare with data_dir, which the loader made absolute.
	dir, err := filepath.Abs(s.opts.ConfigDir)
	if err != nil {
		return err
	}
	data := filepath.Clean(s.snap.Load().Config.Store.DataDir)
	inData := func(p string) bool {
		return p == data || strings.HasPrefix(p, data+string(filepath.Separator))
	}
	addTree := func() {
		_ = w.Add(dir)
		for _, sub := range configTrees {
			_ = filepath.WalkDir(filepath.Join(dir, sub), func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if inData(p) || strings.HasPrefix(filepath.Base(p), ".") {
					return filepath.SkipDir
				}
				_ = w.Add(p)
				return nil
			})
		}
	}
	addTree()
	for _, f := range watching {
		f()
	}
	var timer *time.Timer
	fire := make(chan struct{}, 1)
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if inData(ev.Name) || !isConfig(dir, ev.Name) {
				continue
			}
			if ev.Op&fsnotify.Create != 0 {
				addTree() // a new profiles/teams folder, say
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.AfterFunc(WatchDebounce, func() {
				select {
				case fire <- struct{}{}:
				default:
				}
			})
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.log.Warn("config watcher error", "err", err.Error())
		case <-fire:
			s.ReloadBy(ReloadFileWatch)
		}
	}
}

// configTrees are the folders of the configuration directory whose every
// file is configuration: the profile ladder and the guardrails.
var configTrees = []string{"profiles", "guardrails"}

// isConfig reports whether a change to path, inside the configuration
// directory dir, is a change to the configuration: sluice.toml or
// catalog.json at the top, a file or folder under profiles/ or guardrails/,
// or an atomic writer's "..data" swap (names that start with ".."). A
// hidden file (an editor's swap or backup file) is none, nor is anything
// else in the directory.
func isConfig(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	top, _, nested := strings.Cut(filepath.ToSlash(rel), "/")
	base := filepath.Base(path)
	if strings.HasPrefix(base, ".") {
		return !nested && strings.HasPrefix(base, "..")
	}
	if slices.Contains(configTrees, top) {
		return true
	}
	return !nested && (top == profiles.ConfigFile || top == guardrails.CatalogFile)
}
