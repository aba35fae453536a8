package requestlog

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processCPU is the process's user + system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processIO is the process's write(2)-family calls and bytes so far
// (/proc/self/io's syscw and wchar); zeros where there is no such file.
func processIO() (calls, bytes int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscw":
			calls = n
		case "wchar":
			bytes = n
		}
	}
	return calls, bytes
}

// BenchmarkWriterSQLiteRow writes rows through the path the gateway uses:
// Enqueue on a Writer (default batch size and flush interval, a spool
// directory) in front of the SQLite store on a file, then Close, which
// drains. It reports the process's CPU time (user + system, every
// goroutine: the enqueuing loop, the flusher, the driver, the collector)
// per row as cpu-µs/row (and the write calls and bytes a row costs, from
// /proc/self/io), the number the gateway pays for its compliance
// row. Rows arrive in bursts of a batch and the loop waits for the
// flusher to catch up before the queue fills (as at the gateway's rates,
// where no row spills to the spool); the benchmark fails if any row was
// spooled or dropped or the store holds fewer rows than were enqueued.
// Timestamps advance at 5k rows/s and ids lead with the millisecond then
// random bits, as the gateway's do.
func BenchmarkWriterSQLiteRow(b *testing.B) {
	b.Run("varied", func(b *testing.B) { benchWriterSQLite(b, sampleRows(1000)) })
	b.Run("uniform", func(b *testing.B) { benchWriterSQLite(b, sampleRows(1)) })
}

func benchWriterSQLite(b *testing.B, template []Row) {
	dir := b.TempDir()
	s, err := OpenSQLite(filepath.Join(dir, "requests.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := NewWriter(s, WriterOptions{SpoolDir: filepath.Join(dir, "spool")})
	rng := rand.New(rand.NewPCG(1, 2))
	var id [16]byte
	batch := w.opts.BatchSize
	n := 0
	calls0, bytes0 := processIO()
	cpu0, wall0 := processCPU(b), time.Now()
	for b.Loop() {
		r := template[n%len(template)]
		r.TS = baseTS.Add(time.Duration(n) * 200 * time.Microsecond)
		binary.BigEndian.PutUint64(id[:8], uint64(r.TS.UnixMilli())<<16)
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		id[6], id[7] = byte(rng.Uint32()), byte(rng.Uint32())
		r.RequestID = hex.EncodeToString(id[:])
		w.Enqueue(&r)
		n++
		if n%batch == 0 {
			for w.queueDepth() > 2*batch {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	cpu, wall := processCPU(b)-cpu0, time.Since(wall0)
	calls, bytes := processIO()
	st := w.Stats()
	if st.SpooledRows != 0 || st.DroppedRows != 0 || st.WrittenRows != uint64(n) {
		b.Fatalf("enqueued %d rows: written %d, spooled %d, dropped %d", n, st.WrittenRows, st.SpooledRows, st.DroppedRows)
	}
	var stored int
	if err := s.(*sqliteStore).db.QueryRow("SELECT COUNT(*) FROM requests").Scan(&stored); err != nil || stored != n {
		b.Fatalf("stored %d rows of %d (%v)", stored, n, err)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/row")
	b.ReportMetric(float64(n)/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(calls-calls0)/float64(n), "writes/row")
	b.ReportMetric(float64(bytes-bytes0)/float64(n), "write-B/row")
}
