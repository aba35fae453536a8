package requestlog

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// backend opens a fresh, empty store for one test.
type backend struct {
	name string
	open func(t *testing.T) Store
}

func openSQLiteForTest(t *testing.T) Store {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "requests.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func chOptionsForTest(t testing.TB, srv *chtest.Server) Options {
	return Options{Addr: srv.Addr(), Database: chtest.NewDatabaseName("rl"), DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second}
}

func openClickHouseForTest(t *testing.T) Store {
	t.Helper()
	srv := chtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := OpenClickHouse(ctx, chOptionsForTest(t, srv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var backends = []backend{
	{"sqlite", openSQLiteForTest},
	{"clickhouse", openClickHouseForTest},
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var baseTS = time.Date(2025, 3, 14, 9, 26, 53, 589_000_000, time.UTC)

// sampleRows returns n varied rows; every third pair shares a timestamp so
// that ordering must fall back to request_id.
func sampleRows(n int) []Row {
	orgs := []string{"acme", "globex"}
	teams := []string{"search", "ads", "infra"}
	providers := []string{"openai", "anthropic", "bedrock", ""}
	rows := make([]Row, n)
	for i := range rows {
		r := Row{
			TS:                baseTS.Add(time.Duration(i/2) * 1500 * time.Millisecond),
			RequestID:         fmt.Sprintf("req-%05d", i),
			Org:               orgs[i%len(orgs)],
			Team:              teams[i%len(teams)],
			Project:           fmt.Sprintf("p%d", i%5),
			KeyID:             fmt.Sprintf("key-%d", i%7),
			SessionID:         fmt.Sprintf("sess-%d", i%11),
			Upstream:          "primary",
			DecidedModel:      "gpt-4o",
			Chain:             []string{"gpt-4o", "claude-sonnet"},
			ServedModel:       "gpt-4o",
			ServedProvider:    providers[i%len(providers)],
			Attempts:          1 + i%3,
			Status:            200,
			Stream:            i%2 == 0,
			CacheHit:          i%5 == 0,
			PromptTokens:      int64(100 + i),
			CompletionTokens:  int64(10 + i),
			CostUSD:           float64(i) * 0.0001,
			CostSource:        []string{"catalog", "upstream", ""}[i%3],
			ConfigRevision:    []string{"a1b2c3d4e5f60718", ""}[i%2],
			API:               []string{"chat", "messages", "embeddings", ""}[i%4],
			SessionKey:        []string{"X-Session-Id", "x-claude-code-session-id", "session-id"}[i%3],
			SessionAffinity:   []string{"pin", "pin+session_id", "pin+prompt_cache_key"}[i%3],
			CachedTokens:      int64(i * 3),
			ReasoningTokens:   int64(i % 5),
			DataPolicy:        []string{"", "zero_retention,no_training", "quantizations,max_price"}[i%3],
			DataPolicyVia:     []string{"", "zero_retention=native,no_training=allow_list", "quantizations=native,max_price=local"}[i%3],
			ServedRegion:      []string{"eu-west-1", "", "swedencentral", "eu"}[i%4],
			LatencyMS:         float64(i) + 0.25,
			TTFTMS:            float64(i) / 2,
			PreferenceVerdict: PreferenceVerdicts[i%len(PreferenceVerdicts)],
		}
		switch i % 4 {
		case 1:
			r.PreferenceRankBy = "latency"
			r.PreferencePreferred = []string{"anthropic", "amazon-bedrock/us-east"}
		case 2:
			r.PreferenceAllowed = []string{"openai", "azure"}
			r.PreferenceDenied = []string{"deepinfra"}
			r.UpstreamAttempts = "openai/gpt-4o@OpenAI 503, openai/gpt-4o@Azure 200"
		case 3:
			r.RoutingObject = `{"providers":{"preferred":["anthropic"]},"note":"<é>"}`
			r.API, r.Responses, r.CloseCode, r.ClosedBy = "realtime", i, 1008, "sluice"
		}
		if i%4 == 0 {
			r.Route = "fast"
		}
		if i%6 == 1 {
			r.ServedModel = "claude-sonnet"
			r.RoutingSwitchReason = "rate_limited"
			r.FallbackReason = "upstream_429"
		}
		if i%7 == 2 {
			r.RoutingDegraded = []string{"zdr", "cache"} // unsorted on purpose
			r.RepresentationBreak = true
			r.CacheDiscountApplied = true
		}
		if i%8 == 5 {
			r.RequestRouting = true
		}
		if i%9 == 3 {
			r.RefusedCode = "policy_denied"
			r.RefusedMessage = "model \"x\" is forbidden by team ads's guardrail, line 3"
			r.Status = 403
			r.ServedModel, r.ServedProvider = "", ""
		}
		rows[i] = r
	}
	return rows
}

// matches is the reference semantics of Filter, checked against the stores.
func matches(r Row, f Filter) bool {
	r = r.normalized()
	switch {
	case !f.From.IsZero() && r.TS.Before(f.From),
		!f.To.IsZero() && !r.TS.Before(f.To),
		f.Org != "" && r.Org != f.Org,
		f.Team != "" && r.Team != f.Team,
		f.Project != "" && r.Project != f.Project,
		f.ServedProvider != "" && r.ServedProvider != f.ServedProvider,
		f.SwitchReason != "" && r.RoutingSwitchReason != f.SwitchReason,
		f.FallbackReason != "" && r.FallbackReason != f.FallbackReason,
		f.SessionID != "" && r.SessionID != f.SessionID,
		!f.AnyFlag && f.Degraded && len(r.RoutingDegraded) == 0,
		!f.AnyFlag && f.Refused && r.RefusedCode == "",
		!f.AnyFlag && f.Switched && (r.ServedModel == "" || r.ServedModel == r.DecidedModel),
		f.AnyFlag && (f.Degraded || f.Refused || f.Switched) && !(f.Degraded && len(r.RoutingDegraded) > 0 ||
			f.Refused && r.RefusedCode != "" || f.Switched && r.ServedModel != "" && r.ServedModel != r.DecidedModel),
		f.PreferenceVerdict != "" && r.PreferenceVerdict != f.PreferenceVerdict,
		f.DataPolicy == DataPolicyAny && r.DataPolicy == "",
		f.DataPolicy == DataPolicyNone && r.DataPolicy != "",
		f.DataPolicy != "" && f.DataPolicy != DataPolicyAny && f.DataPolicy != DataPolicyNone && !slices.Contains(strings.Split(r.DataPolicy, ","), f.DataPolicy):
		return false
	}
	return true
}

// newestFirst sorts normalized copies of rows the way Query orders them.
func newestFirst(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = r.normalized()
	}
	slices.SortFunc(out, func(a, b Row) int {
		if c := b.TS.Compare(a.TS); c != 0 {
			return c
		}
		return -compareStrings(a.RequestID, b.RequestID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queryAll pages through f with the cursor, failing on a repeated row or a
// runaway loop.
func queryAll(t *testing.T, s Store, f Filter) []Row {
	t.Helper()
	var all []Row
	seen := map[string]bool{}
	for range 10_000 {
		p, err := s.Query(testCtx(t), f)
		require.NoError(t, err)
		for _, r := range p.Rows {
			require.False(t, seen[r.RequestID], "row %s returned twice", r.RequestID)
			seen[r.RequestID] = true
		}
		all = append(all, p.Rows...)
		if p.NextCursor == "" {
			return all
		}
		f.Cursor = p.NextCursor
	}
	t.Fatal("pagination did not end")
	return nil
}

func ids(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.RequestID
	}
	return out
}

func TestStoreContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { runStoreContract(t, b) })
	}
}

func runStoreContract(t *testing.T, b backend) {
	t.Run("round trip", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(30)
		require.NoError(t, s.Insert(testCtx(t), in))
		got := queryAll(t, s, Filter{})
		require.Equal(t, newestFirst(in), got)
		for _, r := range got {
			require.NotNil(t, r.RoutingDegraded, "routing_degraded of %s must be [] not null", r.RequestID)
			require.True(t, slices.IsSorted(r.RoutingDegraded))
		}
	})

	t.Run("idempotent insert", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(10)
		require.NoError(t, s.Insert(testCtx(t), in))
		again := sampleRows(50) // 10 already stored, 40 new: more than one multi-row statement
		for i := range again {
			again[i].Team = "changed"
		}
		again = slices.Insert(again, 25, again[22]) // a new row twice within one statement
		again = append(again, again[40])            // and across statements
		require.NoError(t, s.Insert(testCtx(t), again))
		require.NoError(t, s.Insert(testCtx(t), nil))
		got := queryAll(t, s, Filter{})
		require.Len(t, got, 50)
		byID := map[string]Row{}
		for _, r := range got {
			byID[r.RequestID] = r
		}
		require.Equal(t, "changed", byID["req-00022"].Team)
		require.NotEqual(t, "changed", byID["req-00003"].Team, "a re-insert must not replace the stored row")
	})

	t.Run("non-finite numbers stored as zero", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(3)
		in[1].CostUSD, in[1].LatencyMS, in[1].TTFTMS = math.NaN(), math.Inf(1), math.Inf(-1)
		require.NoError(t, s.Insert(testCtx(t), in))
		got := queryAll(t, s, Filter{})
		require.Equal(t, ids(newestFirst(in)), ids(got), "no row lost")
		for _, r := range got {
			if r.RequestID == in[1].RequestID {
				require.Zero(t, r.CostUSD)
				require.Zero(t, r.LatencyMS)
				require.Zero(t, r.TTFTMS)
			}
		}
	})

	t.Run("filters", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(120)
		require.NoError(t, s.Insert(testCtx(t), in))
		cases := []struct {
			name string
			f    Filter
		}{
			{"none", Filter{}},
			{"from", Filter{From: baseTS.Add(30 * time.Second)}},
			{"to", Filter{To: baseTS.Add(30 * time.Second)}},
			{"from and to", Filter{From: baseTS.Add(10 * time.Second), To: baseTS.Add(20 * time.Second)}},
			// Bounds between two milliseconds: a row at 30 s is before From
			// and before To.
			{"from between milliseconds", Filter{From: baseTS.Add(30*time.Second + 500*time.Microsecond)}},
			{"to between milliseconds", Filter{To: baseTS.Add(30*time.Second + 500*time.Microsecond)}},
			{"org", Filter{Org: "globex"}},
			{"team", Filter{Team: "ads"}},
			{"project", Filter{Project: "p3"}},
			{"served provider", Filter{ServedProvider: "anthropic"}},
			{"switch reason", Filter{SwitchReason: "rate_limited"}},
			{"fallback reason", Filter{FallbackReason: "upstream_429"}},
			{"session", Filter{SessionID: "sess-4"}},
			{"session and team", Filter{SessionID: "sess-4", Team: "ads"}},
			{"degraded", Filter{Degraded: true}},
			{"refused", Filter{Refused: true}},
			{"switched", Filter{Switched: true}},
			{"degraded and refused, all", Filter{Degraded: true, Switched: true}},
			{"degraded or refused, any", Filter{Degraded: true, Refused: true, AnyFlag: true}},
			{"one flag, any", Filter{Refused: true, AnyFlag: true}},
			{"three flags, any, one team", Filter{Degraded: true, Refused: true, Switched: true, AnyFlag: true, Team: "ads"}},
			{"verdict first_preferred", Filter{PreferenceVerdict: VerdictFirstPreferred}},
			{"verdict outside_preference", Filter{PreferenceVerdict: VerdictOutsidePreference}},
			{"verdict outside and refused", Filter{PreferenceVerdict: VerdictOutsidePreference, Refused: true}},
			{"data policy zero_retention", Filter{DataPolicy: "zero_retention"}},
			{"data policy no_training", Filter{DataPolicy: "no_training"}},
			{"data policy max_price", Filter{DataPolicy: "max_price"}},
			{"data policy quantizations", Filter{DataPolicy: "quantizations"}},
			{"data policy any", Filter{DataPolicy: DataPolicyAny}},
			{"data policy none", Filter{DataPolicy: DataPolicyNone}},
			{"combined", Filter{Org: "acme", Team: "search", From: baseTS.Add(5 * time.Second)}},
			{"no match", Filter{Org: "nobody"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var want []Row
				for _, r := range in {
					if matches(r, tc.f) {
						want = append(want, r)
					}
				}
				got := queryAll(t, s, tc.f)
				require.Equal(t, ids(newestFirst(want)), ids(got))
				if tc.name != "none" && tc.name != "no match" {
					require.NotEmpty(t, want, "filter case must select something")
					require.Less(t, len(want), len(in), "filter case must exclude something")
				}
			})
		}
	})

	t.Run("pagination", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(333)
		require.NoError(t, s.Insert(testCtx(t), in))
		for _, limit := range []int{3, 7, 50, 333, 334} {
			t.Run(fmt.Sprint(limit), func(t *testing.T) {
				got := queryAll(t, s, Filter{Limit: limit})
				require.Equal(t, ids(newestFirst(in)), ids(got), "no row twice, none missing, newest first")
			})
		}
		p, err := s.Query(testCtx(t), Filter{})
		require.NoError(t, err)
		require.Len(t, p.Rows, DefaultLimit)
		require.NotEmpty(t, p.NextCursor)
	})

	t.Run("cursor stable under concurrent inserts", func(t *testing.T) {
		s := b.open(t)
		in := sampleRows(40)
		require.NoError(t, s.Insert(testCtx(t), in))
		p1, err := s.Query(testCtx(t), Filter{Limit: 15})
		require.NoError(t, err)
		newer := sampleRows(60)[40:] // later timestamps, new ids
		require.NoError(t, s.Insert(testCtx(t), newer))
		rest := queryAll(t, s, Filter{Limit: 15, Cursor: p1.NextCursor})
		require.Equal(t, ids(newestFirst(in)), append(ids(p1.Rows), ids(rest)...))
	})

	t.Run("max limit", func(t *testing.T) {
		s := b.open(t)
		require.NoError(t, s.Insert(testCtx(t), sampleRows(MaxLimit+5)))
		p, err := s.Query(testCtx(t), Filter{Limit: 5 * MaxLimit})
		require.NoError(t, err)
		require.Len(t, p.Rows, MaxLimit)
		require.NotEmpty(t, p.NextCursor)
	})

	t.Run("bad cursor", func(t *testing.T) {
		s := b.open(t)
		for _, c := range []string{"garbage", "v1.!!!", "v1.e30", "v2.eyJ0IjoxLCJpZCI6ImEifQ"} {
			_, err := s.Query(testCtx(t), Filter{Cursor: c})
			require.ErrorIs(t, err, ErrBadCursor, "cursor %q", c)
		}
	})

	t.Run("ping", func(t *testing.T) {
		s := b.open(t)
		require.NoError(t, s.Ping(testCtx(t)))
	})

	t.Run("summarize", func(t *testing.T) { runSummarizeContract(t, b) })

	t.Run("traffic", func(t *testing.T) { runTrafficContract(t, b) })
}

// runTrafficContract checks a store's grouped counts against CountTraffic
// over varied rows, and against counts written out by hand over a few.
func runTrafficContract(t *testing.T, b backend) {
	s := b.open(t)
	in := sampleRows(240)
	require.NoError(t, s.Insert(testCtx(t), in))
	cases := []struct {
		name string
		f    TrafficFilter
	}{
		{"all", TrafficFilter{}},
		{"from", TrafficFilter{From: baseTS.Add(40 * time.Second)}},
		{"to between milliseconds", TrafficFilter{To: baseTS.Add(30*time.Second + 500*time.Microsecond)}},
		{"window", TrafficFilter{From: baseTS.Add(10 * time.Second), To: baseTS.Add(2 * time.Minute)}},
		{"one team", TrafficFilter{Teams: []string{"ads"}}},
		{"two teams and a window", TrafficFilter{Teams: []string{"ads", "infra"}, From: baseTS.Add(time.Minute)}},
		{"no such team", TrafficFilter{Teams: []string{"nobody"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Traffic(testCtx(t), tc.f)
			require.NoError(t, err)
			want := CountTraffic(in, tc.f)
			require.Equal(t, want, got)
			var total int64
			for _, c := range got {
				total += c.Requests
			}
			n := 0
			for _, r := range in {
				if r = r.normalized(); (tc.f.From.IsZero() || !r.TS.Before(tc.f.From)) && (tc.f.To.IsZero() || r.TS.Before(tc.f.To)) &&
					(len(tc.f.Teams) == 0 || slices.Contains(tc.f.Teams, r.Team)) {
					n++
				}
			}
			require.Equal(t, int64(n), total, "every selected row counted once")
			if tc.name == "no such team" {
				require.Empty(t, got)
				require.NotNil(t, got)
			}
		})
	}

	if cs, ok := s.(*clickhouseStore); ok {
		require.Zero(t, cs.exactTraffic.Load(), "ordinary rows are counted by their hash")
	}

	t.Run("across hours, with rows stored twice", func(t *testing.T) {
		s := b.open(t)
		// 300 rows 97 s apart from 09:26:53.589: eight hours, of which the
		// first and last in part. A batch is sent again (a retry), and a
		// batch carries an id twice and an id already stored, each time
		// with another team: the row stored first is the one counted.
		start := baseTS
		all := make([]Row, 300)
		for i := range all {
			all[i] = Row{TS: start.Add(time.Duration(i) * 97 * time.Second), RequestID: fmt.Sprintf("h-%03d", i),
				Team: []string{"ads", "infra"}[i%2], KeyID: fmt.Sprintf("k-%d", i%3), DecidedModel: "m", Upstream: "u",
				Route: []string{"", "assistant"}[i%5/4], RequestRouting: i%7 == 0}
		}
		again := all[:50]
		twice := append(slices.Clone(all[150:200]), all[160], all[10])
		twice[50].Team, twice[51].Team = "other", "other"
		var sent []Row
		for _, batch := range [][]Row{all[:100], again, all[100:150], twice, all[200:]} {
			require.NoError(t, s.Insert(testCtx(t), batch))
			sent = append(sent, batch...)
		}
		stored := dedupe(sent)
		require.Len(t, stored, len(all))
		hour := time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)
		for _, f := range []TrafficFilter{
			{},
			{From: hour, To: hour.Add(3 * time.Hour)},
			{From: hour.Add(-time.Millisecond), To: hour.Add(3*time.Hour + time.Millisecond)},
			{From: hour.Add(17 * time.Minute), To: hour.Add(4*time.Hour + 2*time.Minute + 500*time.Microsecond)},
			{From: hour.Add(90 * time.Minute)},
			{To: hour.Add(150 * time.Minute), Teams: []string{"infra"}},
			{From: hour.Add(5 * time.Minute), To: hour.Add(50 * time.Minute), Teams: []string{"ads", "other"}},
			{From: hour.Add(time.Hour), To: hour.Add(time.Hour)},
		} {
			got, err := s.Traffic(testCtx(t), f)
			require.NoError(t, err)
			require.Equal(t, CountTraffic(stored, f), got, "filter %+v", f)
		}
	})

	t.Run("known counts", func(t *testing.T) {
		s := b.open(t)
		row := func(id string, key, model, upstream, route string, routing bool) Row {
			return Row{TS: baseTS, RequestID: id, Team: "ml", KeyID: key, DecidedModel: model, Upstream: upstream, Route: route, RequestRouting: routing}
		}
		require.NoError(t, s.Insert(testCtx(t), []Row{
			row("a", "k-chat", "x-ai/grok-4", "market", "", false),
			row("b", "k-chat", "x-ai/grok-4", "market", "", false),
			row("c", "k-chat", "x-ai/grok-4", "market", "", true),
			row("d", "k-chat", "x-ai/grok-4", "edge", "", false),
			row("e", "k-chat", "openai/gpt-4o", "market", "assistant", false),
		}))
		got, err := s.Traffic(testCtx(t), TrafficFilter{})
		require.NoError(t, err)
		require.Equal(t, []TrafficCount{
			{KeyID: "k-chat", Team: "ml", DecidedModel: "openai/gpt-4o", Upstream: "market", Route: "assistant", Requests: 1},
			{KeyID: "k-chat", Team: "ml", DecidedModel: "x-ai/grok-4", Upstream: "edge", Requests: 1},
			{KeyID: "k-chat", Team: "ml", DecidedModel: "x-ai/grok-4", Upstream: "market", Requests: 3, WithRouting: 1},
		}, got)
	})
}
