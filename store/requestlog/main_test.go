package requestlog

import (
	"os"
	"testing"

	"github.com/sluicegw/sluice/store/requestlog/chtest"
)

// TestMain shares one ClickHouse server across the package's tests (each
// test uses its own database) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }
