package connectors

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// golden compares got with the golden file dir/name, or rewrites it when
// update is set. A nil got means the case must have no such file: it is
// removed on update and reported otherwise.
func golden(t *testing.T, update bool, dir, name string, got []byte) {
	t.Helper()
	path := filepath.Join(dir, name)
	if update {
		if got == nil {
			_ = os.Remove(path)
			return
		}
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if got == nil {
		assert.True(t, os.IsNotExist(err), "%s exists but the case produced none", path)
		return
	}
	require.NoError(t, err, "missing golden file (run with the corpus's -update flag)")
	assert.Equal(t, string(want), string(got), "%s differs", path)
}

// indentJSON indents a JSON document for a golden file.
func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, b, "", "  "), "not JSON: %s", b)
	buf.WriteByte('\n')
	return buf.Bytes()
}

// resultJSON is a Result as a golden file.
func resultJSON(t *testing.T, r Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return indentJSON(t, b)
}

// runStream feeds a recorded event stream to s and collects a copy of every
// payload it emits, until the stream says done, fails, or the input ends.
func runStream(t testing.TB, s Stream, sse []byte) (chunks [][]byte, done bool, err error) {
	r := NewSSEReader(bytes.NewReader(sse))
	for {
		event, data, rerr := r.Next()
		if rerr == io.EOF {
			return chunks, done, nil
		}
		if rerr != nil {
			return chunks, done, rerr
		}
		done, err = s.Event(event, data, func(p []byte) error {
			chunks = append(chunks, bytes.Clone(p))
			return nil
		})
		if err != nil || done {
			return chunks, done, err
		}
	}
}
