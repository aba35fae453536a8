package request

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const corpus = "../../testdata/requests"

func outcome(raw []byte) string {
	r, e := Parse(raw)
	if e != nil {
		p := e.Param
		if p == "" {
			p = "-"
		}
		return fmt.Sprintf("error %d %s %s", e.Status(), e.Code, p)
	}
	return fmt.Sprintf("ok model=%s stream=%t routing=%t", r.Model, r.Stream, r.Routing != nil)
}

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".want")
			require.NoError(t, err)
			require.Equal(t, strings.TrimSpace(string(want)), outcome(raw))
		})
	}
}

func TestRoutingIsNotForwarded(t *testing.T) {
	r, e := Parse([]byte(`{"model":"a/b","messages":[{"role":"user","content":"x"}],"routing":{"fallbacks":[]},"seed":1}`))
	require.Nil(t, e)
	_, ok := r.Body["routing"]
	require.False(t, ok)
	require.Contains(t, r.Body, "seed")
	require.NotNil(t, r.Routing.Fallbacks)
	require.Empty(t, *r.Routing.Fallbacks)
}

// FuzzParse checks that every input is either accepted with a model and
// messages, or refused with a known code and a 4xx status.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*.json"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, e := Parse(raw)
		if e != nil {
			require.Nil(t, r)
			require.GreaterOrEqual(t, e.Status(), 400)
			require.Less(t, e.Status(), 500)
			return
		}
		require.NotEmpty(t, r.Model)
		for k := range r.Body {
			require.NotEqual(t, "routing", k)
		}
	})
}
