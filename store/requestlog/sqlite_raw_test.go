package requestlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestSQLiteBindRowCoversRowColumns: bindRow passes one value for every
// name in rowColumns (a column added to one and not the other fails here,
// and every insert would fail too).
func TestSQLiteBindRowCoversRowColumns(t *testing.T) {
	b := &rowBinder{measure: true, param: 1}
	r := sampleRows(1)[0]
	bindRow(b, &r)
	require.Equal(t, len(rowColumns), int(b.param-1))
}

// TestSQLiteStoresEachColumnsType: every column holds the SQLite type the
// database/sql driver stored before the write connection existed: INTEGER
// for integers and booleans, REAL for the floats, TEXT for the strings and
// the JSON lists ("" too, which must not become NULL).
func TestSQLiteStoresEachColumnsType(t *testing.T) {
	s := openSQLiteForTest(t)
	in := []Row{{TS: baseTS, RequestID: "r-types", Stream: true, CostUSD: 1, LatencyMS: 2}}
	require.NoError(t, s.Insert(testCtx(t), in))
	db := s.(*sqliteStore).db
	real := map[string]bool{"cost_usd": true, "latency_ms": true, "ttft_ms": true}
	integer := map[string]bool{"ts_ms": true, "attempts": true, "status": true, "stream": true, "cache_hit": true,
		"representation_break": true, "cache_discount_applied": true, "prompt_tokens": true, "completion_tokens": true,
		"request_routing": true, "cached_tokens": true, "reasoning_tokens": true, "responses": true, "close_code": true}
	for _, col := range rowColumns {
		var typ string
		require.NoError(t, db.QueryRow("SELECT typeof("+col+") FROM requests").Scan(&typ))
		want := "text"
		switch {
		case real[col]:
			want = "real"
		case integer[col]:
			want = "integer"
		}
		require.Equal(t, want, typ, col)
	}
	var chain, degraded string
	require.NoError(t, db.QueryRow("SELECT chain, routing_degraded FROM requests").Scan(&chain, &degraded))
	require.Equal(t, "[]", chain)
	require.Equal(t, "[]", degraded)
}

// TestSQLiteStoresTextExactly: text values are stored byte for byte —
// empty, with NUL bytes, non-ASCII, invalid UTF-8, and larger than the
// write connection's first text buffer — across statements and batches
// that reuse the buffer.
func TestSQLiteStoresTextExactly(t *testing.T) {
	s := openSQLiteForTest(t)
	odd := []string{"", "a\x00b", "naïve ☃", "\xff\xfe", strings.Repeat("x", 300<<10), `"<&>"\`}
	var in []Row
	for i, v := range odd {
		r := sampleRows(1)[0]
		r.RequestID = fmt.Sprintf("odd-%d", i)
		r.TS = baseTS.Add(time.Duration(i) * time.Second)
		r.Org, r.Team, r.ConfigRevision, r.FallbackReason = v, v+"t", v, ""
		if utf8.ValidString(v) { // JSON has no invalid UTF-8: json.Marshal writes U+FFFD
			r.Chain = []string{v, "m"}
			r.RoutingDegraded = []string{v}
		}
		in = append(in, r)
	}
	// Two batches: the second reuses what the large value grew.
	require.NoError(t, s.Insert(testCtx(t), in[:5]))
	more := sampleRows(40)
	for i := range more {
		more[i].RequestID = fmt.Sprintf("more-%02d", i)
	}
	require.NoError(t, s.Insert(testCtx(t), append(more, in[5])))
	got := queryAll(t, s, Filter{})
	require.Equal(t, newestFirst(append(append([]Row{}, in...), more...)), got)
}

// TestAppendJSONStringsIsJSONMarshal: list columns hold exactly the bytes
// json.Marshal gives the normalized list.
func TestAppendJSONStringsIsJSONMarshal(t *testing.T) {
	for _, l := range [][]string{
		{}, {""}, {"openai/gpt-4o", "anthropic/claude-sonnet-4.5"}, {"a\"b", `c\d`, "<>&", "\n\t\x00", "\u2028\u2029"},
		{"naïve", "\xff", "ok"}, {"x~", " ", "\x7f"},
	} {
		want, err := json.Marshal(l)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSONStrings(nil, l)), "%q", l)
	}
	require.Equal(t, "[]", string(appendJSONStrings(nil, nil)))
}

func FuzzAppendJSONStrings(f *testing.F) {
	for _, s := range []string{"", "a", "<", "\x00", "\xff", "é", "\u2028"} {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want, _ := json.Marshal([]string{a, b})
		if got := appendJSONStrings(nil, []string{a, b}); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", []string{a, b}, got, want)
		}
	})
}

func TestSQLiteInsertAfterCloseFails(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "requests.db"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.ErrorContains(t, s.Insert(t.Context(), sampleRows(1)), "closed")
}

// TestSQLiteInsertEndsWithItsContext: an insert whose context has ended
// stores nothing, and one waiting for another writer's lock gives up when
// its context ends instead of waiting out the busy timeout; the next
// insert, once the lock is free, stores every row once.
func TestSQLiteInsertEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.db")
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	rows := sampleRows(40)

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.Insert(canceled, rows), context.Canceled)

	other, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer other.Close()
	other.SetMaxOpenConns(1)
	_, err = other.Exec("BEGIN IMMEDIATE")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = s.Insert(short, rows)
	require.ErrorIs(t, err, context.DeadlineExceeded, "gave up on the lock when the context ended, not at the busy timeout")
	_, err = other.Exec("ROLLBACK")
	require.NoError(t, err)

	require.NoError(t, s.Insert(t.Context(), rows))
	require.Equal(t, newestFirst(rows), queryAll(t, s, Filter{}))
}

// TestWriterToSQLiteKeepsEveryRowsValues: rows through the writer in
// several batches (the writer reuses a batch's storage for the next) reach
// the store with their own values.
func TestWriterToSQLiteKeepsEveryRowsValues(t *testing.T) {
	s := openSQLiteForTest(t)
	w := NewWriter(s, WriterOptions{BatchSize: 16, QueueSize: 100, FlushInterval: time.Hour})
	in := sampleRows(70)
	for i := range in {
		r := in[i]
		w.Enqueue(&r)
	}
	require.NoError(t, w.Close(testCtx(t)))
	require.Equal(t, uint64(len(in)), w.Stats().WrittenRows)
	require.Equal(t, newestFirst(in), queryAll(t, s, Filter{}))
}
