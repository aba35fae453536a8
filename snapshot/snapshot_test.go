package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
)

// demoWith copies the demo config and applies literal edits to a file.
func demoWith(t *testing.T, file string, edits ...[2]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	for _, e := range edits {
		require.Contains(t, s, e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return dir
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
		}, []string{`sluice.toml#/routes/1/then/targets/0: forbidden_class: route "free-pool" forbids class "paid", and the catalog gives model "openai/gpt-4o-mini" that class`}},
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
