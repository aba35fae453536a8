// Package snapshot loads one whole configuration directory — sluice.toml, the
// profile ladder, the model catalog, the guardrails and a connector per
// upstream — into an immutable [Snapshot]. The gateway serves from one
// snapshot at a time and swaps in a new one only when it loaded cleanly, so a
// broken reload keeps the last good configuration serving and a request never
// sees half a change. It is the façade every tool compiles through: a
// [Memo] plans and compiles one request (the gateway, `sluice explain`, diff
// and the compliance pages all use it), and [Snapshot.Explain] renders the
// result.
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/schemas"
)

// Snapshot is one loaded configuration. Treat it as read-only.
type Snapshot struct {
	// Config is sluice.toml with its profiles.
	Config *profiles.Config
	// Catalog is the model catalog, or nil when the directory has none (then
	// no guardrail may exist either).
	Catalog *guardrails.Catalog
	// Policy is the compiled guardrails.
	Policy *guardrails.Policy
	// Issuer issues (and caches) guardrail decisions for this revision.
	Issuer *guardrails.Issuer
	// Upstreams holds every configured upstream by name.
	Upstreams map[string]*Upstream
	// Revision identifies the snapshot's content (config, catalog and policy).
	Revision string
	// LoadedAt is when the snapshot was built.
	LoadedAt time.Time

	// fileRevision is the revision of the files alone, before WithRoutes.
	fileRevision string
	routeRevs    map[string]string             // by lower-cased alias: the route's own revision
	layers       map[string][]profiles.Layer   // by key id: the ladder above the request
	callerKeys   map[string]map[string]string  // by key id, then upstream: the caller's own key
	agreements   map[string]compiler.Agreement // by direct provider: the terms declared for its upstream
}

// CheckRequestRung reports a request rung (a body's routing object) that
// loosens a data restriction the key's ladder sets: located by pointer
// under /routing.
func (s *Snapshot) CheckRequestRung(keyID string, routing *profiles.Profile) profiles.Diagnostics {
	layers := s.layers[keyID]
	return profiles.CheckTightening(append(layers[:len(layers):len(layers)], profiles.Layer{Rung: "request", File: profiles.RequestFile, Profile: routing}))
}

// CallerKey returns the caller's own key for an upstream, read from the
// environment at load, or "" when the key uses the platform key there.
// Never logged.
func (s *Snapshot) CallerKey(keyID, upstream string) string { return s.callerKeys[keyID][upstream] }

// Upstream is a configured upstream with its connector.
type Upstream struct {
	Config    *profiles.Upstream
	Connector connectors.Connector
	// Check is what the expressibility check knows of it.
	Check compiler.Upstream
	// APIKey is the platform key read from Config.APIKeyEnv at load ("" when
	// unset). Never logged.
	APIKey string
}

// Options tune [LoadWith].
type Options struct {
	// Listing, when set, is a marketplace listing (the gateway's last good
	// [catalog] refresh) merged over catalog.json by [listing.Apply]'s
	// rules: the catalog served is the merge, and catalog.json need not
	// exist. Default nil: catalog.json alone.
	Listing *listing.Import
	// ListingFor, when Listing is nil, is asked for the listing to merge
	// once sluice.toml has loaded cleanly (the gateway's start reads the one
	// it kept in [store] data_dir for [catalog] source), so that the
	// directory is read once. It may return nil: catalog.json alone.
	// Default nil.
	ListingFor func(*profiles.Config) *listing.Import
}

// Load reads and validates a configuration directory. Every problem comes
// back as a located diagnostic; the snapshot is nil whenever there is one.
func Load(dir string) (*Snapshot, profiles.Diagnostics) { return LoadWith(dir, Options{}) }

// LoadWith is [Load] with options.
func LoadWith(dir string, opts Options) (*Snapshot, profiles.Diagnostics) {
	var diags profiles.Diagnostics
	// LoadAll goes on past sluice.toml's schema violations, so that one
	// load reports every mistake (sluice check); cfg is best-effort then,
	// used below only to find more and never served.
	cfg, d := profiles.LoadAll(dir)
	diags = append(diags, d...)
	absDir, _ := filepath.Abs(dir)
	if opts.Listing == nil && opts.ListingFor != nil && len(d) == 0 {
		opts.Listing = opts.ListingFor(cfg)
	}

	var cat *guardrails.Catalog
	_, statErr := os.Stat(filepath.Join(absDir, guardrails.CatalogFile))
	if statErr == nil {
		cat, d = guardrails.LoadCatalog(absDir)
		diags = append(diags, d...)
	}
	if opts.Listing != nil && len(d) == 0 {
		cat, d = mergeListing(absDir, opts.Listing)
		diags = append(diags, d...)
		if cat != nil {
			statErr = nil
		}
	}
	policy, d := guardrails.LoadPolicy(absDir)
	diags = append(diags, d...)
	if policy != nil && statErr != nil && len(policy.Files()) > 0 {
		diags = append(diags, profiles.Diagnostic{File: guardrails.CatalogFile, Code: "missing_catalog",
			Message: "guardrails exist but there is no model catalog to expand their patterns against"})
	}
	if len(diags) > 0 {
		if cfg != nil && cat != nil {
			diags = append(diags, (&Snapshot{Config: cfg, Catalog: cat}).checkRoutes()...)
		}
		diags.Sort()
		return nil, diags
	}
	s := &Snapshot{Config: cfg, Catalog: cat, Policy: policy, Upstreams: map[string]*Upstream{}, LoadedAt: time.Now(), layers: map[string][]profiles.Layer{}}
	if cat != nil {
		s.Issuer = guardrails.NewIssuer(policy, cat)
	}
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		c, err := connectors.NewFor(u, absDir)
		if err != nil {
			diags = append(diags, profiles.Diagnostic{File: profiles.ConfigFile, Pointer: schemas.Pointer("upstreams", fmt.Sprint(i)), Code: profiles.CodeUpstreamConfig, Message: fmt.Sprintf("upstream %q: %v", u.Name, err)})
			continue
		}
		up := &Upstream{Config: u, Connector: c, Check: compiler.Upstream{Name: u.Name, Connector: c.Kind(), Capabilities: c.Capabilities(), ContentFilters: u.ContentFilters,
			Agreement: compiler.Agreement{ZeroRetention: u.ZeroRetention, NoTraining: u.NoTraining}, Region: u.Region}}
		geo := profiles.Geography(u.Region)
		if dp := c.Capabilities().DirectProvider; dp != "" && (u.ZeroRetention || u.NoTraining || geo != "") {
			if s.agreements == nil {
				s.agreements = map[string]compiler.Agreement{}
			}
			a := s.agreements[dp]
			a.ZeroRetention = a.ZeroRetention || u.ZeroRetention
			a.NoTraining = a.NoTraining || u.NoTraining
			if geo != "" && geo != profiles.GeographyAny && !slices.Contains(a.Geographies, geo) {
				a.Geographies = append(a.Geographies, geo)
			}
			s.agreements[dp] = a
		}
		if u.APIKeyEnv != "" {
			up.APIKey = os.Getenv(u.APIKeyEnv)
		}
		s.Upstreams[u.Name] = up
	}
	diags = append(diags, s.checkRoutes()...)
	diags = append(diags, s.checkDecisions()...)
	if len(diags) > 0 {
		diags.Sort()
		return nil, diags
	}
	s.callerKeys = map[string]map[string]string{}
	for i := range cfg.Keys {
		k := &cfg.Keys[i]
		s.layers[k.ID] = cfg.Profiles.Layers(k.Principal())
		for _, u := range cfg.Upstreams {
			if env := k.CallerKeyEnv(u.Name); env != "" {
				if v := os.Getenv(env); v != "" {
					if s.callerKeys[k.ID] == nil {
						s.callerKeys[k.ID] = map[string]string{}
					}
					s.callerKeys[k.ID][u.Name] = v
				}
			}
		}
	}
	s.Revision = s.revision()
	s.fileRevision = s.Revision
	s.routeRevs = routeRevisions(cfg.Routes)
	return s, nil
}

// RouteRevision identifies a route's content (its targets, strategy,
// limits and tail), "" when no route has the alias. It is the same on every
// replica serving the same route, and changes with any edit of it: the
// response cache keys on it, so an edit invalidates the route's answers
// everywhere and leaves other routes' alone.
func (s *Snapshot) RouteRevision(alias string) string { return s.routeRevs[strings.ToLower(alias)] }

// routeRevisions hashes each route's JSON.
func routeRevisions(routes []profiles.Route) map[string]string {
	out := make(map[string]string, len(routes))
	for _, r := range routes {
		b, _ := json.Marshal(r)
		sum := sha256.Sum256(b)
		out[strings.ToLower(r.Model)] = hex.EncodeToString(sum[:8])
	}
	return out
}

// mergeListing returns the catalog served: catalog.json (when there is
// one) with a listing merged over it. Diagnostics name the file as
// "catalog.json+<source>".
func mergeListing(dir string, imp *listing.Import) (*guardrails.Catalog, profiles.Diagnostics) {
	name := guardrails.CatalogFile + "+" + imp.Source
	base, err := listing.ReadDocument(filepath.Join(dir, guardrails.CatalogFile))
	if err != nil {
		return nil, profiles.Diagnostics{{File: guardrails.CatalogFile, Code: profiles.CodeJSONSyntax, Message: err.Error()}}
	}
	a, diags := listing.Apply(name, base, imp, listing.MergeOptions{})
	if len(diags) > 0 {
		return nil, diags
	}
	return a.Catalog, nil
}

// checkRoutes reports what needs the catalog: an alias that shadows a
// catalog model, a target whose model's class a route forbids (the tail of
// a pool included).
func (s *Snapshot) checkRoutes() profiles.Diagnostics {
	var diags profiles.Diagnostics
	for _, p := range routeClassProblems(s.Catalog, s.Config.Routes) {
		diags = append(diags, profiles.Diagnostic{File: profiles.ConfigFile, Pointer: schemas.Pointer(p.Tokens...), Code: p.Code, Message: p.Message})
	}
	return diags
}

// routeClassProblems finds route aliases that are catalog slugs, and
// targets whose model the catalog gives a class the route forbids: the
// model's class or an endpoint's own (the tail of a pool included). A
// target's own class is checked by [profiles.CheckRoutes].
func routeClassProblems(cat *guardrails.Catalog, routes []profiles.Route) []profiles.RouteProblem {
	var out []profiles.RouteProblem
	if cat == nil {
		return nil
	}
	for i := range routes {
		r := &routes[i]
		// An alias that is a catalog slug would hide the model behind the
		// route for every caller, and its guardrail with it.
		if _, ok := cat.Model(r.Model); ok {
			out = append(out, profiles.RouteProblem{Tokens: []string{"routes", fmt.Sprint(i), "model"}, Code: profiles.CodeAliasShadowsModel,
				Message: fmt.Sprintf("route alias %q is the slug of a catalog model; a route needs a name of its own", r.Model)})
		}
		if len(r.ForbidClasses) == 0 {
			continue
		}
		check := func(t profiles.Target, tokens ...string) {
			if c, fc, ok := catalogForbids(cat, r, t.Model); ok {
				out = append(out, profiles.RouteProblem{Tokens: tokens, Code: profiles.CodeForbiddenClass,
					Message: fmt.Sprintf("route %q forbids class %q, and the catalog gives model %q class %q", r.Model, fc, t.Model, c)})
			}
		}
		for j, t := range r.Targets {
			check(t, "routes", fmt.Sprint(i), "targets", fmt.Sprint(j))
		}
		if r.Then != nil {
			for j, t := range r.Then.Targets {
				check(t, "routes", fmt.Sprint(i), "then", "targets", fmt.Sprint(j))
			}
		}
	}
	return out
}

// catalogForbids returns a class the catalog gives model (the model's own,
// else an endpoint's override) that the route forbids, with the route's
// forbid_classes entry naming it.
func catalogForbids(cat *guardrails.Catalog, r *profiles.Route, model string) (class, forbid string, ok bool) {
	m, found := cat.Model(model)
	if !found {
		return "", "", false
	}
	if fc, ok := r.Forbids(m.Class); ok {
		return m.Class, fc, true
	}
	for _, e := range m.Endpoints {
		if fc, ok := r.Forbids(e.Class); ok {
			return e.Class, fc, true
		}
	}
	return "", "", false
}

// withCatalogClasses returns the route with each target whose model the
// catalog gives a forbidden class carrying that class, so that planning
// removes it as it removes a target of a forbidden class of its own. The
// route is returned as it is when nothing changes (always, for a snapshot
// that loaded: loading refuses such a target).
func (s *Snapshot) withCatalogClasses(r *profiles.Route) *profiles.Route {
	if s.Catalog == nil || len(r.ForbidClasses) == 0 {
		return r
	}
	var out *profiles.Route
	mark := func(ts []profiles.Target, set func([]profiles.Target)) {
		var cp []profiles.Target
		for j, t := range ts {
			if _, own := r.Forbids(t.Class); own {
				continue
			}
			c, _, ok := catalogForbids(s.Catalog, r, t.Model)
			if !ok {
				continue
			}
			if cp == nil {
				cp = slices.Clone(ts)
			}
			cp[j].Class = c
		}
		if cp == nil {
			return
		}
		if out == nil {
			u := *r
			if r.Then != nil {
				tail := *r.Then
				u.Then = &tail
			}
			out = &u
		}
		set(cp)
	}
	mark(r.Targets, func(ts []profiles.Target) { out.Targets = ts })
	if r.Then != nil {
		mark(r.Then.Targets, func(ts []profiles.Target) { out.Then.Targets = ts })
	}
	if out == nil {
		return r
	}
	return out
}

// WithRoutes returns a copy of the snapshot serving the given routes instead
// of the file's (the state store is their source of truth once seeded). The
// routes get their defaults and are validated exactly as sluice.toml's are;
// on any problem the snapshot is nil.
func (s *Snapshot) WithRoutes(routes []profiles.Route) (*Snapshot, []profiles.RouteProblem) {
	for i := range routes {
		routes[i].ApplyDefaults()
	}
	probs := profiles.CheckRoutes(routes, func(name string) bool { return s.Upstreams[name] != nil })
	probs = append(probs, routeClassProblems(s.Catalog, routes)...)
	if len(probs) > 0 {
		return nil, probs
	}
	cfg := *s.Config
	cfg.Routes = routes
	cp := *s
	cp.Config = &cfg
	h := sha256.New()
	h.Write([]byte(s.fileRevision))
	b, _ := json.Marshal(routes)
	h.Write(b)
	cp.Revision = hex.EncodeToString(h.Sum(nil))[:16]
	cp.routeRevs = routeRevisions(routes)
	cp.LoadedAt = time.Now()
	return &cp, nil
}

// revision hashes what the snapshot was built from: the configuration's
// files (as profiles.Load read them), the catalog and the policy.
func (s *Snapshot) revision() string {
	h := sha256.New()
	h.Write([]byte(s.Config.Revision()))
	if s.Catalog != nil {
		h.Write([]byte(s.Catalog.Revision()))
	}
	if s.Policy != nil {
		h.Write([]byte(s.Policy.Revision()))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Layers returns the key's ladder (org, team, project, key), top first.
func (s *Snapshot) Layers(keyID string) []profiles.Layer { return s.layers[keyID] }
