package cc

import (
	"os"
	"sync"
	"syscall"

	"github.com/pkg/errors"
)

// running holds the process groups of the compilers running now, so that
// a process that exits can stop them (StopAll). An interrupt cancels the
// builds someone waits for; background builds (picks, the tuner) go on,
// and would otherwise outlive the process.
var running struct {
	sync.Mutex
	groups  map[int]string // the process group's temporary directory
	stopped bool           // StopAll ran: no compiler starts any more
}

var errStopped = errors.New("compiling the kernel: the process is exiting")

// track records a started compiler's process group and its temporary
// directory; false (and the group killed) if StopAll ran meanwhile.
func track(pgid int, tmp string) bool {
	running.Lock()
	defer running.Unlock()
	if running.stopped {
		syscall.Kill(-pgid, syscall.SIGKILL)
		return false
	}
	if running.groups == nil {
		running.groups = map[int]string{}
	}
	running.groups[pgid] = tmp
	return true
}

func untrack(pgid int) {
	running.Lock()
	delete(running.groups, pgid)
	running.Unlock()
}

// Stopped reports whether StopAll ran: the process is exiting, and no
// build should start (the kernel cache checks it before taking a key's
// lock, which would create files in a cache being removed).
func Stopped() bool {
	running.Lock()
	defer running.Unlock()
	return running.stopped
}

// StopAll kills every running compiler's process group, removes its
// temporary files and keeps new compilers from starting; it returns how
// many it killed. The C API calls it when the process exits.
func StopAll() int {
	running.Lock()
	defer running.Unlock()
	running.stopped = true
	for pgid, tmp := range running.groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
		os.RemoveAll(tmp)
	}
	n := len(running.groups)
	clear(running.groups)
	return n
}
