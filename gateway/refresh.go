package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

// ListingPath is where the gateway keeps the last good listing of a
// [catalog] source: data_dir/listing.<source>.json. It is merged over
// catalog.json at every load, so a restart serves the refreshed catalog
// before its first refresh; catalog.json itself is never written.
func ListingPath(dataDir, source string) string {
	return filepath.Join(dataDir, "listing."+source+".json")
}

// refreshRetry bounds the wait after a failed refresh: a marketplace that
// is down is tried again sooner than the refresh interval.
const refreshRetry = 5 * time.Minute

// refreshPoll is the longest the refresh loop sleeps, so that a reload
// that turns the refresh on or changes its interval is seen.
const refreshPoll = 30 * time.Second

// refreshStatus is what /readyz shows of the catalog refresh.
type refreshStatus struct {
	at     time.Time // the last attempt
	ok     bool
	errors []string
	// codes are the errors' stable codes, all /readyz shows without the
	// admin token.
	codes []string
}

// loadSnapshot loads the configuration directory with the listing kept in
// memory merged over catalog.json, when [catalog] source names it; a
// configuration whose source is off or another loads without it.
func (s *Server) loadSnapshot() (*snapshot.Snapshot, profiles.Diagnostics) {
	imp := s.listing.Load()
	if imp == nil {
		return snapshot.Load(s.opts.ConfigDir)
	}
	snap, diags := snapshot.LoadWith(s.opts.ConfigDir, snapshot.Options{Listing: imp})
	if len(diags) == 0 && snap.Config.Catalog.Source != imp.Source {
		return snapshot.Load(s.opts.ConfigDir)
	}
	return snap, diags
}

// loadAtStart loads the configuration directory once, merging the last good
// listing kept in data_dir when [catalog] source is set. A listing that
// cannot be read is logged and left out; one that does not merge is logged
// and the directory is loaded again without it (the next refresh replaces
// it) — the only case that reads the directory twice.
func (s *Server) loadAtStart() (*snapshot.Snapshot, profiles.Diagnostics) {
	var stored *listing.Import
	var path string
	snap, diags := snapshot.LoadWith(s.opts.ConfigDir, snapshot.Options{ListingFor: func(cfg *profiles.Config) *listing.Import {
		if cfg.Catalog.Source == "" {
			return nil
		}
		path = ListingPath(cfg.Store.DataDir, cfg.Catalog.Source)
		imp, err := listing.LoadImport(path)
		switch {
		case err != nil:
			s.log.Warn("the stored catalog listing is unreadable; serving catalog.json until the first refresh", "path", path, "err", err.Error())
			return nil
		case imp == nil || imp.Source != cfg.Catalog.Source:
			return nil
		}
		stored = imp
		return imp
	}})
	if len(diags) > 0 && stored != nil {
		plain, plainDiags := snapshot.Load(s.opts.ConfigDir)
		if len(plainDiags) > 0 {
			return nil, plainDiags // the directory itself is broken
		}
		s.log.Warn("the stored catalog listing does not merge; serving catalog.json until the first refresh", "path", path, "first", diags[0].String())
		return plain, nil
	}
	if len(diags) > 0 {
		return nil, diags
	}
	if stored != nil {
		s.listing.Store(stored)
		s.metrics.CatalogListingTime.Set(float64(stored.FetchedAt.Unix()))
		s.log.Info("catalog: the stored listing is merged over catalog.json", "source", stored.Source, "fetched_at", stored.FetchedAt, "models", snap.Catalog.Len())
	}
	return snap, nil
}

// RefreshCatalog fetches the [catalog] source's listing once, through the
// upstream [catalog] names (its base_url and platform key), merges it over
// catalog.json and swaps the result in, atomically, through the same path
// as a reload ([Server.swapIn]): the routes, the log level and the cache
// and pin settings are taken from the directory as a reload takes them,
// and guardrail decisions are issued anew for the new catalog revision. The listing is kept in memory and in data_dir. A failed fetch,
// a listing that fails validation or a merge the catalog refuses keeps the
// last good catalog serving; the failure is returned, logged, counted and
// shown in /readyz.
func (s *Server) RefreshCatalog(ctx context.Context) error {
	cur := s.snap.Load()
	cc := cur.Config.Catalog
	if cc.Source == "" {
		return errors.New("catalog refresh: [catalog] source is not set")
	}
	base, key, transport := profiles.DefaultBaseURLs[cc.Source], "", s.client.Transport
	if up := cur.Upstreams[cc.Upstream]; up != nil {
		base, key, transport = up.Config.BaseURL, up.APIKey, s.clientFor(up).Transport
		if u, ok := s.opts.UpstreamURLs[cc.Upstream]; ok {
			base = u
		}
	}
	client := &listing.Client{HTTP: &http.Client{Transport: transport, Timeout: listing.DefaultTimeout}, APIKey: key}
	start := time.Now()
	imp, err := s.fleetListing(ctx, cc, func() (*listing.Import, error) {
		return (&listing.OpenRouter{BaseURL: base, Client: client, Only: cc.Only}).Import(ctx)
	})
	if err != nil {
		var es listing.Errors
		var le *listing.Error
		lines, codes := []string{err.Error()}, []string{codeCatalogRefreshFailed}
		switch {
		case errors.As(err, &es):
			lines, codes = lines[:0], codes[:0]
			for _, e := range es {
				lines, codes = append(lines, e.Error()), append(codes, e.Code)
			}
		case errors.As(err, &le):
			codes = []string{le.Code}
		}
		return s.refreshFailed(lines, codes, err)
	}
	s.reloadMu.Lock()
	snap, old, diags := s.swapIn(func() (*snapshot.Snapshot, profiles.Diagnostics) {
		return snapshot.LoadWith(s.opts.ConfigDir, snapshot.Options{Listing: imp})
	})
	if len(diags) > 0 {
		s.reloadMu.Unlock()
		lines, codes := make([]string, len(diags)), make([]string, len(diags))
		for i, d := range diags {
			lines[i], codes[i] = d.String(), d.Code
		}
		return s.refreshFailed(lines, codes, diags)
	}
	s.listing.Store(imp)
	s.refresh.Store(&refreshStatus{at: time.Now(), ok: true})
	s.reloadMu.Unlock()
	// After the swap: what changed (for the log), and the listing kept
	// for a restart (its write, an fsync, delays neither the swap nor a
	// reload waiting for the lock).
	var sum *listing.Summary
	if old.Catalog != nil {
		_, sum = listing.Merge(old.Catalog.Document(), imp, listing.MergeOptions{PriceThreshold: 0.05})
	}
	path := ListingPath(snap.Config.Store.DataDir, imp.Source)
	if err := listing.SaveImport(path, imp); err != nil {
		s.log.Warn("catalog refreshed, but the listing could not be kept for a restart", "path", path, "err", err.Error())
	}
	s.metrics.CatalogRefreshes.WithLabelValues("ok").Inc()
	s.metrics.CatalogRefreshOK.Set(1)
	s.metrics.CatalogListingTime.Set(float64(imp.FetchedAt.Unix()))
	attrs := []any{"source", imp.Source, "revision", snap.Revision, "previous", old.Revision,
		"models", snap.Catalog.Len(), "took", time.Since(start).Round(time.Millisecond).String()}
	if sum != nil {
		attrs = append(attrs, "models_added", len(sum.ModelsAdded), "models_removed", len(sum.ModelsRemoved),
			"endpoints_added", len(sum.EndpointsAdded), "endpoints_removed", len(sum.EndpointsRemoved), "price_changes", len(sum.PriceChanges))
	}
	s.log.Info("catalog refreshed", attrs...)
	return nil
}

// listingWait bounds how long a replica waits for the listing another
// replica of the fleet is fetching before it fetches it itself.
const listingWait = 10 * time.Second

// fleetListing returns the listing to refresh with. Without a fleet it
// fetches it. With [shared] redis_url the fleet fetches it once a refresh
// interval: a listing another replica fetched less than an interval ago is
// taken from Redis; otherwise the replica that takes the fleet's lock
// fetches it and stores it for the others, which wait for it (at most
// listingWait, then fetch it themselves). Redis down: each fetches its own.
func (s *Server) fleetListing(ctx context.Context, cc profiles.Catalog, fetch func() (*listing.Import, error)) (*listing.Import, error) {
	if s.fleet == nil {
		return fetch()
	}
	name := "catalog:" + cc.Source
	shared := func() *listing.Import {
		b, ok := s.fleet.Blob(ctx, name)
		if !ok {
			return nil
		}
		var imp listing.Import
		if json.Unmarshal(b, &imp) != nil || imp.Source != cc.Source || time.Since(imp.FetchedAt) >= cc.Refresh.Duration {
			return nil
		}
		return &imp
	}
	if imp := shared(); imp != nil {
		return imp, nil
	}
	if !s.fleet.TryLock(ctx, name, listingWait) {
		for end := time.Now().Add(listingWait); time.Now().Before(end); {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if imp := shared(); imp != nil {
				return imp, nil
			}
		}
	}
	defer s.fleet.Unlock(context.Background(), name)
	imp, err := fetch()
	if err != nil {
		return nil, err
	}
	if b, err := json.Marshal(imp); err == nil {
		s.fleet.PutBlob(ctx, name, b, cc.Refresh.Duration)
	}
	return imp, nil
}

// refreshFailed records a failed refresh: the last good catalog keeps
// serving.
func (s *Server) refreshFailed(lines, codes []string, err error) error {
	s.refresh.Store(&refreshStatus{at: time.Now(), errors: lines, codes: codes})
	s.metrics.CatalogRefreshes.WithLabelValues("failed").Inc()
	s.metrics.CatalogRefreshOK.Set(0)
	s.log.Error("catalog refresh failed; the last good catalog keeps serving",
		"revision", s.snap.Load().Revision, "errors", len(lines), "first", lines[0])
	return fmt.Errorf("catalog refresh: %w", err)
}

// RefreshCatalogLoop refreshes the catalog while ctx lasts, whenever
// [catalog] source is set: every [catalog] refresh after the last good
// listing was fetched (at once when there is none, or it is older), and
// no later than 5 minutes after a failure. A reload that turns the
// refresh on, off or changes its interval is followed within 30 seconds.
func (s *Server) RefreshCatalogLoop(ctx context.Context) {
	for {
		wait := refreshPoll
		if cc := s.snap.Load().Config.Catalog; cc.Source != "" {
			due := s.refreshDue(cc.Refresh.Duration)
			if due <= 0 {
				_ = s.RefreshCatalog(ctx)
				continue
			}
			wait = min(due, refreshPoll)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refreshDue returns how long until the next refresh is due: the refresh
// interval after the serving listing was fetched (now, with none), or,
// after a failed attempt (always the latest event, since a good one
// clears it), the shorter of the interval and 5 minutes after it.
func (s *Server) refreshDue(every time.Duration) time.Duration {
	if st := s.refresh.Load(); st != nil && !st.ok {
		return time.Until(st.at.Add(min(every, refreshRetry)))
	}
	if imp := s.listing.Load(); imp != nil {
		return time.Until(imp.FetchedAt.Add(every))
	}
	return 0
}

// catalogState is the catalog part of /readyz.
func (s *Server) catalogState(snap *snapshot.Snapshot) CatalogState {
	st := CatalogState{}
	if snap.Catalog != nil {
		st.Revision, st.Models = snap.Catalog.Revision(), snap.Catalog.Len()
	}
	if cc := snap.Config.Catalog; cc.Source != "" {
		st.Source, st.Refresh = cc.Source, cc.Refresh.Duration.String()
	}
	if imp := s.listing.Load(); imp != nil {
		st.ListingFetchedAt = imp.FetchedAt
	}
	if r := s.refresh.Load(); r != nil {
		st.LastRefreshAt = r.at
		st.LastRefreshFailed = !r.ok
		st.Errors, st.codes = r.errors, r.codes
	}
	return st
}
