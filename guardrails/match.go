package guardrails

import "strings"

// MatchPattern reports whether the whole slug matches pattern. Matching is
// case-insensitive. In a pattern, "*" matches any run of characters within one
// "/"-separated segment (possibly none) and "**" (two or more stars) matches any
// run of characters across segments; every other character, "?" and "[" included,
// matches itself.
//
// MatchPattern is the reference matcher: decisions expand patterns with a
// compiled form of it, and tests check the two agree.
func MatchPattern(pattern, slug string) bool {
	return matchRef(strings.ToLower(pattern), strings.ToLower(slug))
}

func matchRef(p, s string) bool {
	for len(p) > 0 {
		if p[0] == '*' {
			n := 0
			for n < len(p) && p[n] == '*' {
				n++
			}
			double := n > 1
			p = p[n:]
			for i := 0; i <= len(s); i++ {
				if matchRef(p, s[i:]) {
					return true
				}
				if !double && i < len(s) && s[i] == '/' {
					return false
				}
			}
			return false
		}
		if len(s) == 0 || p[0] != s[0] {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// tokKind is the kind of one element of a compiled pattern.
type tokKind uint8

const (
	tokLit tokKind = iota
	tokStar
	tokDoubleStar
)

type token struct {
	kind tokKind
	lit  string
}

// matcher is a pattern compiled once per decision: a literal (no wildcard) is a
// string comparison, anything else walks a token list.
type matcher struct {
	pattern string // lower-cased source
	literal bool
	hasSep  bool // the pattern contains a literal "/"
	toks    []token
}

func compilePattern(pattern string) matcher {
	p := strings.ToLower(pattern)
	m := matcher{pattern: p, hasSep: strings.Contains(p, "/")}
	if !strings.Contains(p, "*") {
		m.literal = true
		return m
	}
	for len(p) > 0 {
		if p[0] == '*' {
			n := 0
			for n < len(p) && p[n] == '*' {
				n++
			}
			k := tokStar
			if n > 1 {
				k = tokDoubleStar
			}
			m.toks = append(m.toks, token{kind: k})
			p = p[n:]
			continue
		}
		i := strings.IndexByte(p, '*')
		if i < 0 {
			i = len(p)
		}
		m.toks = append(m.toks, token{kind: tokLit, lit: p[:i]})
		p = p[i:]
	}
	return m
}

// match tests an already lower-cased slug.
func (m *matcher) match(s string) bool {
	if m.literal {
		return m.pattern == s
	}
	return matchToks(m.toks, s)
}

func matchToks(toks []token, s string) bool {
	for len(toks) > 0 {
		t := toks[0]
		switch t.kind {
		case tokLit:
			if !strings.HasPrefix(s, t.lit) {
				return false
			}
			s = s[len(t.lit):]
			toks = toks[1:]
		default:
			rest := toks[1:]
			if len(rest) == 0 {
				return t.kind == tokDoubleStar || strings.IndexByte(s, '/') < 0
			}
			limit := len(s)
			if t.kind == tokStar {
				if i := strings.IndexByte(s, '/'); i >= 0 {
					limit = i
				}
			}
			for i := 0; i <= limit; i++ {
				if matchToks(rest, s[i:]) {
					return true
				}
			}
			return false
		}
	}
	return len(s) == 0
}
