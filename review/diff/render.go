package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/profiles"
)

// WriteJSON writes the report's stable JSON form (see the package doc),
// indented, with a final newline.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the report for a terminal: the summary, upstream and
// route changes, then the changes of each key. Keys whose changes are
// identical are printed once, under one heading naming all of them.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	c := r.Compared
	fmt.Fprintf(&b, "compared %s × %s × %s\n", plural(c.Keys, "key"), plural(c.Models, "model"), plural(c.Upstreams, "upstream"))
	if !r.Changed {
		b.WriteString("no changes\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, row := range r.summaryRows() {
		fmt.Fprintf(&b, "%s: %s\n", row[0], row[1])
	}
	if r.Traffic != nil {
		b.WriteString("\n")
		b.WriteString(r.Traffic.text())
	}
	if len(r.Upstreams) > 0 {
		b.WriteString("\n")
		b.WriteString(r.upstreamText())
	}
	if len(r.Routes) > 0 {
		b.WriteString("\n")
		b.WriteString(r.routeText())
	}
	for _, kg := range r.keyGroups() {
		fmt.Fprintf(&b, "\n%s\n%s", kg.heading(), kg.body)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report ready to paste into a pull-request
// comment: a summary table, the upstream and route changes, then one
// <details> block per key (or per set of keys with identical changes).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	c := r.Compared
	b.WriteString("### sluice diff\n\n")
	if !r.Changed {
		fmt.Fprintf(&b, "No routing change: compared %s × %s × %s.\n", plural(c.Keys, "key"), plural(c.Models, "model"), plural(c.Upstreams, "upstream"))
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Compared %s × %s × %s.\n\n", plural(c.Keys, "key"), plural(c.Models, "model"), plural(c.Upstreams, "upstream"))
	b.WriteString("| change | count |\n| --- | --- |\n")
	for _, row := range r.summaryRows() {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], mdCodes(row[1]))
	}
	if r.Traffic != nil {
		b.WriteString(r.Traffic.markdown())
	}
	if len(r.Upstreams) > 0 {
		b.WriteString("\n**Upstreams**\n\n")
		for _, u := range r.Upstreams {
			fmt.Fprintf(&b, "- `%s` (%s): %s%s\n", u.Name, u.Connector, u.Status, mdFields(u.Fields))
		}
	}
	if len(r.Routes) > 0 {
		b.WriteString("\n**Routes**\n\n")
		for _, rt := range r.Routes {
			fmt.Fprintf(&b, "- `%s`: %s%s\n", rt.Model, rt.Status, mdFields(rt.Fields))
		}
	}
	if kgs := r.keyGroups(); len(kgs) > 0 {
		b.WriteString("\n**Keys**\n")
		for _, kg := range kgs {
			names := make([]string, len(kg.keys))
			for i, k := range kg.keys {
				names[i] = "<code>" + k.Key + "</code>"
				if p := k.principal(); p != nil {
					names[i] += " (" + p.Org + "/" + p.Team + "/" + p.Project + ")"
				}
			}
			fmt.Fprintf(&b, "\n<details><summary>%s: %s</summary>\n\n```text\n%s```\n\n</details>\n", strings.Join(names, ", "), kg.keys[0].brief(), kg.body)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryRows are the summary lines shared by text and markdown.
func (r *Report) summaryRows() [][2]string {
	s := r.Summary
	return [][2]string{
		{"keys affected", fmt.Sprintf("%d (%d added, %d removed)", s.KeysAffected, s.KeysAdded, s.KeysRemoved)},
		{"upstreams changed", fmt.Sprint(len(r.Upstreams))},
		{"routes changed", fmt.Sprint(len(r.Routes))},
		{"models newly forbidden (key × model)", fmt.Sprint(s.NewlyForbidden)},
		{"models newly allowed (key × model)", fmt.Sprint(s.NewlyAllowed)},
		{"new refusals (key × model × upstream)", counts(s.NewRefusals)},
		{"new degrades (key × model × upstream)", counts(s.NewDegrades)},
		{"resolved refusals", counts(s.ResolvedRefusals)},
		{"resolved degrades", counts(s.ResolvedDegrades)},
		{"native bodies changed", fmt.Sprint(s.NativeChanged)},
	}
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// mdCodes puts the codes of a counts() string in backticks.
func mdCodes(s string) string {
	if !strings.Contains(s, " ×") {
		return s
	}
	parts := strings.Split(s, ", ")
	for i, p := range parts {
		if k, n, ok := strings.Cut(p, " ×"); ok {
			parts[i] = "`" + k + "` ×" + n
		}
	}
	return strings.Join(parts, ", ")
}

func mdFields(fs []FieldChange) string {
	if len(fs) == 0 {
		return ""
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s `%s` → `%s`", f.Field, value(f.Base), value(f.Head))
	}
	return ": " + strings.Join(parts, "; ")
}

func (r *Report) upstreamText() string {
	var b strings.Builder
	for _, u := range r.Upstreams {
		fmt.Fprintf(&b, "upstream %s (%s): %s\n", u.Name, u.Connector, u.Status)
		writeFields(&b, "  ", u.Fields)
	}
	return b.String()
}

func (r *Report) routeText() string {
	var b strings.Builder
	for _, rt := range r.Routes {
		fmt.Fprintf(&b, "route %s: %s\n", rt.Model, rt.Status)
		writeFields(&b, "  ", rt.Fields)
	}
	return b.String()
}

func writeFields(b *strings.Builder, indent string, fs []FieldChange) {
	for _, f := range fs {
		fmt.Fprintf(b, "%s%s: %s → %s\n", indent, f.Field, value(f.Base), value(f.Head))
	}
}

// value renders one side of a change; an absent side is "(absent)".
func value(v json.RawMessage) string {
	if v == nil {
		return "(absent)"
	}
	return string(v)
}

// keyGroup is a set of keys whose rendered changes are identical.
type keyGroup struct {
	keys []*KeyChange
	body string
}

func (g keyGroup) heading() string {
	parts := make([]string, len(g.keys))
	for i, k := range g.keys {
		parts[i] = k.Key
		if p := k.principal(); p != nil {
			parts[i] += " (" + p.Org + "/" + p.Team + "/" + p.Project + ")"
		}
	}
	word := "key"
	if len(parts) > 1 {
		word = "keys"
	}
	h := word + " " + strings.Join(parts, ", ")
	if st := g.keys[0].Status; st != StatusChanged {
		h += ": " + st
	}
	return h
}

func (r *Report) keyGroups() []keyGroup {
	var out []keyGroup
	idx := map[string]int{}
	for i := range r.Keys {
		k := &r.Keys[i]
		body := k.Status + "\n" + k.text()
		if j, ok := idx[body]; ok {
			out[j].keys = append(out[j].keys, k)
			continue
		}
		idx[body] = len(out)
		out = append(out, keyGroup{keys: []*KeyChange{k}, body: k.text()})
	}
	return out
}

func (k *KeyChange) principal() *profiles.Principal {
	if k.Head != nil {
		return k.Head
	}
	return k.Base
}

// brief is the one-line summary of a key's changes in a markdown <summary>.
func (k *KeyChange) brief() string {
	if k.Status != StatusChanged {
		return k.Status
	}
	var forbidden, allowed, other int
	for _, m := range k.Models {
		switch m.Access {
		case AccessNewlyForbidden:
			forbidden++
		case AccessNewlyAllowed:
			allowed++
		default:
			other++
		}
	}
	var parts []string
	if len(k.Fields) > 0 {
		parts = append(parts, plural(len(k.Fields), "setting")+" changed")
	}
	if forbidden > 0 {
		parts = append(parts, plural(forbidden, "model")+" newly forbidden")
	}
	if allowed > 0 {
		parts = append(parts, plural(allowed, "model")+" newly allowed")
	}
	if other > 0 {
		parts = append(parts, plural(other, "model")+" compile differently")
	}
	return strings.Join(parts, ", ")
}

// text renders a key's changes, indented by two spaces. Models whose
// changes read the same are listed together, so that a profile change that
// touches every model reads as one block.
func (k *KeyChange) text() string {
	var b strings.Builder
	writeFields(&b, "  ", k.Fields)
	type block struct {
		names []string
		head  string // after the names
		body  string
	}
	var blocks []*block
	idx := map[string]*block{}
	for _, m := range k.Models {
		head, body := m.text()
		if bl := idx[head+"\n"+body]; bl != nil {
			bl.names = append(bl.names, m.Model)
			continue
		}
		bl := &block{names: []string{m.Model}, head: head, body: body}
		idx[head+"\n"+body] = bl
		blocks = append(blocks, bl)
	}
	for _, bl := range blocks {
		fmt.Fprintf(&b, "  %s%s\n%s", strings.Join(bl.names, ", "), bl.head, bl.body)
	}
	return b.String()
}

// text renders a model's change: what follows the model's name on its
// line, and the lines below it.
func (m *ModelChange) text() (head, body string) {
	kind := ""
	if m.Route {
		kind = " (route)"
	}
	if m.Access != "" {
		return kind + ": " + strings.ReplaceAll(m.Access, "_", " "), ""
	}
	var b strings.Builder
	if m.Chain != nil {
		fmt.Fprintf(&b, "    chain: %s → %s%s\n", mustJSON(m.Chain.Base), mustJSON(m.Chain.Head), addRemove(m.Chain))
	}
	if m.Dropped != nil {
		fmt.Fprintf(&b, "    dropped: %s → %s%s\n", mustJSON(m.Dropped.Base), mustJSON(m.Dropped.Head), addRemove(m.Dropped))
	}
	for _, f := range m.Providers {
		fmt.Fprintf(&b, "    providers.%s: %s → %s\n", f.Field, value(f.Base), value(f.Head))
	}
	for _, u := range m.Upstreams {
		label := u.Upstream
		if u.Model != "" {
			label += ":" + u.Model
		}
		switch {
		case u.Status == StatusAdded:
			fmt.Fprintf(&b, "    %s: target added, %s\n", label, u.Head.text())
		case u.Status == StatusRemoved:
			fmt.Fprintf(&b, "    %s: target removed, was %s\n", label, u.Base.text())
		case u.Base.text() != u.Head.text():
			fmt.Fprintf(&b, "    %s: %s → %s\n", label, u.Base.text(), u.Head.text())
		default:
			fmt.Fprintf(&b, "    %s: native body changed\n", label)
		}
		for _, n := range u.Native {
			switch {
			case n.Base == nil:
				fmt.Fprintf(&b, "      + %s: %s\n", n.Field, n.Head)
			case n.Head == nil:
				fmt.Fprintf(&b, "      - %s: %s\n", n.Field, n.Base)
			default:
				fmt.Fprintf(&b, "      ~ %s: %s → %s\n", n.Field, n.Base, n.Head)
			}
		}
	}
	return kind + ":", b.String()
}

func addRemove(l *ListChange) string {
	var parts []string
	for _, a := range l.Added {
		parts = append(parts, "+ "+a)
	}
	for _, r := range l.Removed {
		parts = append(parts, "- "+r)
	}
	if len(parts) == 0 {
		return " (reordered)"
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// text renders an outcome: "serve", "serve, degraded ranking+chain",
// "serve, data zero_retention=native" or "refuse CODE".
func (o *Outcome) text() string {
	if o.Refused != "" {
		return "refuse " + o.Refused
	}
	out := "serve"
	if len(o.Degraded) > 0 {
		out += ", degraded " + strings.Join(o.Degraded, "+")
	}
	if o.DataVia != "" {
		out += ", data " + o.DataVia
	}
	return out
}

// plural writes "1 model", "2 models".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
