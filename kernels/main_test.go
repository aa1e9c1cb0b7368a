package kernels

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builderDir != "" {
		os.RemoveAll(builderDir)
	}
	os.Exit(code)
}
