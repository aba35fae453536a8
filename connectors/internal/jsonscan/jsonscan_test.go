package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connectorsCorpus holds the connectors' recorded requests, answers and
// streams: the seeds of this package's fuzzers.
const connectorsCorpus = "../../../testdata/connectors"

// caseDirs lists the directories of a corpus that hold the named input file.
func caseDirs(t testing.TB, corpus, input string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpus, "*", input))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no %s in %s", input, corpus)
	dirs := make([]string, len(paths))
	for i, p := range paths {
		dirs[i] = filepath.Dir(p)
	}
	return dirs
}

// addCorpusJSON seeds a fuzzer with every JSON document of the connectors'
// corpus: requests, answers, and the data of each stream event.
func addCorpusJSON(f *testing.F) {
	for _, pattern := range []string{"*/*/*.json", "*/*/*.jsonl", "*/*/stream.sse"} {
		paths, err := filepath.Glob(filepath.Join(connectorsCorpus, pattern))
		require.NoError(f, err)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			if filepath.Ext(p) == ".json" {
				f.Add(b)
				continue
			}
			for _, line := range bytes.Split(b, []byte("\n")) {
				line, _ = bytes.CutPrefix(line, []byte("data: "))
				if json.Valid(line) {
					f.Add(line)
				}
			}
		}
	}
}

// marshal is the reference encoder: encoding/json without HTML escaping.
func marshal(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func TestMember(t *testing.T) {
	obj := []byte(` { "a" : [1, {"b": "}"}], "s":"x\"y" ,"n": -1.5e3, "o": {"t": true}, "e": "" } `)
	for key, want := range map[string]string{
		"a": `[1, {"b": "}"}]`, "s": `"x\"y"`, "n": `-1.5e3`, "o": `{"t": true}`, "e": `""`, "b": "", "t": "",
	} {
		assert.Equal(t, want, string(Member(obj, key)), key)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"`, `{"a":`, `{"a":"`, `"a"`} {
		assert.Nil(t, Member([]byte(bad), "a"), bad)
	}
	assert.Equal(t, 12, SmallInt([]byte("12")))
	assert.Equal(t, -1, SmallInt([]byte("-1")))
	assert.Equal(t, -1, SmallInt([]byte("1e3")))
	assert.Equal(t, -1, SmallInt(nil))
}

// appendStringCases are the table of TestAppendString and the seeds of
// FuzzAppendString.
var appendStringCases = []string{"", "plain", "\"\\/\b\f\n\r\t\x00\x1f\x7f", "<>&", "é\u2028\u2029😀", "\xff\xc3(\xed\xa0\x80", "\ufffd"}

// AppendString escapes as encoding/json does without HTML escaping.
func TestAppendString(t *testing.T) {
	for _, s := range appendStringCases {
		assert.Equal(t, string(marshal(t, s)), string(AppendString(nil, s)), "%q", s)
	}
}

// FuzzAppendString: for any string, what encoding/json writes without HTML
// escaping, appended after what dst held.
func FuzzAppendString(f *testing.F) {
	for _, s := range appendStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString([]byte("x"), s)
		if want := "x" + string(marshal(t, s)); string(got) != want {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got[1:], want[1:])
		}
	})
}

// FuzzScanString: when ScanString decodes a string, encoding/json decodes
// the same bytes to the same string; StringEnd agrees on where it ends.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{
		`""`, `"plain"`, `"tab\tquote\"back\\slash\/ nl\n cr\r bs\b ff\f"`,
		`"\u00e9\u2028\u2029\ud83d\ude00 \ud83d alone \ude00 low \ud83d\u0041 \u0000\u001f"`,
		`"é ü 日本 😀"`, "\"bad \xff utf8\"", `"a\q"`, `"a\u12"`, "\"a\x01\"", `"unterminated`, `"x" trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, end, ok := ScanString(b, 0)
		end2, escaped, ok2 := StringEnd(b, 0)
		if ok != ok2 || end != end2 {
			t.Fatalf("%q: ScanString ends at %d (%v), StringEnd at %d (%v)", b, end, ok, end2, ok2)
		}
		if !ok {
			return
		}
		if escaped != (bytes.IndexByte(b[:end], '\\') >= 0) {
			t.Fatalf("%q: StringEnd says escaped %v", b, escaped)
		}
		var want string
		if err := json.Unmarshal(b[:end], &want); err != nil {
			t.Fatalf("ScanString accepted %q, which encoding/json refuses: %v", b[:end], err)
		}
		if s != want {
			t.Fatalf("ScanString(%q) = %q, encoding/json %q", b[:end], s, want)
		}
	})
}

// FuzzScannerValue: whatever the bytes, when the strict Scanner accepts a
// whole document it is valid JSON of valid UTF-8; NumberText accepts only
// what encoding/json reads as one number; Member, on valid JSON, finds a
// value that is valid JSON itself.
func FuzzScannerValue(f *testing.F) {
	addCorpusJSON(f)
	for _, s := range []string{`{}`, `[]`, `null`, ` 1.5e-3 `, `-0`, `01`, `{"a":[1,{"b":"\u00e9"}]} x`, `{"a":tru}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewScanner(b)
		if end, ok := s.Value(s.Space(0), 0); ok && s.Space(end) == len(b) {
			if !json.Valid(b) || !utf8.Valid(b) {
				t.Fatalf("Scanner accepted %q, which is not valid JSON of valid UTF-8", b)
			}
		}
		if num := NumberText(b); num != nil {
			var n json.Number
			if err := json.Unmarshal(b, &n); err != nil || string(n) != string(num) {
				t.Fatalf("NumberText(%q) = %q; encoding/json reads %q, %v", b, num, n, err)
			}
		}
		if json.Valid(b) {
			for _, key := range []string{"model", "a", "type"} {
				if v := Member(b, key); v != nil && !json.Valid(v) {
					t.Fatalf("Member(%q, %q) = %q, not a JSON value", b, key, v)
				}
			}
		}
	})
}

// FuzzAppendRaw: AppendRaw accepts exactly the valid JSON documents and
// writes what encoding/json writes for them as a json.RawMessage.
func FuzzAppendRaw(f *testing.F) {
	addCorpusJSON(f)
	for _, s := range []string{` { "a" : [ 1 , "b c" , "\" x" ] } `, "\t\n null \r", `"<&>"`, `{"a":`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := AppendRaw([]byte("x"), b)
		if ok != json.Valid(b) {
			t.Fatalf("AppendRaw(%q) ok = %v, json.Valid %v", b, ok, !ok)
		}
		if !ok {
			if string(got) != "x" {
				t.Fatalf("AppendRaw(%q) refused but changed dst: %q", b, got)
			}
			return
		}
		if want := "x" + string(marshal(t, json.RawMessage(b))); string(got) != want {
			t.Fatalf("AppendRaw(%q) = %s, encoding/json %s", b, got[1:], want[1:])
		}
	})
}
