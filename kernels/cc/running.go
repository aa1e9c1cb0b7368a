package cc

import (
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
	groups  map[int]struct{}
	stopped bool // StopAll ran: no compiler starts any more
}

var errStopped = errors.New("compiling the kernel: the process is exiting")

// track records a started compiler's process group; false (and the group
// killed) if StopAll ran meanwhile.
func track(pgid int) bool {
	running.Lock()
	defer running.Unlock()
	if running.stopped {
		syscall.Kill(-pgid, syscall.SIGKILL)
		return false
	}
	if running.groups == nil {
		running.groups = map[int]struct{}{}
	}
	running.groups[pgid] = struct{}{}
	return true
}

func untrack(pgid int) {
	running.Lock()
	delete(running.groups, pgid)
	running.Unlock()
}

// StopAll kills every running compiler's process group and keeps new ones
// from starting; it returns how many it killed. The C API calls it when
// the process exits.
func StopAll() int {
	running.Lock()
	defer running.Unlock()
	running.stopped = true
	for pgid := range running.groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	n := len(running.groups)
	clear(running.groups)
	return n
}
