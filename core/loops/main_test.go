package loops

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	MinParallelWork = 0 // small test shapes exercise the parallel code
	os.Exit(m.Run())
}
