package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedSchemasCompile(t *testing.T) {
	for _, name := range []string{Sluice, Profile, Routing} {
		require.Empty(t, Validate(name, map[string]any{}), name)
	}
	// Each schema is compiled on first use: every embedded one is known
	// and compiles.
	entries, err := files.ReadDir(".")
	require.NoError(t, err)
	require.Len(t, compiled, len(entries))
	for _, e := range entries {
		get, ok := compiled[e.Name()]
		require.True(t, ok, e.Name())
		_, err := get()
		require.NoError(t, err, e.Name())
	}
}

func TestValidateReportsEveryViolationWithPointer(t *testing.T) {
	doc := map[string]any{
		"fallbacks": []any{"openai/gpt-4o", 3},
		"providers": map[string]any{"rank_by": "speed", "bogus": true},
		"extra":     1,
	}
	got := Validate(Profile, doc)
	var pointers []string
	for _, v := range got {
		pointers = append(pointers, v.Pointer)
	}
	require.Equal(t, []string{"", "/fallbacks/1", "/providers", "/providers/rank_by"}, pointers)
}

func TestNormalizeTOMLShapes(t *testing.T) {
	doc := map[string]any{"keys": []map[string]any{{"id": "k", "sha256": "00", "org": "o", "team": "t", "project": "p"}}}
	got := Validate(Sluice, doc)
	require.Len(t, got, 1)
	require.Equal(t, "/keys/0/sha256", got[0].Pointer)
}

func TestValidateDef(t *testing.T) {
	require.Empty(t, ValidateDef(Sluice, "target", map[string]any{"upstream": "u", "takes_over": []any{"refusal:hate"}}))
	got := ValidateDef(Sluice, "route", map[string]any{"model": "m", "targets": []any{map[string]any{"takes_over": []any{"sometimes"}}}, "bogus": 1})
	var pointers []string
	for _, v := range got {
		pointers = append(pointers, v.Pointer)
	}
	require.Equal(t, []string{"", "/targets/0", "/targets/0/takes_over/0"}, pointers)
}
