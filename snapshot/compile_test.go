package snapshot

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/gateway/request"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/compile")

const compileDir = "../testdata/compile"

type compileCase struct {
	Key      string          `json:"key"`
	Upstream string          `json:"upstream"`
	Request  json.RawMessage `json:"request"`
	// Session and PinnedProvider are the request's session id and its
	// pin's provider (both optional).
	Session        string `json:"session"`
	PinnedProvider string `json:"pinned_provider"`
	// API is the request's API: "" (chat completions) or "messages", with
	// Beta its anthropic-beta header values.
	API  string   `json:"api"`
	Beta []string `json:"beta"`
}

// TestCompileCorpus compiles every case of testdata/compile/cases against
// testdata/compile/config and compares the explain JSON with its golden file.
// Run with -update to regenerate, then review the diff.
func TestCompileCorpus(t *testing.T) {
	snap, diags := Load(filepath.Join(compileDir, "config"))
	require.Empty(t, diags)
	files, err := filepath.Glob(filepath.Join(compileDir, "cases", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			got := explainCase(t, snap, f)
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./snapshot -update and review the diff")
			require.Equal(t, string(want), string(got))
		})
	}
}

func explainCase(t *testing.T, snap *Snapshot, file string) []byte {
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var c compileCase
	require.NoError(t, json.Unmarshal(raw, &c))
	key := snap.Config.KeyByID(c.Key)
	require.NotNil(t, key, c.Key)
	req, perr := request.Parse(c.Request)
	if c.API == "messages" {
		req, perr = request.ParseMessages(c.Request, c.Beta)
	}
	require.Nil(t, perr)
	e, err := snap.ExplainFor(context.Background(), key, &compiler.Request{Model: req.Model, Routing: req.Routing, Session: c.Session, PinnedProvider: c.PinnedProvider}, req.Body, req.Inbound, c.Upstream)
	require.NoError(t, err)
	out, err := json.MarshalIndent(e, "", "  ")
	require.NoError(t, err)
	return append(out, '\n')
}
