package metrics_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/metrics"
	"github.com/sluicegw/sluice/gateway/shared"
	"github.com/sluicegw/sluice/store/requestlog"
)

// recorder is a Registerer that keeps what it is given.
type recorder struct{ cs []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error   { r.cs = append(r.cs, c); return nil }
func (r *recorder) MustRegister(cs ...prometheus.Collector) { r.cs = append(r.cs, cs...) }
func (r *recorder) Unregister(prometheus.Collector) bool    { return true }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// TestEveryMetricDocumented: each series the gateway registers has a row in
// the metrics table of docs/operations.md, and the table names no series
// that is gone.
func TestEveryMetricDocumented(t *testing.T) {
	rec := &recorder{}
	metrics.New(rec, metrics.Build{Version: "v", Commit: "c", GoVersion: "go"})
	store, err := requestlog.OpenSQLite(filepath.Join(t.TempDir(), "requests.db"))
	require.NoError(t, err)
	w := requestlog.NewWriter(store, requestlog.WriterOptions{Registerer: rec})
	t.Cleanup(func() { _ = w.Close(context.Background()); _ = store.Close() })
	// The fleet's shared-state client registers its own; nothing listens on
	// port 1, so it starts down, which is all this needs.
	fleet, err := shared.Open(context.Background(), shared.Options{URL: "redis://127.0.0.1:1/0", Timeout: 50 * time.Millisecond, Registerer: rec})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fleet.Close() })

	registered := map[string]bool{}
	for _, c := range rec.cs {
		ch := make(chan *prometheus.Desc, 8)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			require.NotNil(t, m, d.String())
			registered[m[1]] = true
		}
	}
	require.NotEmpty(t, registered)

	var readme []byte
	readme, err = os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if m := regexp.MustCompile("^\\| `((?:sluice|gen_ai)_[a-z_]+)` \\(").FindStringSubmatch(line); m != nil {
			documented[m[1]] = true
		}
	}
	for name := range registered {
		require.True(t, documented[name], "metric %s has no row in the metrics table of docs/operations.md", name)
	}
	for name := range documented {
		require.True(t, registered[name], "the metrics table of docs/operations.md names %s, which the gateway does not register", name)
	}
}
