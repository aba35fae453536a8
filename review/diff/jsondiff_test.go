package diff

import (
	"encoding/json"
	"testing"
)

func TestJSONDiff(t *testing.T) {
	a := `{"model":"m","provider":{"sort":"latency","order":["a","b"]},"models":["x"],"a/b":1}`
	b := `{"provider":{"order":["b","a"],"sort":"latency","only":["a"]},"model":"m","a/b":2}`
	got, _ := json.Marshal(jsonDiff([]byte(a), []byte(b)))
	want := `[{"field":"/a~1b","base":1,"head":2},{"field":"/models","base":["x"]},{"field":"/provider/only","head":["a"]},{"field":"/provider/order","base":["a","b"],"head":["b","a"]}]`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if d := jsonDiff([]byte(`{"a":1,"b":2}`), []byte(`{"b":2,"a":1}`)); len(d) != 0 {
		t.Fatalf("member order is not a change: %v", d)
	}
}
