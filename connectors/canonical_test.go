package connectors

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCanonicalJSON: documents that differ only in member order and
// spacing read the same; every other difference stays one; the output is
// the same document; what is not one document is an error.
func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{` { "model" : "m" , "messages" : [ {"role":"user","content":"hi"} ] } `, `{"messages":[{"content":"hi","role":"user"}],"model":"m"}`},
		{`{"x":{"z":[1,{"q":null,"p":true}],"y":"s"}}`, `{"x":{"y":"s","z":[1,{"p":true,"q":null}]}}`},
		{`{"s":"a \" } ] , b","t":"\\"}`, `{"t":"\\","s":"a \" } ] , b"}`},
		{`[]`, `[ ]`},
		{`{}`, `{ }`},
		{`-1.5e3`, ` -1.5e3 `},
	} {
		ca, err := CanonicalJSON([]byte(tc.a))
		require.NoError(t, err, tc.a)
		cb, err := CanonicalJSON([]byte(tc.b))
		require.NoError(t, err, tc.b)
		require.Equal(t, string(ca), string(cb))
		var va, vc any
		require.NoError(t, json.Unmarshal([]byte(tc.a), &va))
		require.NoError(t, json.Unmarshal(ca, &vc), string(ca))
		require.Equal(t, va, vc, "the same document")
	}
	for _, tc := range []struct{ a, b string }{
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":"x"}`, `{"a":"y"}`},
		{`{"a":1}`, `{"a":"1"}`},
		{`{"a":{"b":1}}`, `{"a":{"c":1}}`},
		{`{"ab":1}`, `{"a":1,"b":1}`},
		{`["a,b"]`, `["a","b"]`},
	} {
		ca, _ := CanonicalJSON([]byte(tc.a))
		cb, _ := CanonicalJSON([]byte(tc.b))
		require.NotEqual(t, string(ca), string(cb), "%s vs %s", tc.a, tc.b)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `"open`, `{"a":1}x`, `{a:1}`, `nope`, `{"a":1}{}`} {
		_, err := CanonicalJSON([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

// FuzzCanonicalJSON: whatever decodes as JSON canonicalises to the same
// value, and canonicalising is idempotent.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,{"d":"x","c":-0.5}]}`, `[]`, `"s"`, `{"a":"\u00e9\"","a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		c, err := CanonicalJSON(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		var w any
		if err := json.Unmarshal(c, &w); err != nil {
			t.Fatalf("%q gave %q: %v", b, c, err)
		}
		if d, _ := CanonicalJSON(c); string(d) != string(c) {
			t.Fatalf("not idempotent: %q then %q", c, d)
		}
		if !hasDuplicateKeys(b) {
			require.Equal(t, v, w)
		}
	})
}

// hasDuplicateKeys is a conservative test: an object with a key twice
// decodes to its last value, whose position sorting may change.
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []map[string]bool
	var expectKey []bool
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = append(expectKey, true)
				continue
			case '[':
				stack = append(stack, nil)
				expectKey = append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1] != nil && expectKey[n-1] {
				if stack[n-1][x] {
					return true
				}
				stack[n-1][x] = true
				expectKey[n-1] = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			expectKey[n-1] = true
		}
	}
}
