package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Warning codes [Snapshot.Lint] reports. A warning is a setting that loads
// but names nothing the catalog knows, so it can never take effect: most
// often a typo.
const (
	// CodeUnknownChainModel: a profile's fallbacks entry is not a catalog
	// model (nor one of its aliases).
	CodeUnknownChainModel = "unknown_chain_model"
	// CodeUnknownProvider: a profile's providers.preferred, allowed or denied
	// entry is no provider (or provider/tag endpoint) of the catalog.
	CodeUnknownProvider = "unknown_provider"
	// CodePatternMatchesNothing: a guardrail's model or provider pattern
	// matches no catalog model or provider.
	CodePatternMatchesNothing = "pattern_matches_nothing"
)

// Lint finds settings that load but match nothing in the catalog: fallback
// entries, provider names in profiles, and guardrail patterns (as decided for
// every configured key's principal); and the catalog's own warnings
// ([guardrails.Catalog.Warnings]: a realtime model without audio prices). Each comes back as a located diagnostic
// with a did-you-mean where a close name exists. Without a catalog there is
// nothing to compare against and Lint returns nil.
func (s *Snapshot) Lint(ctx context.Context) profiles.Diagnostics {
	if s.Catalog == nil {
		return nil
	}
	var diags profiles.Diagnostics
	cat := s.Catalog
	var slugs, authors []string
	seenAuthor := map[string]bool{}
	for _, m := range cat.Models() {
		slugs = append(slugs, m.Slug)
		slugs = append(slugs, m.Aliases...)
		if a, _, ok := strings.Cut(m.Slug, "/"); ok && !seenAuthor[a] {
			seenAuthor[a] = true
			authors = append(authors, a)
		}
	}
	providers := cat.Providers()
	endpoints := map[string]bool{}
	for _, p := range providers {
		endpoints[p] = true
	}
	for _, m := range cat.Models() {
		for _, e := range m.Endpoints {
			endpoints[e.Slug()] = true
		}
	}
	for _, l := range s.Config.Profiles.All() {
		p := l.Profile
		if p.Fallbacks != nil {
			for i, m := range *p.Fallbacks {
				if _, ok := cat.Model(m); !ok {
					diags = append(diags, profiles.Diagnostic{File: l.File, Line: p.Line(fmt.Sprintf("/fallbacks/%d", i)), Code: CodeUnknownChainModel,
						Message: fmt.Sprintf("fallbacks entry %q is not in the model catalog, so the chain skips it%s", m, didYouMean(m, slugs))})
				}
			}
		}
		for _, list := range []struct {
			name string
			l    *[]string
		}{{"preferred", p.Providers.Preferred}, {"allowed", p.Providers.Allowed}, {"denied", p.Providers.Denied}} {
			if list.l == nil {
				continue
			}
			for i, pr := range *list.l {
				if !endpoints[pr] {
					diags = append(diags, profiles.Diagnostic{File: l.File, Line: p.Line(fmt.Sprintf("/providers/%s/%d", list.name, i)), Code: CodeUnknownProvider,
						Message: fmt.Sprintf("providers.%s entry %q is no provider of the catalog's models%s", list.name, pr, didYouMean(pr, providers))})
				}
			}
		}
	}
	if s.Issuer != nil && s.Policy != nil && len(s.Policy.Files()) > 0 {
		diags = append(diags, s.lintPatterns(ctx, slugs, authors, providers, endpoints)...)
	}
	diags = append(diags, cat.Warnings()...) // the catalog's own: a realtime model it cannot price
	diags.Sort()
	return diags
}

// lintPatterns decides the guardrails for every configured key's principal
// and reports each distinct pattern that matches nothing, at the line of the
// Rego file that spells it (searched as a string literal).
func (s *Snapshot) lintPatterns(ctx context.Context, slugs, authors, providers []string, endpoints map[string]bool) profiles.Diagnostics {
	type pat struct{ kind, pattern string }
	seen := map[pat]bool{}
	var found []pat
	for i := range s.Config.Keys {
		d, err := s.Issuer.Decide(ctx, s.Config.Keys[i].Principal())
		if err != nil {
			continue // an evaluation error is reported when the key is used
		}
		ps := d.Patterns()
		for _, set := range []struct {
			kind string
			l    []string
		}{{"model", ps.AllowModels}, {"model", ps.DenyModels}, {"provider", ps.AllowProviders}, {"provider", ps.DenyProviders}} {
			for _, p := range set.l {
				k := pat{set.kind, strings.ToLower(p)}
				if !seen[k] {
					seen[k] = true
					found = append(found, k)
				}
			}
		}
	}
	var endpointList []string
	for e := range endpoints {
		endpointList = append(endpointList, e)
	}
	sort.Strings(endpointList)
	var diags profiles.Diagnostics
	for _, p := range found {
		cands := slugs
		if p.kind == "provider" {
			cands = endpointList
		}
		matched := false
		for _, c := range cands {
			if guardrails.MatchPattern(p.pattern, c) {
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		hint := ""
		// A typo is most often in the first segment (the author or the
		// provider): suggest the pattern with the closest one.
		first, rest, _ := strings.Cut(p.pattern, "/")
		names := authors
		if p.kind == "provider" {
			names = providers
		}
		if m := closest(first, names); m != "" {
			sug := m
			if rest != "" || strings.Contains(p.pattern, "/") {
				sug += "/" + rest
			}
			hint = fmt.Sprintf(" (did you mean %q?)", sug)
		}
		file, line := s.locateLiteral(p.pattern)
		diags = append(diags, profiles.Diagnostic{File: file, Line: line, Code: CodePatternMatchesNothing,
			Message: fmt.Sprintf("guardrail %s pattern %q matches no %s in the catalog%s", p.kind, p.pattern, p.kind, hint)})
	}
	return diags
}

// locateLiteral finds the first guardrail file and line that spells s as a
// Rego string literal; the guardrails directory when none does (the pattern
// was built by a rule).
func (s *Snapshot) locateLiteral(lit string) (string, int) {
	quoted := `"` + lit + `"`
	for _, f := range s.Policy.Files() {
		b, err := os.ReadFile(filepath.Join(s.Config.Dir, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(strings.ToLower(line), quoted) {
				return f, i + 1
			}
		}
	}
	return "guardrails", 0
}

// didYouMean renders " (did you mean "x"?)" for the closest candidate, or "".
func didYouMean(s string, cands []string) string {
	if m := closest(s, cands); m != "" {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}

// closest returns the candidate nearest to s by edit distance, when it is
// near enough to be a typo (at most a third of s's length, and at most 3
// edits); "" otherwise.
func closest(s string, cands []string) string {
	best, bestD := "", len(s)/3+1
	if bestD > 4 {
		bestD = 4
	}
	for _, c := range cands {
		if c == s {
			return ""
		}
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
