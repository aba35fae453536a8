package diff_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicegw/sluice/review/diff"
	"github.com/sluicegw/sluice/snapshot"
)

// A team changes its ranking from latency to cost: nothing degrades, but the
// marketplace upstreams are sent a different sort.
func ExampleCompare() {
	base, _ := snapshot.Load("../../testdata/diff/rank-by-change/base")
	head, _ := snapshot.Load("../../testdata/diff/rank-by-change/head")
	r, err := diff.Compare(context.Background(), base, head, diff.Options{Keys: []string{"k-rank"}, Models: []string{"openai/gpt-4o"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("changed:", r.Changed)
	_ = r.WriteText(os.Stdout)
	// Output:
	// changed: true
	// compared 1 key × 1 model × 4 upstreams
	// keys affected: 1 (0 added, 0 removed)
	// upstreams changed: 0
	// routes changed: 0
	// models newly forbidden (key × model): 0
	// models newly allowed (key × model): 0
	// new refusals (key × model × upstream): none
	// new degrades (key × model × upstream): none
	// resolved refusals: none
	// resolved degrades: none
	// native bodies changed: 1
	//
	// key k-rank (acme/rank/p-rank)
	//   profile.rank_by: "latency" → "cost"
	//   openai/gpt-4o:
	//     providers.rank_by: "latency" → "cost"
	//     edge: native body changed
	//       ~ /providerOptions/gateway/sort: "ttft" → "cost"
}
