package profiles

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIndexTOMLLines(t *testing.T) {
	src := `# comment
[server]
listen = "x"

[[upstreams]]
name = "a"

[[upstreams]]
name = "b"
content_filters = [
  "one",
  "two",
]

[[routes]]
model = "m"
[[routes.targets]]
upstream = "a"
[[routes.targets]]
upstream = "b"
limits = { retries = 3 }

[[routes]]
model = "n"
[[routes.targets]]
upstream = "c"
`
	doc, pos, diag := decodeTOML("sluice.toml", []byte(src))
	require.Nil(t, diag)
	require.NotNil(t, doc)
	for ptr, want := range map[string]int{
		"/server/listen":                     3,
		"/upstreams/0/name":                  6,
		"/upstreams/1":                       8,
		"/upstreams/1/name":                  9,
		"/upstreams/1/content_filters":       10,
		"/upstreams/1/content_filters/1":     12,
		"/routes/0/targets/0/upstream":       18,
		"/routes/0/targets/1/upstream":       20,
		"/routes/0/targets/1/limits/retries": 21,
		"/routes/1/model":                    24,
		"/routes/1/targets/0/upstream":       26,
		"/routes/1/targets/0/missing":        25,
	} {
		require.Equal(t, want, pos.line(ptr), ptr)
	}
}

func TestDecodeTOMLSyntaxErrorIsLocated(t *testing.T) {
	_, _, diag := decodeTOML("p.toml", []byte("a = 1\nb = [\n"))
	require.NotNil(t, diag)
	require.Equal(t, CodeTOMLSyntax, diag.Code)
	require.Greater(t, diag.Line, 1)
}
