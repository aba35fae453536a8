package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDebounce is how long the watcher waits after the last change before
// reloading, so that an editor's burst of writes becomes one reload.
const WatchDebounce = 250 * time.Millisecond

// Watch reloads the configuration whenever a file in the configuration
// directory changes (sluice.toml, catalog.json, profiles/**, guardrails/**),
// until ctx ends. Editors that save by renaming are handled: directories are
// watched, not files. So is a directory updated by swapping a "..data"
// symlink (how a Kubernetes ConfigMap volume changes). Writes under
// [store] data_dir (the request log, the spool, the state database) are not
// configuration and are ignored. A broken save keeps the last good
// configuration.
func (s *Server) Watch(ctx context.Context) error {
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
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if inData(p) || strings.HasPrefix(filepath.Base(p), ".") && p != dir {
				return filepath.SkipDir
			}
			_ = w.Add(p)
			return nil
		})
	}
	addTree()
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
			if inData(ev.Name) || ignoredName(filepath.Base(ev.Name)) {
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
			s.Reload()
		}
	}
}

// ignoredName reports a file the watcher does not reload for: an editor's
// hidden swap or backup file. Names that start with ".." are the atomic
// writer's ("..data" swapped to a new "..2026_11_30_…" directory) and do
// count.
func ignoredName(base string) bool {
	return strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "..")
}
