package gotests

import (
	"os"
	"regexp"
	"testing"

	"github.com/neoflow/neoflow/torchbridge"
)

// The Python package and the Go core must agree on the version: it is part
// of every kernel cache key.
func TestPythonVersionMatchesGo(t *testing.T) {
	b, err := os.ReadFile("../../pyext/neoflow/version.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`__version__ = "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no __version__ in version.py")
	}
	if got, want := string(m[1]), torchbridge.Version; got != want {
		t.Errorf("python version %s, go version %s", got, want)
	}
}
