package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendStripped: members are removed by exact name at the top level
// only, the rest is copied byte for byte and in order; anything the walk
// cannot take exactly is refused (and left to encoding/json by StripInto).
func TestAppendStripped(t *testing.T) {
	names := []string{"provider", "openrouter_metadata"}
	tests := []struct {
		name, in, want string
		refused        bool
	}{
		{name: "first member", in: `{"provider":"A","id":"x"}`, want: `{"id":"x"}`},
		{name: "last member", in: `{"id":"x","provider":"A"}`, want: `{"id":"x"}`},
		{name: "middle member, order kept", in: `{"z":1,"provider":"A","a":[1,{"b":null}]}`, want: `{"z":1,"a":[1,{"b":null}]}`},
		{name: "every member", in: `{"provider":"A","openrouter_metadata":{"attempt":2}}`, want: `{}`},
		{name: "nested names stay", in: `{"choices":[{"provider":"A"}],"m":{"openrouter_metadata":1}}`, want: `{"choices":[{"provider":"A"}],"m":{"openrouter_metadata":1}}`},
		{name: "a value that spells a name stays", in: `{"content":"\"provider\""}`, want: `{"content":"\"provider\""}`},
		{name: "repeated name, all removed", in: `{"provider":"A","id":1,"provider":"B"}`, want: `{"id":1}`},
		{name: "other case stays", in: `{"Provider":"A"}`, want: `{"Provider":"A"}`},
		{name: "whitespace between members dropped, inside values kept", in: " {\n \"id\" : \"x\" ,\n \"provider\" : \"A\",\n \"m\": [1, 2]\n}\n", want: `{"id" : "x","m": [1, 2]}`},
		{name: "empty object", in: ` {} `, want: `{}`},
		{name: "escaped key refused", in: `{"provid\u0065r":"A"}`, refused: true},
		{name: "not an object", in: `["provider"]`, refused: true},
		{name: "truncated", in: `{"provider":"A","id":`, refused: true},
		{name: "trailing garbage", in: `{"provider":"A"} x`, refused: true},
		{name: "extra closing brace", in: `{"provider":null}}`, refused: true},
		{name: "missing comma", in: `{"provider":"A" "id":1}`, refused: true},
		{name: "invalid UTF-8", in: "{\"id\":\"\xff\",\"provider\":\"A\"}", refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("prefix:")
			got, ok := appendStripped(dst, []byte(tc.in), names)
			require.Equal(t, !tc.refused, ok)
			if tc.refused {
				require.Equal(t, "prefix:", string(got), "dst unchanged")
				return
			}
			require.Equal(t, "prefix:"+tc.want, string(got))
		})
	}
}

// stripReference is what stripping means: decode, delete the names, compare
// as values.
func stripReference(t testing.TB, b []byte, names []string) (map[string]any, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return nil, false
	}
	for _, n := range names {
		delete(m, n)
	}
	return m, true
}

// FuzzStripMembers holds the byte-level strip to the meaning of stripping:
// what it returns decodes to the input's members without the names, and it
// only accepts valid JSON. Seeded from the OpenAI-shaped corpora.
func FuzzStripMembers(f *testing.F) {
	for _, kind := range []string{"openai", "openrouter", "vercel"} {
		for _, dir := range caseDirs(f, filepath.Join(connectorsCorpus, kind), "*") {
			if b, err := os.ReadFile(filepath.Join(dir, "answer.json")); err == nil {
				f.Add(b)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "stream.sse")); err == nil {
				for _, line := range bytes.Split(b, []byte("\n")) {
					if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
						f.Add(data)
					}
				}
			}
		}
	}
	names := []string{"provider", "openrouter_metadata", "providerMetadata"}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := appendStripped(nil, b, names)
		want, valid := stripReference(t, b, names)
		if ok {
			require.True(t, json.Valid(b), "accepted invalid JSON: %q", b)
			require.True(t, valid, "accepted a non-object: %q", b)
			have, valid := stripReference(t, got, nil)
			require.True(t, valid, "produced invalid JSON from %q: %q", b, got)
			require.Equal(t, want, have, "from %q", b)
		}
		// StripMembers, whichever path it takes, leaves no name at the top.
		out := StripMembers(b, names...)
		if valid {
			have, ok := stripReference(t, out, nil)
			require.True(t, ok, "StripMembers produced invalid JSON from %q: %q", b, out)
			require.Equal(t, want, have, "StripMembers of %q", b)
		} else {
			require.Equal(t, b, out, "an input that is not an object is returned as it was")
		}
	})
}
