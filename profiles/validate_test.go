package profiles

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckRoutesBounds: routes that reach CheckRoutes without the schema
// (from the state store) get the same bounds: weights at most MaxWeight,
// aliases printable slugs of at most MaxAliasLen bytes.
func TestCheckRoutesBounds(t *testing.T) {
	known := func(string) bool { return true }
	for _, tc := range []struct {
		name  string
		route Route
		code  string
		at    string
	}{
		{"weight of 2^62", Route{Model: "w", Targets: []Target{{Upstream: "u", Weight: 1 << 62}}}, CodeWeightRange, "routes/0/targets/0/weight"},
		{"weight one above", Route{Model: "w", Targets: []Target{{Upstream: "u", Weight: MaxWeight + 1}}}, CodeWeightRange, "routes/0/targets/0/weight"},
		{"NUL", Route{Model: "a\x00", Targets: []Target{{Upstream: "u"}}}, CodeInvalidAlias, "routes/0/model"},
		{"CR LF", Route{Model: "a\r\nb", Targets: []Target{{Upstream: "u"}}}, CodeInvalidAlias, "routes/0/model"},
		{"bidi override", Route{Model: "\u202egpt", Targets: []Target{{Upstream: "u"}}}, CodeInvalidAlias, "routes/0/model"},
		{"60 KB", Route{Model: strings.Repeat("a", 60<<10), Targets: []Target{{Upstream: "u"}}}, CodeInvalidAlias, "routes/0/model"},
		{"ok at the bounds", Route{Model: strings.Repeat("a", MaxAliasLen-6) + "/b:c.d", Targets: []Target{{Upstream: "u", Weight: MaxWeight}}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := CheckRoutes([]Route{tc.route}, known)
			if tc.code == "" {
				require.Empty(t, probs)
				return
			}
			require.Len(t, probs, 1, "%v", probs)
			require.Equal(t, tc.code, probs[0].Code)
			require.Equal(t, tc.at, strings.Join(probs[0].Tokens, "/"))
		})
	}
}
