package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

func TestNumbersAsReviewersReadThem(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12408, "12,408"}, {1234567, "1,234,567"}, {-4200, "-4,200"}} {
		require.Equal(t, tc.want, grouped(tc.n), "%d", tc.n)
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0.0"}, {2.857, "2.9"}, {9.96, "10.0"}, {10, "10"}, {1772.4, "1,772"}, {1772.5, "1,773"}} {
		require.Equal(t, tc.want, rate(tc.v), "%v", tc.v)
	}
	require.Equal(t, 1772.57, perDay(12408, 7))
	require.Equal(t, "7", trimFloat(7.0000001))
	require.Equal(t, "1.5", trimFloat(1.5))
}

// failingStore is a request log that cannot be read.
type failingStore struct{ requestlog.Store }

func (failingStore) Traffic(context.Context, requestlog.TrafficFilter) ([]requestlog.TrafficCount, error) {
	return nil, errors.New("connection refused")
}

func TestCompareTrafficErrors(t *testing.T) {
	base, d := snapshot.Load("../../testdata/diff/rank-by-change/base")
	require.Empty(t, d)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		topts TrafficOptions
		want  error
	}{
		{"no window", TrafficOptions{}, ErrWindow},
		{"reversed window", TrafficOptions{From: day, To: day.Add(-time.Hour)}, ErrWindow},
		{"empty window", TrafficOptions{From: day, To: day}, ErrWindow},
		{"unreadable log", TrafficOptions{From: day, To: day.Add(time.Hour)}, ErrTraffic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompareTraffic(context.Background(), base, base, Options{}, failingStore{}, tc.topts)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestWeighCountsOnlyChangedCombinations: traffic of unknown keys and of
// combinations without a change weighs nothing but counts in the total.
func TestWeighCountsOnlyChangedCombinations(t *testing.T) {
	base, d := snapshot.Load("../../testdata/diff/rank-by-change/base")
	require.Empty(t, d)
	head, d := snapshot.Load("../../testdata/diff/rank-by-change/head")
	require.Empty(t, d)
	r, err := Compare(context.Background(), base, head, Options{})
	require.NoError(t, err)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := Weigh(r, []requestlog.TrafficCount{
		{KeyID: "k-gone", Team: "x", DecidedModel: "openai/gpt-4o", Upstream: "market", Requests: 5},
		{KeyID: "k-plain", Team: "plain", DecidedModel: "openai/gpt-4o", Upstream: "market", Requests: 7},
		{KeyID: "k-rank", Team: "rank", DecidedModel: "OpenAI/GPT-4o", Upstream: "edge", Requests: 11, WithRouting: 2},
		// The marketplace sorts only without an order, and k-rank's team
		// prefers one: its rank_by changes nothing there.
		{KeyID: "k-rank", Team: "rank", DecidedModel: "openai/gpt-4o", Upstream: "market", Requests: 17},
		{KeyID: "k-rank", Team: "rank", DecidedModel: "openai/gpt-4o", Upstream: "openai", Requests: 13},
	}, TrafficOptions{From: day, To: day.Add(48 * time.Hour)})
	require.Equal(t, int64(53), tr.Requests)
	require.Equal(t, int64(11), tr.Affected, "only k-rank on edge: the direct openai upstream ignores rank_by, the marketplace its order keeps")
	require.Equal(t, int64(2), tr.RequestRouting)
	require.Equal(t, Weight{Rerouted: 11, Affected: 11}, tr.Totals)
	require.Equal(t, []Impact{{Effect: EffectRerouted, Detail: "providers.rank_by", Team: "rank", Key: "k-rank", Model: "openai/gpt-4o",
		Upstream: "edge", Requests: 11, PerDay: 5.5, RequestRouting: 2}}, tr.Impacts)
	require.Equal(t, 2.0, tr.Days)
}

// TestMarkdownStaysCommentSized: a pull-request comment has a size limit,
// so the markdown lists the heaviest impacts and the first changes without
// traffic, and says how many more the JSON form has.
func TestMarkdownStaysCommentSized(t *testing.T) {
	tr := &Traffic{Days: 7}
	for i := range markdownImpacts + 10 {
		tr.Impacts = append(tr.Impacts, Impact{Effect: EffectRefused, Detail: "model_forbidden", Key: fmt.Sprintf("k-%03d", i), Requests: int64(1000 - i)})
	}
	for i := range markdownUntouched + 20 {
		tr.Untouched = append(tr.Untouched, Untouched{Effect: EffectRerouted, Detail: "providers.rank_by", Key: fmt.Sprintf("u-%03d", i),
			Models: []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7", "a/8", "a/9", "a/10"}})
	}
	md := tr.markdown()
	require.Equal(t, markdownImpacts, strings.Count(md, "| would refuse: model_forbidden |"))
	require.Contains(t, md, "…and 10 more (every one is in the JSON form).")
	require.Equal(t, markdownUntouched, strings.Count(md, "- rerouted: providers.rank_by"))
	require.Contains(t, md, "- …and 20 more (every one is in the JSON form)")
	require.Contains(t, md, "a/7, a/8 and 2 more", "models are listed up to a bound too")
	require.Contains(t, tr.text(), "k-059", "the text form lists every impact")
}
