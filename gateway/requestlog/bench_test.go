package requestlog

import (
	"context"
	"fmt"
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
