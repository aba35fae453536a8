package connectors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// headCases are answers and chunks of the OpenAI shape, plain and odd: the
// table of TestScanHead and the seeds of FuzzScanHead.
var headCases = []struct {
	body string
	fast bool // scanHead decodes it itself (else encoding/json does)
}{
	{`{"id":"c1","object":"chat.completion","model":"openai/gpt-4o","provider":"OpenAI","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}`, true},
	{`{"id":"c2","choices":[{"delta":{"content":"tok"},"finish_reason":null}]}`, true},
	{` {"model":"m","choices":[],"usage":null} `, true},
	{`{"choices":[null,{"finish_reason":"length"}],"usage":{"prompt_tokens":-1,"completion_tokens":0,"prompt_tokens_details":null}}`, true},
	{`{"model":"caf\u00e9 \"q\"","x":[1,-2.5e+3,true,false,null,{"a":[{}]}],"y":"\ud83d\ude00"}`, true},
	{`{}`, true},
	{`null`, false},
	{`[]`, false},
	{`{"Model":"folded"}`, false},
	{`{"MODEL":"folded","model":"exact"}`, false},
	{`{"mod\u0065l":"escaped key"}`, false},
	{`{"model":"a","model":"b"}`, false},
	{`{"model":5}`, false},
	{`{"usage":{"prompt_tokens":1.5}}`, false},
	{`{"usage":{"prompt_tokens":1e3}}`, false},
	{`{"usage":{"prompt_tokens":"12"}}`, false},
	{`{"usage":{"prompt_tokens":99999999999999999999}}`, false},
	{`{"choices":[{"finish_reason":7}]}`, false},
	{`{"choices":{"finish_reason":"stop"}}`, false},
	{`{"model":"a",}`, false},
	{`{"model":"a"} x`, false},
	{`{"x":01}`, false},
	{`{"x":"\x01"}`, false},
	{"{\"model\":\"\xff\"}", false},
	{`{"x":tru}`, false},
	{`{"model":"a"`, false},
	{``, false},
}

// headFromJSON is the reference: what encoding/json decodes.
func headFromJSON(b []byte) (completionHead, error) {
	var h completionHead
	err := json.Unmarshal(b, &h)
	return h, err
}

// sameHead compares what readHead uses of two heads (an empty and a nil
// choices list read the same).
func sameHead(a, b completionHead) bool {
	if len(a.Choices) == 0 && len(b.Choices) == 0 {
		a.Choices, b.Choices = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func checkScanHead(t *testing.T, b []byte) bool {
	t.Helper()
	var h completionHead
	fast := scanHead(b, &h)
	if !fast {
		return false
	}
	want, err := headFromJSON(b)
	if err != nil {
		t.Fatalf("scanHead accepted %q, which encoding/json refuses: %v", b, err)
	}
	if !sameHead(h, want) {
		t.Fatalf("scanHead(%q) = %+v, encoding/json %+v", b, h, want)
	}
	return true
}

// TestScanHead: the scanner decodes the plain shapes as encoding/json does
// and leaves every odd one to it.
func TestScanHead(t *testing.T) {
	for _, tc := range headCases {
		if got := checkScanHead(t, []byte(tc.body)); got != tc.fast {
			t.Errorf("scanHead(%s) handled = %v, want %v", tc.body, got, tc.fast)
		}
		var res, ref Result
		err := readHead([]byte(tc.body), &res)
		h, jerr := headFromJSON([]byte(tc.body))
		if (err == nil) != (jerr == nil) {
			t.Errorf("readHead(%s) error %v, encoding/json %v", tc.body, err, jerr)
		}
		if jerr == nil {
			ref = resultOf(h)
			if !reflect.DeepEqual(res, ref) {
				t.Errorf("readHead(%s) = %+v, want %+v", tc.body, res, ref)
			}
		}
	}
}

// resultOf is readHead's mapping applied to a decoded head.
func resultOf(h completionHead) Result {
	var r Result
	applyHead(&h, &r)
	return r
}

// readHeadJSON is readHead through encoding/json alone.
func readHeadJSON(b []byte, res *Result) error {
	var h completionHead
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	applyHead(&h, res)
	return nil
}

// FuzzScanHead: whatever the bytes, when scanHead decodes them they are
// valid JSON and it decodes what encoding/json does. Seeded from the table
// and the recorded answers of testdata/connectors.
func FuzzScanHead(f *testing.F) {
	for _, tc := range headCases {
		f.Add([]byte(tc.body))
	}
	files, _ := filepath.Glob("../testdata/connectors/*/*/openai.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanHead(t, b)
	})
}

func BenchmarkReadHead(b *testing.B) {
	body := []byte(headCases[0].body)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Result
			if err := readHead(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Result
			if err := readHeadJSON(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
