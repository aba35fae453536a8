package requestlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Spool file names inside WriterOptions.SpoolDir.
const (
	spoolDataFile   = "requests.spool.jsonl"
	spoolOffsetFile = "requests.spool.offset"
)

// jsonLine encodes r as one line of JSON ending in '\n', the spool's
// record format.
func (r Row) jsonLine() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("requestlog: encode row %q: %w", r.RequestID, err)
	}
	return append(b, '\n'), nil
}

// spool is an append-only file of JSON lines, one Row each, plus a small
// file holding the offset up to which rows have been replayed into the
// store. Replaying advances the offset only after the store accepted the
// rows, so a crash in between replays them again, which the store's
// request_id idempotency absorbs. When everything is replayed the file is
// truncated; when an append would pass maxBytes and a replayed prefix
// exists, the file is compacted. The caller serializes all methods.
type spool struct {
	dir      string
	maxBytes int64
	f        *os.File
	size     int64 // bytes in the data file
	readOff  int64 // bytes already replayed
	// inFlight is set between next and commit: no compaction may move the
	// bytes a replay batch was read from.
	inFlight bool
}

// openSpool opens or creates the spool in dir. A torn last line (a crash
// mid-append) is cut off; it held a row that was never acknowledged.
func openSpool(dir string, maxBytes int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("requestlog: spool dir %q: %w", dir, err)
	}
	path := filepath.Join(dir, spoolDataFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("requestlog: open spool %q: %w", path, err)
	}
	s := &spool{dir: dir, maxBytes: maxBytes, f: f}
	if err := s.load(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return s, nil
}

func (s *spool) load() error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("requestlog: spool %q: %w", s.f.Name(), err)
	}
	s.size = st.Size()
	if s.size > 0 {
		// Cut a torn tail: find the last newline in the final 64 KiB window(s).
		end := s.size
		buf := make([]byte, 64<<10)
		cut := int64(0)
		for end > 0 {
			start := max(0, end-int64(len(buf)))
			n, err := s.f.ReadAt(buf[:end-start], start)
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("requestlog: spool %q: %w", s.f.Name(), err)
			}
			if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
				cut = start + int64(i) + 1
				break
			}
			end = start
		}
		if cut != s.size {
			if err := s.f.Truncate(cut); err != nil {
				return fmt.Errorf("requestlog: spool %q: cut torn tail: %w", s.f.Name(), err)
			}
			s.size = cut
		}
	}
	b, err := os.ReadFile(filepath.Join(s.dir, spoolOffsetFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.readOff = 0
	case err != nil:
		return fmt.Errorf("requestlog: spool offset: %w", err)
	default:
		off, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil || off < 0 || off > s.size {
			// A stale offset (the data file was truncated after it was
			// written) or a damaged one: replay from the start; the store
			// skips rows it already has.
			off = 0
		}
		s.readOff = off
	}
	return nil
}

// bytes returns the data file size, which SpoolMaxBytes bounds.
func (s *spool) bytes() int64 { return s.size }

// pending reports whether rows await replay.
func (s *spool) pending() bool { return s.readOff < s.size }

// append encodes rows and appends those that fit under maxBytes, in order;
// it returns how many were appended. sync makes the data durable before
// returning.
func (s *spool) append(rows []Row, sync bool) (int, error) {
	var buf bytes.Buffer
	n := 0
	var encErr error
	for _, r := range rows {
		line, err := r.jsonLine()
		if err != nil {
			// Keep what is buffered: those rows are counted as spooled.
			encErr = fmt.Errorf("requestlog: spool encode %q: %w", r.RequestID, err)
			break
		}
		need := int64(buf.Len() + len(line))
		if s.size+need > s.maxBytes && s.readOff > 0 && !s.inFlight {
			if err := s.compact(); err != nil {
				return n, err
			}
		}
		if s.size+need > s.maxBytes {
			break
		}
		buf.Write(line)
		n++
	}
	if buf.Len() == 0 {
		return 0, encErr
	}
	if _, err := s.f.WriteAt(buf.Bytes(), s.size); err != nil {
		// Forget a partial write: the next append overwrites it.
		return 0, fmt.Errorf("requestlog: spool write %q: %w", s.f.Name(), err)
	}
	s.size += int64(buf.Len())
	if sync {
		if err := s.f.Sync(); err != nil {
			return n, fmt.Errorf("requestlog: spool sync %q: %w", s.f.Name(), err)
		}
	}
	return n, encErr
}

// compact drops the replayed prefix by copying the rest to a new file.
func (s *spool) compact() error {
	tmpPath := filepath.Join(s.dir, spoolDataFile+".tmp")
	tmp, err := os.OpenFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("requestlog: spool compact: %w", err)
	}
	if _, err := io.Copy(tmp, io.NewSectionReader(s.f, s.readOff, s.size-s.readOff)); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("requestlog: spool compact: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("requestlog: spool compact: %w", err)
	}
	// Offset first: if we crash after it, the old file is replayed from the
	// start and the store skips the duplicates.
	if err := s.writeOffset(0); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := os.Rename(tmpPath, filepath.Join(s.dir, spoolDataFile)); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("requestlog: spool compact: %w", err)
	}
	_ = s.f.Close()
	s.f = tmp
	s.size -= s.readOff
	s.readOff = 0
	return nil
}

// next reads up to n rows from the replay position. It returns the offset
// to commit once the store has them. Undecodable lines are skipped and
// counted in bad.
func (s *spool) next(n int) (rows []Row, end int64, bad int, err error) {
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, s.readOff, s.size-s.readOff), 64<<10)
	end = s.readOff
	for len(rows) < n {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: read the rest of it.
			rest, rerr := r.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), rerr
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return rows, end, bad, fmt.Errorf("requestlog: spool read %q: %w", s.f.Name(), err)
		}
		end += int64(len(line))
		var row Row
		if jerr := json.Unmarshal(line, &row); jerr != nil || row.RequestID == "" {
			bad++
			continue
		}
		rows = append(rows, row)
	}
	s.inFlight = len(rows) > 0
	return rows, end, bad, nil
}

// commit marks everything before end as replayed, truncating the file once
// all of it is.
func (s *spool) commit(end int64) error {
	s.inFlight = false
	if end >= s.size {
		if err := s.f.Truncate(0); err != nil {
			return fmt.Errorf("requestlog: spool truncate %q: %w", s.f.Name(), err)
		}
		s.size, s.readOff = 0, 0
		return s.writeOffset(0)
	}
	s.readOff = end
	return s.writeOffset(end)
}

// abort ends a replay that the store refused; the rows stay pending.
func (s *spool) abort() { s.inFlight = false }

// writeOffset replaces the offset file atomically.
func (s *spool) writeOffset(off int64) error {
	path := filepath.Join(s.dir, spoolOffsetFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(off, 10)+"\n"), 0o640); err != nil {
		return fmt.Errorf("requestlog: spool offset: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("requestlog: spool offset: %w", err)
	}
	return nil
}

func (s *spool) close() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("requestlog: close spool: %w", err)
	}
	return nil
}
