package listing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/listings/cases")

// corpusCase is testdata/listings/cases/<case>/case.json: which listing to
// import (paths relative to the case directory) into base.json (when
// present), and how.
type corpusCase struct {
	From      string   `json:"from"`
	Models    string   `json:"models"`
	Endpoints string   `json:"endpoints"`
	ZDR       string   `json:"zdr"`
	Only      []string `json:"only"`
	Threshold float64  `json:"threshold"`
}

const casesDir = "../../testdata/listings/cases"

// TestCorpus runs every case of testdata/listings/cases: the import of a
// recorded (or documented-shape) listing into the case's base catalog
// must give want.json and summary.txt, or fail with error.txt and give
// nothing to write. Regenerate with -update and review the diff.
func TestCorpus(t *testing.T) {
	dirs, err := os.ReadDir(casesDir)
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			dir := filepath.Join(casesDir, d.Name())
			out, summary, failure := runCase(t, dir)
			golden(t, filepath.Join(dir, "error.txt"), failure)
			golden(t, filepath.Join(dir, "want.json"), out)
			golden(t, filepath.Join(dir, "summary.txt"), summary)
		})
	}
}

// runCase imports as `sluice catalog import` does and returns the catalog
// written, the summary printed, or the failure.
func runCase(t *testing.T, dir string) (out, summary, failure []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
	require.NoError(t, err)
	var c corpusCase
	require.NoError(t, json.Unmarshal(raw, &c))
	rel := func(p string) string {
		if p == "" {
			return ""
		}
		return filepath.Join(dir, p)
	}
	var imp *listing.Import
	switch c.From {
	case "openrouter":
		imp, err = (&listing.OpenRouter{ModelsFile: rel(c.Models), EndpointsDir: rel(c.Endpoints), ZDRFile: rel(c.ZDR), Only: c.Only}).Import(context.Background())
	case "vercel":
		imp, err = (&listing.Vercel{ModelsFile: rel(c.Models), Only: c.Only}).Import(context.Background())
	default:
		t.Fatalf("case.json: unknown from %q", c.From)
	}
	if err != nil {
		return nil, nil, []byte(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n")
	}
	base, err := listing.ReadDocument(filepath.Join(dir, "base.json"))
	require.NoError(t, err)
	a, diags := listing.Apply(guardrails.CatalogFile, base, imp, listing.MergeOptions{PriceThreshold: c.Threshold})
	if len(diags) > 0 {
		return nil, nil, []byte(diags.Error() + "\n")
	}
	var b bytes.Buffer
	a.Summary.Write(&b, true)
	return a.Raw, b.Bytes(), nil
}

// golden compares got with the file, or rewrites it with -update; a nil
// got means the file must not exist.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if got == nil {
			_ = os.Remove(path)
			return
		}
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if got == nil {
		require.True(t, os.IsNotExist(err), "%s exists, but the case produced none", path)
		return
	}
	require.NoError(t, err, "missing golden file (run with -update)")
	require.Equal(t, string(want), string(got), "%s differs", path)
}
