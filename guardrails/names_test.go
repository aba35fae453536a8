package guardrails

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// namesDir holds one directory per case: catalog.json and cases.json (see its
// README.md). Add a directory or a case, not a test function.
const namesDir = "../testdata/names"

type namesFile struct {
	Errors           []string                                             `json:"errors"`
	ReportedModel    []struct{ Connector, Direct, Reported, Want string } `json:"reported_model"`
	ReportedProvider []struct{ Connector, Reported, Want string }         `json:"reported_provider"`
	ReportedName     []struct{ Connector, Provider, Want string }         `json:"reported_name"`
	Send             []struct{ Connector, Entry, Want string }            `json:"send"`
	UpstreamID       []struct{ Connector, Model, Want string }            `json:"upstream_id"`
}

func TestNameMaps(t *testing.T) {
	dirs, err := os.ReadDir(namesDir)
	require.NoError(t, err)
	ran := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		ran++
		t.Run(d.Name(), func(t *testing.T) {
			dir := filepath.Join(namesDir, d.Name())
			raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
			require.NoError(t, err)
			var f namesFile
			require.NoError(t, json.Unmarshal(raw, &f))
			cat, diags := LoadCatalog(dir)
			if f.Errors != nil {
				require.Len(t, diags, len(f.Errors), "%v", diags)
				for i, want := range f.Errors {
					require.True(t, strings.HasPrefix(diags[i].String(), want), "diagnostic %d:\n got  %s\n want %s", i, diags[i], want)
				}
				return
			}
			require.Empty(t, diags)
			for _, c := range f.ReportedModel {
				got, ok := cat.ReportedModel(c.Connector, c.Direct, c.Reported)
				require.Equal(t, c.Want, got, "%s reports model %q", c.Connector, c.Reported)
				require.Equal(t, c.Want != "", ok)
			}
			for _, c := range f.ReportedProvider {
				got, ok := cat.ReportedProvider(c.Connector, c.Reported)
				require.Equal(t, c.Want, got, "%s reports provider %q", c.Connector, c.Reported)
				require.Equal(t, c.Want != "", ok)
			}
			for _, c := range f.ReportedName {
				got := cat.ReportedName(c.Connector, c.Provider)
				require.Equal(t, c.Want, got, "%s names provider %q", c.Connector, c.Provider)
				base, _, _ := strings.Cut(strings.ToLower(c.Provider), "/")
				back, ok := cat.ReportedProvider(c.Connector, got)
				require.True(t, ok && back == base, "%s's name %q for %q reads back as %q", c.Connector, got, c.Provider, back)
			}
			for _, c := range f.Send {
				require.Equal(t, c.Want, cat.SendName(c.Connector, c.Entry), "%s spells %q", c.Connector, c.Entry)
			}
			for _, c := range f.UpstreamID {
				require.Equal(t, c.Want, cat.UpstreamID(c.Connector, c.Model), "%s id of %q", c.Connector, c.Model)
			}
		})
	}
	require.NotZero(t, ran)
}

// TestTrimVersion: a trailing date or version suffix is recognised only
// when it is a plausible date.
func TestTrimVersion(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o-2024-08-06":                   "gpt-4o",
		"openai/gpt-5.4-nano-20260317":        "openai/gpt-5.4-nano",
		"gpt-4-0613":                          "gpt-4",
		"moonshotai/kimi-k2.5-0127":           "moonshotai/kimi-k2.5",
		"claude-3-5-sonnet-20241022":          "claude-3-5-sonnet",
		"gpt-4o":                              "",
		"llama-3.1-70b":                       "",
		"model-1234":                          "",
		"model-20241399":                      "",
		"x-2024-13-01":                        "",
		"06":                                  "",
		"anthropic/claude-4.5-haiku-20251001": "anthropic/claude-4.5-haiku",
	} {
		require.Equal(t, want, TrimVersion(in), in)
	}
}
