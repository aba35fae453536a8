package diff

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// markdownImpacts bounds the impact table of the markdown form: a
// pull-request comment has a size limit, and the heaviest rows come first.
// The JSON form always has every impact.
const markdownImpacts = 50

// markdownUntouched bounds the lines of changes without traffic in the
// markdown form, for the same reason.
const markdownUntouched = 100

// markdownUntouchedModels bounds the models listed per line of changes
// without traffic in text and markdown.
const markdownUntouchedModels = 8

// effectNames are the effects as a reviewer reads them, in tables, in the
// list of changes without traffic and in [phrase].
var effectNames = map[string]string{
	EffectRefused:      "would refuse",
	EffectUnrefused:    "would no longer refuse",
	EffectDegraded:     "newly degraded",
	EffectUndegraded:   "no longer degraded",
	EffectChainDropped: "chain entry dropped",
	EffectChainAdded:   "chain entry added",
	EffectRerouted:     "rerouted",
}

// effectName names an effect; an unknown one reads as rerouted.
func effectName(effect string) string {
	if n, ok := effectNames[effect]; ok {
		return n
	}
	return effectNames[EffectRerouted]
}

// phrase says an effect on n requests the way a reviewer reads it:
// "would refuse 12,408 requests (1,772/day)".
func phrase(effect, detail string, n int64, perDayV float64) string {
	reqs := plural64(n, "request") + " (" + rate(perDayV) + "/day)"
	switch effect {
	case EffectRefused:
		return effectName(effect) + " " + reqs + " with " + detail
	case EffectUnrefused:
		return effectName(effect) + " " + reqs + " (was " + detail + ")"
	}
	return effectName(effect) + " (" + detail + ") for " + reqs
}

// effectTitle names an effect in tables and in the list of changes without
// traffic.
func effectTitle(effect, detail string) string { return effectName(effect) + ": " + detail }

// where says which requests an impact concerns: "team ml, key k-chat,
// model x-ai/grok-4 on market".
func (im *Impact) where() string {
	s := "team " + orNone(im.Team) + ", key " + im.Key + ", model " + im.Model
	if im.Route != "" {
		s += " (route " + im.Route + ")"
	}
	return s + " on " + orNone(im.Upstream)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// window is the traffic window in words.
func (t *Traffic) window() string {
	s := fmt.Sprintf("%s to %s (%s days)", t.From.Format("2006-01-02 15:04Z"), t.To.Format("2006-01-02 15:04Z"), trimFloat(t.Days))
	if len(t.Teams) > 0 {
		s += ", teams " + strings.Join(t.Teams, ", ")
	}
	return s
}

// summary is the first line of the traffic section in text and markdown:
// the window, the requests recorded in it and those the changes touch.
func (t *Traffic) summary() string {
	s := fmt.Sprintf("%s: %s recorded, %s on changed combinations", t.window(), plural64(t.Requests, "request"), grouped(t.Affected))
	if t.RequestRouting > 0 {
		s += fmt.Sprintf(" (%s of them brought their own routing object and are counted under the closest combination)", grouped(t.RequestRouting))
	}
	return s
}

// weightRow is one total of a [Weight]: label names it in the totals,
// short in a team's line and the team table's header.
type weightRow struct {
	label, short string
	n            int64
}

// rows are a weight's totals, in the order every form lists them.
func (w Weight) rows() []weightRow {
	return []weightRow{
		{"would be refused", "refused", w.Refused},
		{"would no longer be refused", "no longer refused", w.Unrefused},
		{"newly degraded", "degraded", w.Degraded},
		{"no longer degraded", "no longer degraded", w.Undegraded},
		{"chain entries dropped", "chain dropped", w.ChainDropped},
		{"chain entries added", "chain added", w.ChainAdded},
		{"rerouted", "rerouted", w.Rerouted},
	}
}

// shownRows are the totals text, markdown and the what-if page list: the
// refusals always (they are what --fail-over gates on), the others when
// not zero.
func (w Weight) shownRows() []weightRow {
	var out []weightRow
	for i, row := range w.rows() {
		if i == 0 || row.n > 0 {
			out = append(out, row)
		}
	}
	return out
}

// text renders the traffic section for a terminal.
func (t *Traffic) text() string {
	var b strings.Builder
	b.WriteString("traffic " + t.summary() + "\n")
	for _, row := range t.Totals.shownRows() {
		fmt.Fprintf(&b, "  %s: %s (%s/day)\n", row.label, grouped(row.n), rate(perDay(row.n, t.Days)))
	}
	if len(t.ByTeam) > 0 {
		b.WriteString("by team:\n")
		for _, tw := range t.ByTeam {
			fmt.Fprintf(&b, "  %s: %s\n", orNone(tw.Team), tw.brief())
		}
	}
	if len(t.Impacts) > 0 {
		b.WriteString("heaviest first:\n")
		for i := range t.Impacts {
			im := &t.Impacts[i]
			fmt.Fprintf(&b, "  %s: %s%s\n", phrase(im.Effect, im.Detail, im.Requests, im.PerDay), im.where(), routingNote(im.RequestRouting))
		}
	}
	if len(t.Untouched) > 0 {
		b.WriteString("changes with no recorded traffic:\n")
		for _, u := range t.Untouched {
			fmt.Fprintf(&b, "  %s\n", u.line())
		}
	}
	return b.String()
}

func routingNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" [%s with their own routing object]", grouped(n))
}

// brief is a team's weight in one line, its non-zero effects only.
func (w Weight) brief() string {
	var parts []string
	for _, row := range w.rows() {
		if row.n > 0 {
			parts = append(parts, row.short+" "+grouped(row.n))
		}
	}
	return strings.Join(parts, ", ")
}

// line renders one group of changes without traffic.
func (u *Untouched) line() string {
	s := effectTitle(u.Effect, u.Detail) + " — team " + orNone(u.Team) + ", key " + u.Key
	if u.Upstream != "" {
		s += " on " + u.Upstream
	}
	if len(u.Models) > 0 {
		ms := u.Models
		more := ""
		if len(ms) > markdownUntouchedModels {
			more = fmt.Sprintf(" and %d more", len(ms)-markdownUntouchedModels)
			ms = ms[:markdownUntouchedModels]
		}
		s += ": " + strings.Join(ms, ", ") + more
	}
	return s
}

// markdown renders the traffic section of a pull-request comment.
func (t *Traffic) markdown() string {
	var b strings.Builder
	b.WriteString("\n**Traffic** " + t.summary() + ".\n\n| requests | count | per day |\n| --- | ---: | ---: |\n")
	for _, row := range t.Totals.shownRows() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.label, grouped(row.n), rate(perDay(row.n, t.Days)))
	}
	if len(t.ByTeam) > 0 {
		b.WriteString("\n**By team**\n\n| team |")
		for _, row := range t.Totals.rows() {
			b.WriteString(" " + row.short + " |")
		}
		b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(t.Totals.rows())) + "\n")
		for _, tw := range t.ByTeam {
			b.WriteString("| " + mdCell(orNone(tw.Team)) + " |")
			for _, row := range tw.rows() {
				b.WriteString(" " + grouped(row.n) + " |")
			}
			b.WriteString("\n")
		}
	}
	if len(t.Impacts) > 0 {
		b.WriteString("\n**Heaviest first**\n\n| requests | per day | change | team | key | model | upstream |\n| ---: | ---: | --- | --- | --- | --- | --- |\n")
		for i, im := range t.Impacts {
			if i == markdownImpacts {
				fmt.Fprintf(&b, "\n…and %d more (every one is in the JSON form).\n", len(t.Impacts)-markdownImpacts)
				break
			}
			model := "`" + im.Model + "`"
			if im.Route != "" {
				model += " (route `" + im.Route + "`)"
			}
			change := effectTitle(im.Effect, im.Detail)
			if im.RequestRouting > 0 {
				change += fmt.Sprintf(" (%s with own routing)", grouped(im.RequestRouting))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` | %s | %s |\n", grouped(im.Requests), rate(im.PerDay), mdCell(change),
				mdCell(orNone(im.Team)), im.Key, model, mdCell(orNone(im.Upstream)))
		}
	}
	if len(t.Untouched) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%s with no recorded traffic</summary>\n\n", plural(len(t.Untouched), "change"))
		for i, u := range t.Untouched {
			if i == markdownUntouched {
				fmt.Fprintf(&b, "- …and %d more (every one is in the JSON form)\n", len(t.Untouched)-markdownUntouched)
				break
			}
			fmt.Fprintf(&b, "- %s\n", mdCell(u.line()))
		}
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// mdCell keeps a value from breaking a table row.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// grouped writes n with thousands separators: 12408 → "12,408".
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// rate writes a per-day figure: whole and grouped from 10 on, one decimal
// below.
func rate(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return grouped(int64(v + 0.5))
}

// trimFloat writes a day count without trailing zeros: 7, 1.5.
func trimFloat(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

func plural64(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return grouped(n) + " " + noun + "s"
}
