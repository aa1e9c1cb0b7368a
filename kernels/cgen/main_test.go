package cgen

import (
	"os"
	"testing"

	"github.com/neoflow/neoflow/core/loops"
)

func TestMain(m *testing.M) {
	loops.MinParallelWork = 0 // small test shapes exercise the parallel code
	os.Exit(m.Run())
}
