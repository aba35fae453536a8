package guardrails

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicegw/sluice/profiles"
)

// Snapshot is one consistent revision of the guardrails: a policy, a catalog
// and the issuer pairing them. It is immutable.
type Snapshot struct {
	Policy  *Policy
	Catalog *Catalog
	Issuer  *Issuer
}

// Store holds the current [Snapshot] and replaces it atomically on reload. A
// broken policy or catalog never replaces a good one: the last good revision of
// each stays in force. It is safe for concurrent use.
type Store struct {
	dir string
	// Logger receives reload outcomes. Default: slog.Default() at construction.
	Logger *slog.Logger

	cur atomic.Pointer[Snapshot]

	mu         sync.Mutex // serialises reloads
	statusMu   sync.RWMutex
	lastErr    error
	lastReload time.Time
	ok, failed atomic.Uint64
}

// NewStore loads the policy and catalog from dir. When either is broken it
// returns a nil store and the diagnostics: there is no last good revision to
// fall back to.
func NewStore(dir string) (*Store, profiles.Diagnostics) {
	p, pd := LoadPolicy(dir)
	c, cd := LoadCatalog(dir)
	if ds := append(pd, cd...); len(ds) > 0 {
		ds.Sort()
		return nil, ds
	}
	s := &Store{dir: dir, Logger: slog.Default(), lastReload: time.Now()}
	s.cur.Store(&Snapshot{Policy: p, Catalog: c, Issuer: NewIssuer(p, c)})
	s.ok.Add(1)
	return s, nil
}

// Dir returns the configuration directory.
func (s *Store) Dir() string { return s.dir }

// Current returns the snapshot in force.
func (s *Store) Current() *Snapshot { return s.cur.Load() }

// Decide issues (or returns the cached) decision for the principal from the
// snapshot in force.
func (s *Store) Decide(ctx context.Context, p profiles.Principal) (*Decision, error) {
	return s.cur.Load().Issuer.Decide(ctx, p)
}

// Reload reloads the policy and the catalog. Each one that loads cleanly and
// differs from the one in force replaces it; each one that is broken keeps the
// last good revision in force. It returns (and logs) the diagnostics, and
// records the outcome for [Store.LastError] and [Store.LastReload]. Concurrent
// calls are serialised.
func (s *Store) Reload() profiles.Diagnostics {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	p, pd := LoadPolicy(s.dir)
	c, cd := LoadCatalog(s.dir)
	ds := append(pd, cd...)
	ds.Sort()
	if p == nil || p.Revision() == old.Policy.Revision() {
		p = old.Policy
	}
	if c == nil || c.Revision() == old.Catalog.Revision() {
		c = old.Catalog
	}
	if p != old.Policy || c != old.Catalog {
		s.cur.Store(&Snapshot{Policy: p, Catalog: c, Issuer: NewIssuer(p, c)})
		s.Logger.Info("guardrails reloaded", "policy", short(p.Revision()), "catalog", short(c.Revision()))
	}
	s.statusMu.Lock()
	s.lastReload = time.Now()
	if len(ds) > 0 {
		s.lastErr = ds
	} else {
		s.lastErr = nil
	}
	s.statusMu.Unlock()
	if len(ds) > 0 {
		s.failed.Add(1)
		for _, d := range ds {
			s.Logger.Error("guardrails reload failed; last good revision stays in force",
				"location", d.Location(), "code", d.Code, "message", d.Message)
		}
		return ds
	}
	s.ok.Add(1)
	return nil
}

// LastError returns the diagnostics of the last reload ([profiles.Diagnostics]),
// or nil when it succeeded.
func (s *Store) LastError() error {
	s.statusMu.RLock()
	defer s.statusMu.RUnlock()
	return s.lastErr
}

// LastReload returns when the last load or reload finished.
func (s *Store) LastReload() time.Time {
	s.statusMu.RLock()
	defer s.statusMu.RUnlock()
	return s.lastReload
}

// ReloadCounts returns how many loads succeeded and failed, for a metric.
func (s *Store) ReloadCounts() (ok, failed uint64) { return s.ok.Load(), s.failed.Load() }

// WatchDebounce is how long [Store.Watch] waits after the last file event
// before reloading.
const WatchDebounce = 200 * time.Millisecond

// Watch reloads the store when DIR/catalog.json or a .rego file in
// DIR/guardrails changes, until ctx is done. Events are debounced by
// [WatchDebounce]. It watches the directories rather than the files, so editors
// that save by writing a temporary file and renaming it over the original are
// seen, and DIR/guardrails is picked up when it is created later.
func (s *Store) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("guardrails: watching %s: %w", s.dir, err)
	}
	defer w.Close()
	if err := w.Add(s.dir); err != nil {
		return fmt.Errorf("guardrails: watching %s: %w", s.dir, err)
	}
	gdir := filepath.Join(s.dir, GuardrailsDir)
	_ = w.Add(gdir) // may not exist yet
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			name := filepath.Clean(ev.Name)
			if name == gdir && ev.Has(fsnotify.Create) {
				_ = w.Add(gdir)
			}
			if relevant(s.dir, name) {
				timer.Reset(WatchDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				s.Logger.Warn("guardrails watcher", "error", err)
			}
			timer.Reset(WatchDebounce)
		case <-timer.C:
			s.Reload()
		}
	}
}

func relevant(dir, name string) bool {
	switch filepath.Dir(name) {
	case filepath.Clean(dir):
		base := filepath.Base(name)
		return base == CatalogFile || base == GuardrailsDir
	case filepath.Join(dir, GuardrailsDir):
		return strings.HasSuffix(name, ".rego")
	}
	return false
}
