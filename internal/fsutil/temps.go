package fsutil

import (
	"os"
	"path/filepath"
	"time"
)

// RemoveStaleTemps removes the temporary files in dir that writers killed
// before they finished left behind, and returns their paths. lockOf
// gives, for a file name in dir, the name of the lock file (in dir) that
// its writer holds for as long as the temporary file exists, or "" when
// the name is not a temporary file. A temporary file is removed when its
// lock can be taken at once, so no live writer holds it; where the file
// system does not support flock, only when it was last modified more
// than maxAge ago. Directories are never removed. Failures are skipped:
// the next caller tries again.
func RemoveStaleTemps(dir string, lockOf func(name string) string, maxAge time.Duration) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var locks []string
	temps := map[string][]os.DirEntry{}
	for _, e := range entries {
		l := lockOf(e.Name())
		if l == "" || e.IsDir() {
			continue
		}
		if temps[l] == nil {
			locks = append(locks, l)
		}
		temps[l] = append(temps[l], e)
	}
	var removed []string
	for _, l := range locks {
		unlock, held, err := TryLock(filepath.Join(dir, l))
		if err != nil {
			continue // a live writer, or an unusable lock file
		}
		for _, e := range temps[l] {
			if !held {
				fi, err := e.Info()
				if err != nil || time.Since(fi.ModTime()) < maxAge {
					continue
				}
			}
			p := filepath.Join(dir, e.Name())
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
		unlock()
	}
	return removed
}
