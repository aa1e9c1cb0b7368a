package nvrtc

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// soname matches NVRTC's library files: libnvrtc.so, libnvrtc.so.12,
// libnvrtc.so.11.2 (not libnvrtc-builtins or libnvrtc.alt).
var soname = regexp.MustCompile(`^libnvrtc\.so(\.[0-9]+)*$`)

// Find returns the NVRTC library file in the first of dirs that holds
// one (the newest version when a directory holds several); a path to a
// file is taken as it is. The error lists where it looked.
func Find(dirs []string) (string, error) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		fi, err := os.Stat(d)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			return d, nil
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		var names []string
		for _, e := range ents {
			if soname.MatchString(e.Name()) {
				names = append(names, e.Name())
			}
		}
		if len(names) == 0 {
			continue
		}
		slices.SortFunc(names, func(a, b string) int { return compareVersions(a, b) })
		return filepath.Join(d, names[len(names)-1]), nil
	}
	return "", errors.Errorf("no NVRTC library (libnvrtc.so*) in %s: install PyTorch with CUDA, or set CUDA_HOME to a CUDA toolkit", strings.Join(nonEmpty(dirs), ", "))
}

// compareVersions orders sonames by their numeric suffixes.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 2; i < max(len(pa), len(pb)); i++ {
		x, y := -1, -1
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	if out == nil {
		return []string{"(no directories)"}
	}
	return out
}
