package profiles

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/sluicegw/sluice/schemas"
)

// MaxFallbacks is the longest fallback chain a profile may set, beyond the
// decided model.
const MaxFallbacks = 4

// Rank-by values a profile may set.
const (
	RankCost       = "cost"
	RankLatency    = "latency"
	RankThroughput = "throughput"
)

// Profile is one rung's routing preferences. A nil field is unset (inherited
// from the rung above); a non-nil empty list is a setting of its own:
// fallbacks = [] means "no chain" and allowed = [] means "no restriction".
// Every slug is lower-case.
type Profile struct {
	Fallbacks *[]string `toml:"fallbacks" json:"fallbacks,omitempty"`
	Providers struct {
		RankBy    *string   `toml:"rank_by" json:"rank_by,omitempty"`
		Preferred *[]string `toml:"preferred" json:"preferred,omitempty"`
		Allowed   *[]string `toml:"allowed" json:"allowed,omitempty"`
		Denied    *[]string `toml:"denied" json:"denied,omitempty"`
		// Quantizations admits only endpoints serving at one of these
		// precisions ("fp8", "bf16", ...; an endpoint of unknown precision
		// is never admitted). Default: unset (any precision); an empty list
		// is the same as unset.
		Quantizations *[]string `toml:"quantizations" json:"quantizations,omitempty"`
		// MaxPrice admits only endpoints priced at or under it. Default:
		// unset (no ceiling).
		MaxPrice *MaxPrice `toml:"max_price" json:"max_price,omitempty"`
	} `toml:"providers" json:"providers"`
	// Data is what the endpoints that serve may do with the traffic.
	Data struct {
		// ZeroRetention admits only endpoints that keep no prompt or
		// completion once they have answered. Default: unset (false).
		ZeroRetention *bool `toml:"zero_retention" json:"zero_retention,omitempty"`
		// NoTraining admits only endpoints that neither train on nor
		// collect prompts. Default: unset (false).
		NoTraining *bool `toml:"no_training" json:"no_training,omitempty"`
		// Regions admits only endpoints known to process in one of these
		// geographies ([Geographies]: "eu", "us", ...). Default: unset
		// (anywhere); an empty list is the same as unset.
		Regions *[]string `toml:"regions" json:"regions,omitempty"`
	} `toml:"data" json:"data"`

	// pos locates the profile's keys in its file (nil for the request rung).
	pos positions
}

// SetsData reports whether the profile sets a data restriction
// (data.zero_retention, data.no_training, providers.quantizations or
// providers.max_price, data.regions).
func (p *Profile) SetsData() bool {
	return p.Data.ZeroRetention != nil || p.Data.NoTraining != nil || p.Providers.Quantizations != nil || p.Providers.MaxPrice != nil || p.Data.Regions != nil
}

// MaxPrice is a price ceiling in USD per million tokens; a nil side has no
// ceiling.
type MaxPrice struct {
	// Input is the ceiling on the input (prompt) price. Default: unset.
	Input *float64 `toml:"input" json:"input,omitempty"`
	// Output is the ceiling on the output (completion) price. Default: unset.
	Output *float64 `toml:"output" json:"output,omitempty"`
}

// normalize lower-cases every slug: matching is case-insensitive.
func (p *Profile) normalize() {
	for _, l := range []*[]string{p.Fallbacks, p.Providers.Preferred, p.Providers.Allowed, p.Providers.Denied, p.Providers.Quantizations, p.Data.Regions} {
		if l == nil {
			continue
		}
		for i, s := range *l {
			(*l)[i] = strings.ToLower(s)
		}
	}
}

// check reports what the schema cannot: the chain's length, duplicates after
// case folding, and a provider both allowed and denied. line locates a pointer
// (it returns 0 for a request body, which is located by pointer instead).
func (p *Profile) check(file string, line func(string) int, pointerOnly bool) Diagnostics {
	var diags Diagnostics
	add := func(code, ptr, format string, args ...any) {
		d := Diagnostic{File: file, Code: code, Message: fmt.Sprintf(format, args...)}
		if !pointerOnly {
			d.Line = line(ptr)
		}
		if d.Line == 0 {
			// A key the decoder matched in another case ("fAllBACks") has
			// no line under its canonical name: located by pointer instead.
			d.Pointer = ptr
		}
		diags = append(diags, d)
	}
	if p.Fallbacks != nil && len(*p.Fallbacks) > MaxFallbacks {
		add(CodeFallbacksTooLong, "/fallbacks", "fallbacks has %d entries; a chain holds at most %d beyond the decided model", len(*p.Fallbacks), MaxFallbacks)
	}
	lists := []struct {
		name string
		ptr  string
		l    *[]string
	}{
		{"fallbacks", "/fallbacks", p.Fallbacks},
		{"providers.preferred", "/providers/preferred", p.Providers.Preferred},
		{"providers.allowed", "/providers/allowed", p.Providers.Allowed},
		{"providers.denied", "/providers/denied", p.Providers.Denied},
		{"providers.quantizations", "/providers/quantizations", p.Providers.Quantizations},
		{"data.regions", "/data/regions", p.Data.Regions},
	}
	for _, l := range lists {
		if l.l == nil {
			continue
		}
		seen := map[string]bool{}
		for i, s := range *l.l {
			if seen[s] {
				add(CodeDuplicateEntry, fmt.Sprintf("%s/%d", l.ptr, i), "%s lists %q more than once (slugs match case-insensitively)", l.name, s)
			}
			seen[s] = true
		}
	}
	if p.Providers.Allowed != nil && p.Providers.Denied != nil {
		allowed := map[string]bool{}
		for _, s := range *p.Providers.Allowed {
			allowed[s] = true
		}
		for i, s := range *p.Providers.Denied {
			if allowed[s] {
				add(CodeBothAllowedDenied, fmt.Sprintf("/providers/denied/%d", i), "provider %q is both allowed and denied", s)
			}
		}
	}
	return diags
}

// ParseProfile decodes, validates and normalises one profile file's bytes.
// file is used to locate diagnostics.
func ParseProfile(file string, data []byte) (*Profile, Diagnostics) {
	doc, pos, syn := decodeTOML(file, data)
	if syn != nil {
		return nil, Diagnostics{*syn}
	}
	if vs := schemas.Validate(schemas.Profile, doc); len(vs) > 0 {
		diags := make(Diagnostics, len(vs))
		for i, v := range vs {
			diags[i] = Diagnostic{File: file, Line: pos.schemaLine(v), Pointer: v.Pointer, Code: CodeSchema, Message: v.Message}
		}
		// Go on where the document still decodes: its other mistakes
		// belong in the same report.
		var p Profile
		if toml.Unmarshal(data, &p) == nil {
			p.normalize()
			diags = append(diags, p.check(file, pos.line, false)...)
		}
		return nil, diags
	}
	var p Profile
	if err := toml.Unmarshal(data, &p); err != nil {
		return nil, Diagnostics{{File: file, Code: CodeSchema, Message: err.Error()}}
	}
	p.normalize()
	if diags := p.check(file, pos.line, false); len(diags) > 0 {
		return nil, diags
	}
	p.pos = pos
	return &p, nil
}

// RequestFile is the file name under which request-rung diagnostics are reported.
const RequestFile = "request"

// ParseRouting decodes, validates and normalises the "routing" object of a
// request body: the request rung. Diagnostics are located by JSON pointer
// under /routing.
func ParseRouting(raw json.RawMessage) (*Profile, Diagnostics) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, Diagnostics{{File: RequestFile, Pointer: "/routing", Code: CodeJSONSyntax, Message: err.Error()}}
	}
	if vs := schemas.Validate(schemas.Routing, doc); len(vs) > 0 {
		diags := make(Diagnostics, len(vs))
		for i, v := range vs {
			diags[i] = Diagnostic{File: RequestFile, Pointer: "/routing" + v.Pointer, Code: CodeSchema, Message: v.Message}
		}
		return nil, diags
	}
	var p Profile
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, Diagnostics{{File: RequestFile, Pointer: "/routing", Code: CodeSchema, Message: err.Error()}}
	}
	p.normalize()
	diags := p.check(RequestFile, nil, true)
	for i := range diags {
		diags[i].Pointer = "/routing" + diags[i].Pointer
	}
	if len(diags) > 0 {
		return nil, diags
	}
	return &p, nil
}

// RawRoutingFields are request-body fields that are some upstream's own
// routing shapes. A request carrying one is refused (code raw_routing_field):
// a rule a caller could bypass by writing the upstream's knobs does not bind.
var RawRoutingFields = []string{"models", "plugins", "provider", "providerOptions", "route", "transforms"}

// Layer is one rung's profile with where it came from.
type Layer struct {
	// Rung is "org", "team:<t>", "project:<p>", "key:<k>" or "request".
	Rung string
	// File is the profile's path relative to the config directory ("request"
	// for the request rung).
	File    string
	Profile *Profile
}

// ProfileSet holds every profile file of a config directory, keyed by rung.
type ProfileSet struct {
	org      *Layer
	teams    map[string]*Layer
	projects map[string]*Layer
	keys     map[string]*Layer
}

// Count returns the number of profile files in the set.
func (s *ProfileSet) Count() int {
	n := len(s.teams) + len(s.projects) + len(s.keys)
	if s.org != nil {
		n++
	}
	return n
}

// Layers returns the principal's rungs that have a profile, top first:
// org, team, project, key.
func (s *ProfileSet) Layers(p Principal) []Layer {
	out := make([]Layer, 0, 4)
	if s.org != nil {
		out = append(out, *s.org)
	}
	for _, l := range []*Layer{s.teams[p.Team], s.projects[p.Project], s.keys[p.Key]} {
		if l != nil {
			out = append(out, *l)
		}
	}
	return out
}

// checkTightening checks every ladder the set can build — the org above
// each team and project, and each key's whole ladder — for a rung that
// loosens a data restriction; each loosening is reported once.
func (s *ProfileSet) checkTightening(keys []Key) Diagnostics {
	var ladders [][]Layer
	for _, in := range []map[string]*Layer{s.teams, s.projects} {
		for _, l := range in {
			if s.org != nil {
				ladders = append(ladders, []Layer{*s.org, *l})
			}
		}
	}
	for i := range keys {
		ladders = append(ladders, s.Layers(keys[i].Principal()))
	}
	var out Diagnostics
	seen := map[Diagnostic]bool{}
	for _, ladder := range ladders {
		for _, d := range CheckTightening(ladder) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

type rungFile struct{ name, file string }

func (s *ProfileSet) keyRungs() []rungFile {
	var out []rungFile
	for name, l := range s.keys {
		out = append(out, rungFile{name, l.File})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// loadProfiles reads DIR/profiles. Layout:
//
//	profiles/org.toml                 rung "org"
//	profiles/teams/<team>.toml        rung "team:<team>"
//	profiles/projects/<project>.toml  rung "project:<project>"
//	profiles/keys/<key-id>.toml       rung "key:<key-id>"
//
// Any other file or folder is reported as unknown_rung.
// loadProfiles reads the profile files below dir/profiles, writing each
// one's path (relative to dir, with slashes) and bytes to h as it reads them.
func loadProfiles(dir string, diags *Diagnostics, h io.Writer) *ProfileSet {
	set := &ProfileSet{teams: map[string]*Layer{}, projects: map[string]*Layer{}, keys: map[string]*Layer{}}
	root := filepath.Join(dir, "profiles")
	if _, err := os.Stat(root); err != nil {
		return set
	}
	rungs := map[string]struct {
		prefix string
		into   map[string]*Layer
	}{
		"teams":    {"team:", set.teams},
		"projects": {"project:", set.projects},
		"keys":     {"key:", set.keys},
	}
	// A symlinked profiles/ (how a Kubernetes ConfigMap volume lays out
	// nested items) is walked where it points; paths stay reported, and
	// hashed, as profiles/...
	walkRoot := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		walkRoot = r
	}
	_ = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(walkRoot, path)
		rel = filepath.ToSlash(filepath.Join("profiles", rel))
		if err != nil {
			*diags = append(*diags, Diagnostic{File: rel, Code: CodeReadError, Message: err.Error()})
			return nil
		}
		if path == walkRoot {
			return nil
		}
		parts := strings.Split(rel, "/")[1:]
		if d.IsDir() {
			if _, ok := rungs[parts[0]]; len(parts) == 1 && ok {
				return nil
			}
			*diags = append(*diags, Diagnostic{File: rel, Code: CodeUnknownRung,
				Message: "unknown rung folder; profiles live in profiles/org.toml, profiles/teams/, profiles/projects/ and profiles/keys/"})
			return fs.SkipDir
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil // editor swap files and the like
		}
		if !strings.HasSuffix(d.Name(), ".toml") {
			*diags = append(*diags, Diagnostic{File: rel, Code: CodeUnknownRung, Message: "not a .toml profile file"})
			return nil
		}
		var rung, name string
		var into map[string]*Layer
		switch {
		case len(parts) == 1 && parts[0] == "org.toml":
			rung = "org"
		case len(parts) == 2:
			r := rungs[parts[0]]
			name = strings.TrimSuffix(parts[1], ".toml")
			rung, into = r.prefix+name, r.into
		default:
			*diags = append(*diags, Diagnostic{File: rel, Code: CodeUnknownRung,
				Message: "unknown rung; profiles live in profiles/org.toml, profiles/teams/, profiles/projects/ and profiles/keys/"})
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			*diags = append(*diags, Diagnostic{File: rel, Code: CodeReadError, Message: err.Error()})
			return nil
		}
		_, _ = io.WriteString(h, filepath.ToSlash(rel))
		_, _ = h.Write(data)
		p, pd := ParseProfile(rel, data)
		if len(pd) > 0 {
			*diags = append(*diags, pd...)
			return nil
		}
		l := &Layer{Rung: rung, File: rel, Profile: p}
		if into == nil {
			set.org = l
		} else {
			into[name] = l
		}
		return nil
	})
	return set
}

// All returns every profile file's layer (org, teams, projects, keys),
// sorted by file.
func (s *ProfileSet) All() []Layer {
	var out []Layer
	if s.org != nil {
		out = append(out, *s.org)
	}
	for _, in := range []map[string]*Layer{s.teams, s.projects, s.keys} {
		for _, l := range in {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// Line returns the line of a JSON pointer ("/fallbacks/1") in the profile's
// file, or of its nearest located parent; 0 for the request rung.
func (p *Profile) Line(ptr string) int {
	if p == nil || p.pos == nil {
		return 0
	}
	return p.pos.line(ptr)
}
