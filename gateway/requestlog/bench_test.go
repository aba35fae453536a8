package requestlog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicegw/sluice/gateway/requestlog/chtest"
)

// BenchmarkClickHouseInsert10k inserts batches of 10,000 new rows (the
// duplicate check included) and reports rows/s.
func BenchmarkClickHouseInsert10k(b *testing.B) {
	srv := chtest.Shared(b)
	ctx := context.Background()
	s, err := OpenClickHouse(ctx, Options{Addr: srv.Addr(), Database: chtest.NewDatabaseName("bench")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 10_000
	template := sampleRows(batch)
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		rows := make([]Row, batch)
		for j, r := range template {
			r.RequestID = fmt.Sprintf("b%d-%d", i, j)
			r.TS = r.TS.Add(time.Duration(i) * time.Hour)
			rows[j] = r
		}
		if err := s.Insert(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkRowEncoding measures the per-row cost of preparing a row for the
// queue and the spool (normalization plus one JSON line).
func BenchmarkRowEncoding(b *testing.B) {
	r := sampleRows(3)[2]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.normalized().jsonLine(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteInsert1k inserts batches of 1,000 new rows (the default
// batch size) into the embedded store and reports rows/s. Timestamps
// advance at 5k rows/s and request ids lead with the millisecond then random
// bytes, as the gateway's do.
func BenchmarkSQLiteInsert1k(b *testing.B) {
	s, err := OpenSQLite(filepath.Join(b.TempDir(), "requests.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const batch = 1000
	template := sampleRows(batch)
	var id [16]byte
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		rows := make([]Row, batch)
		for j, r := range template {
			r.TS = baseTS.Add(time.Duration(i*batch+j) * 200 * time.Microsecond)
			binary.BigEndian.PutUint64(id[:8], uint64(r.TS.UnixMilli())<<16)
			_, _ = rand.Read(id[6:])
			r.RequestID = hex.EncodeToString(id[:])
			rows[j] = r
		}
		if err := s.Insert(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
}
