package snapshot

import (
	"context"
	"sync"

	"github.com/sluicegw/sluice/profiles"
)

// principals lists every principal the configuration names, once each:
// every key's ladder (its org alone, org and team, org, team and project,
// and the key itself) and every [[teams]] entry's team alone, in its org or,
// for an entry without one, in every org a key names. These are the
// principals the guardrails are checked for at load.
func principals(cfg *profiles.Config) []profiles.Principal {
	seen := map[profiles.Principal]bool{}
	var out []profiles.Principal
	add := func(p profiles.Principal) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var orgs []string // in the order keys name them
	for i := range cfg.Keys {
		k := &cfg.Keys[i]
		if !seen[profiles.Principal{Org: k.Org}] {
			orgs = append(orgs, k.Org)
		}
		add(profiles.Principal{Org: k.Org})
		add(profiles.Principal{Org: k.Org, Team: k.Team})
		add(profiles.Principal{Org: k.Org, Team: k.Team, Project: k.Project})
		add(k.Principal())
	}
	for _, t := range cfg.Teams {
		if t.Org != "" {
			add(profiles.Principal{Org: t.Org})
			add(profiles.Principal{Org: t.Org, Team: t.Name})
			continue
		}
		for _, org := range orgs {
			add(profiles.Principal{Org: org, Team: t.Name})
		}
	}
	return out
}

// checked remembers which principals passed the check under the policy
// revision checked last. The outcome depends on the policy's sources and
// the principal alone (not on the catalog), so a reload or a catalog
// refresh that leaves the guardrails as they were checks only the
// principals that are new; start-up and `sluice check` check them all.
var checked struct {
	sync.Mutex
	revision string
	ok       map[profiles.Principal]struct{}
}

// checkDecisions evaluates the guardrails for every principal the
// configuration names (see [guardrails.Policy.CheckPrincipals]), except
// those that passed under the same policy revision before.
func (s *Snapshot) checkDecisions() profiles.Diagnostics {
	if s.Policy == nil || len(s.Policy.Files()) == 0 {
		return nil
	}
	rev := s.Policy.Revision()
	all := principals(s.Config)
	todo := all
	checked.Lock()
	if checked.revision == rev {
		todo = make([]profiles.Principal, 0, len(all))
		for _, p := range all {
			if _, ok := checked.ok[p]; !ok {
				todo = append(todo, p)
			}
		}
	}
	checked.Unlock()
	diags := s.Policy.CheckPrincipals(context.Background(), todo)
	if len(diags) > 0 {
		return diags
	}
	checked.Lock()
	defer checked.Unlock()
	if checked.revision != rev {
		checked.revision, checked.ok = rev, make(map[profiles.Principal]struct{}, len(todo))
	}
	for _, p := range todo {
		checked.ok[p] = struct{}{}
	}
	return nil
}
