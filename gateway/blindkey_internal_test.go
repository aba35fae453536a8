package gateway

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyShapesTable: the recognised key shapes are exactly the table in
// testdata/callerkeys/shapes.json (which names each prefix's source), tried
// in its order; the shapes it lists as unknown name no upstream.
func TestKeyShapesTable(t *testing.T) {
	raw, err := os.ReadFile("../testdata/callerkeys/shapes.json")
	require.NoError(t, err)
	var table struct {
		Shapes []struct {
			Prefix, Connector, Source string
		} `json:"shapes"`
		Unknown []string `json:"unknown"`
	}
	require.NoError(t, json.Unmarshal(raw, &table))
	require.Len(t, keyShapes, len(table.Shapes))
	for i, s := range table.Shapes {
		require.NotEmpty(t, s.Source, s.Prefix)
		require.Equal(t, keyShape{s.Prefix, s.Connector}, keyShapes[i])
		got, ok := keyConnector(s.Prefix + "0123456789abcdef")
		require.True(t, ok, s.Prefix)
		require.Equal(t, s.Connector, got, s.Prefix)
	}
	for _, k := range table.Unknown {
		_, ok := keyConnector(k)
		require.False(t, ok, k)
	}
}
