package requestlog

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func spoolRows(prefix string, n int) []Row {
	out := make([]Row, n)
	for i, id := range rowIDs(prefix, n) {
		// A fixed TS: every line has the same length, which the bound test relies on.
		out[i] = Row{TS: baseTS, RequestID: id}.normalized()
	}
	return out
}

func drain(t *testing.T, s *spool) []string {
	t.Helper()
	var got []string
	for range 1000 {
		rows, end, bad, err := s.next(3)
		require.NoError(t, err)
		require.Zero(t, bad)
		require.NoError(t, s.commit(end))
		got = append(got, ids(rows)...)
		if !s.pending() {
			return got
		}
	}
	t.Fatal("spool did not drain")
	return nil
}

func TestSpoolSurvivesReopenAndTornTail(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, 1<<20)
	require.NoError(t, err)
	n, err := s.append(spoolRows("r", 10), true)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	rows, end, _, err := s.next(4)
	require.NoError(t, err)
	require.Equal(t, rowIDs("r", 4), ids(rows))
	require.NoError(t, s.commit(end))
	require.NoError(t, s.close())

	// A crash mid-append leaves half a line.
	f, err := os.OpenFile(filepath.Join(dir, spoolDataFile), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"request_id":"torn`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s, err = openSpool(dir, 1<<20)
	require.NoError(t, err)
	defer s.close()
	require.Equal(t, rowIDs("r", 10)[4:], drain(t, s), "resumes after the committed offset, torn line cut")
	require.Zero(t, s.bytes(), "a drained spool is truncated")
}

func TestSpoolStaleOffsetReplaysFromStart(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, 1<<20)
	require.NoError(t, err)
	_, err = s.append(spoolRows("r", 3), true)
	require.NoError(t, err)
	require.NoError(t, s.close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, spoolOffsetFile), []byte("999999\n"), 0o640))
	s, err = openSpool(dir, 1<<20)
	require.NoError(t, err)
	defer s.close()
	require.Equal(t, rowIDs("r", 3), drain(t, s))
}

func TestSpoolCompactsReplayedPrefixAtBound(t *testing.T) {
	dir := t.TempDir()
	one, err := spoolRows("r", 1)[0].jsonLine()
	require.NoError(t, err)
	max := int64(len(one)) * 10
	s, err := openSpool(dir, max)
	require.NoError(t, err)
	defer s.close()
	n, err := s.append(spoolRows("r", 12), false)
	require.NoError(t, err)
	require.Equal(t, 10, n, "only what fits under the bound")
	rows, end, _, err := s.next(6)
	require.NoError(t, err)
	require.Len(t, rows, 6)
	require.NoError(t, s.commit(end))
	n, err = s.append(spoolRows("x", 5), false)
	require.NoError(t, err)
	require.Equal(t, 5, n, "compaction frees the replayed prefix")
	require.LessOrEqual(t, s.bytes(), max)
	require.Equal(t, append(rowIDs("r", 10)[6:], rowIDs("x", 5)...), drain(t, s))
}

func TestSpoolSkipsCorruptLines(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, spoolDataFile),
		[]byte("{\"request_id\":\"a\"}\nnot json\n{\"request_id\":\"b\"}\n"), 0o640))
	s, err := openSpool(dir, 1<<20)
	require.NoError(t, err)
	defer s.close()
	rows, end, bad, err := s.next(10)
	require.NoError(t, err)
	require.Equal(t, 1, bad)
	require.Equal(t, []string{"a", "b"}, ids(rows))
	require.NoError(t, s.commit(end))
	require.False(t, s.pending())
}

// TestSpoolKeepsRowsBeforeAnUnencodableOne: append reports how many rows it
// wrote; the rows buffered before one it cannot encode are written, not
// lost while being counted as spooled.
func TestSpoolKeepsRowsBeforeAnUnencodableOne(t *testing.T) {
	s, err := openSpool(t.TempDir(), 1<<20)
	require.NoError(t, err)
	defer s.close()
	rows := spoolRows("r", 3)
	rows[2].CostUSD = math.Inf(1) // not normalized: no JSON form
	n, err := s.append(rows, true)
	require.ErrorContains(t, err, `spool encode "r-00002"`)
	require.Equal(t, 2, n)
	require.Equal(t, rowIDs("r", 2), drain(t, s))
}
