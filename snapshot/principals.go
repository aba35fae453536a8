package snapshot

import (
	"context"

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

// checkDecisions evaluates the guardrails for every principal the
// configuration names (see [guardrails.Policy.CheckPrincipals]).
func (s *Snapshot) checkDecisions() profiles.Diagnostics {
	if s.Policy == nil {
		return nil
	}
	return s.Policy.CheckPrincipals(context.Background(), principals(s.Config))
}
