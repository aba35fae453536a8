package requestlog

import (
	"os"
	"testing"

	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestMain shares one ClickHouse server across the package's tests (each
// test uses its own database) and stops it at the end, and removes the
// benchmarks' generated logs.
func TestMain(m *testing.M) {
	code := chtest.Main(m)
	removeComplianceLog()
	os.Exit(code)
}
