package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/compiler/failover"
	"github.com/sluicegw/sluice/profiles"
)

// demoWith copies the demo config and applies literal edits to a file.
func demoWith(t *testing.T, file string, edits ...[2]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	editFile(t, dir, file, edits...)
	return dir
}

// editFile applies literal edits to a file of dir.
func editFile(t *testing.T, dir, file string, edits ...[2]string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	for _, e := range edits {
		require.Contains(t, s, e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func TestLoadChecksThatNeedTheCatalog(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		lines []string
	}{
		{"demo loads", func(t *testing.T) string { return demoWith(t, "sluice.toml") }, nil},
		{"tail model of a forbidden class (from the catalog)", func(t *testing.T) string {
			return demoWith(t, "sluice.toml", [2]string{
				`then = { targets = [{upstream = "openai", model = "openai/gpt-4o", class = "paid"}], on = ["overflow"] }`,
				"forbid_classes = [\"paid\"]\n" + `then = { targets = [{upstream = "openai", model = "openai/gpt-4o-mini"}], on = ["overflow"] }`})
		}, []string{`sluice.toml#/routes/1/then/targets/0: forbidden_class: route "free-pool" forbids class "paid", and the catalog gives model "openai/gpt-4o-mini" class "paid"`}},
		{"tail model of a forbidden class written in another case", func(t *testing.T) string {
			return demoWith(t, "sluice.toml", [2]string{
				`then = { targets = [{upstream = "openai", model = "openai/gpt-4o", class = "paid"}], on = ["overflow"] }`,
				"forbid_classes = [\"PAID\"]\n" + `then = { targets = [{upstream = "openai", model = "openai/gpt-4o-mini"}], on = ["overflow"] }`})
		}, []string{`sluice.toml#/routes/1/then/targets/0: forbidden_class: route "free-pool" forbids class "PAID", and the catalog gives model "openai/gpt-4o-mini" class "paid"`}},
		{"tail target whose own class hides the catalog's", func(t *testing.T) string {
			return demoWith(t, "sluice.toml", [2]string{
				`then = { targets = [{upstream = "openai", model = "openai/gpt-4o", class = "paid"}], on = ["overflow"] }`,
				"forbid_classes = [\"paid\"]\n" + `then = { targets = [{upstream = "openai", model = "openai/gpt-4o-mini", class = "free"}], on = ["overflow"] }`})
		}, []string{`sluice.toml#/routes/1/then/targets/0: forbidden_class: route "free-pool" forbids class "paid", and the catalog gives model "openai/gpt-4o-mini" class "paid"`}},
		{"member whose endpoint the catalog gives a forbidden class", func(t *testing.T) string {
			dir := demoWith(t, "sluice.toml", [2]string{
				`then = { targets = [{upstream = "openai", model = "openai/gpt-4o", class = "paid"}], on = ["overflow"] }`,
				`forbid_classes = ["Paid"]`})
			editFile(t, dir, "catalog.json", [2]string{`"latency_ms": 800, "throughput_tps": 30, "class": "free"}`, `"latency_ms": 800, "throughput_tps": 30, "class": "paid"}`})
			return dir
		}, []string{`sluice.toml#/routes/1/targets/1: forbidden_class: route "free-pool" forbids class "Paid", and the catalog gives model "b/free-2" class "paid"`}},
		{"azure upstream without its resource's endpoint", func(t *testing.T) string {
			return demoWith(t, "sluice.toml", [2]string{"[[keys]]\nid = \"k-chat\"",
				"[[upstreams]]\nname = \"azure\"\nconnector = \"azure\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\n\n[[keys]]\nid = \"k-chat\""})
		}, []string{`sluice.toml#/upstreams/5: invalid_upstream: upstream "azure": connector azure needs base_url, the resource's endpoint (https://{resource}.openai.azure.com)`}},
		{"guardrails without a catalog", func(t *testing.T) string {
			dir := demoWith(t, "sluice.toml")
			require.NoError(t, os.Remove(filepath.Join(dir, "catalog.json")))
			return dir
		}, []string{"catalog.json: missing_catalog: guardrails exist but there is no model catalog to expand their patterns against"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, diags := Load(tc.dir(t))
			if tc.lines == nil {
				require.Empty(t, diags)
				require.NotNil(t, snap)
				require.Len(t, snap.Revision, 16)
				return
			}
			require.Nil(t, snap)
			var got []string
			for _, d := range diags {
				got = append(got, d.String())
			}
			require.Equal(t, tc.lines, got)
		})
	}
}

func TestCallerKeysResolvedAtLoad(t *testing.T) {
	t.Setenv("BATCH_OPENAI_KEY", "sk-caller-1")
	dir := demoWith(t, "sluice.toml", [2]string{"project = \"batch\"\nupstream = \"openai\"\n", "project = \"batch\"\nupstream = \"openai\"\n[keys.byok]\nopenai_env = \"BATCH_OPENAI_KEY\"\nmarket_env = \"UNSET_ENV_FOR_TEST\"\n"})
	snap, diags := Load(dir)
	require.Empty(t, diags)
	require.Equal(t, "sk-caller-1", snap.CallerKey("k-batch", "openai"))
	require.Empty(t, snap.CallerKey("k-batch", "market"), "an unset variable means the platform key")
	require.Empty(t, snap.CallerKey("k-chat", "openai"))
}

// TestRevisionIndependentOfLocation: the same configuration in two
// directories has the same revision, so replicas can be compared.
func TestRevisionIndependentOfLocation(t *testing.T) {
	a, diags := Load(demoWith(t, "sluice.toml"))
	require.Empty(t, diags)
	b, diags := Load(demoWith(t, "sluice.toml"))
	require.Empty(t, diags)
	require.Equal(t, a.Revision, b.Revision)
	c, diags := Load(demoWith(t, "profiles/org.toml", [2]string{"rank_by = \"cost\"", "rank_by = \"latency\""}))
	require.Empty(t, diags)
	require.NotEqual(t, a.Revision, c.Revision, "a content change changes the revision")
}

// TestSymlinkedDirectoriesLoadTheSame: a configuration whose profiles/ and
// guardrails/ are symlinks (a Kubernetes ConfigMap volume lays nested items
// out so) loads the same profiles and policy, with the same revision, as
// the same files in place.
func TestSymlinkedDirectoriesLoadTheSame(t *testing.T) {
	src := demoWith(t, "sluice.toml")
	want, diags := Load(src)
	require.Empty(t, diags)
	dir := t.TempDir()
	for _, f := range []string{"sluice.toml", "catalog.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	for _, d := range []string{"profiles", "guardrails"} {
		require.NoError(t, os.Symlink(filepath.Join(src, d), filepath.Join(dir, d)))
	}
	got, diags := Load(dir)
	require.Empty(t, diags)
	require.Equal(t, want.Config.Profiles.Count(), got.Config.Profiles.Count())
	require.Positive(t, got.Config.Profiles.Count())
	require.Equal(t, want.Revision, got.Revision)
}

// TestPlanRemovesCatalogForbiddenClass: planning reads the catalog's class
// (the model's or an endpoint's, in any case) as loading does, so a route
// that reached a request without the load check (a hand-made route) still
// never dials a target of a class it forbids.
func TestPlanRemovesCatalogForbiddenClass(t *testing.T) {
	dir := demoWith(t, "catalog.json", [2]string{`"latency_ms": 800, "throughput_tps": 30, "class": "free"}`, `"latency_ms": 800, "throughput_tps": 30, "class": "paid"}`})
	snap, diags := Load(dir)
	require.Empty(t, diags)
	rt := &profiles.Route{Model: "strict", Strategy: failover.StrategyFastest, ForbidClasses: []string{"PAID"},
		Targets: []profiles.Target{{Upstream: "market", Model: "a/free-1"}, {Upstream: "market", Model: "b/free-2"}},
		Then:    &profiles.Tail{Targets: []profiles.Target{{Upstream: "openai", Model: "openai/gpt-4o-mini"}}, On: []string{"overflow"}}}
	rt.ApplyDefaults()
	e := snap.PlanRoute(failover.NewPlanner(failover.PlannerOptions{}), rt, ModelBody("strict")).Explain()
	var members, tail, removed []string
	for _, m := range e.Members {
		members = append(members, m.Name())
	}
	for _, m := range e.Tail {
		tail = append(tail, m.Name())
	}
	for _, r := range e.Removed {
		removed = append(removed, r.Target.Name()+" "+r.Reason+" "+r.Target.Class)
	}
	require.Equal(t, []string{"market/a/free-1"}, members)
	require.Empty(t, tail)
	require.Equal(t, []string{"market/b/free-2 forbidden_class paid", "openai/openai/gpt-4o-mini forbidden_class paid"}, removed)
	require.Empty(t, rt.Targets[1].Class, "the route itself is left as written")
}
