package main

import (
	"testing"

	"github.com/neoflow/neoflow/torchbridge"
)

// nf_launch's thread count is the Go core's (torchbridge.ThreadsBeside)
// for every state of the worker and of the foreground compilers.
func TestLaunchThreadsAreTheGoCores(t *testing.T) {
	defer publishBusy(false)
	defer publishForeground(0)
	for _, busy := range []bool{false, true} {
		publishBusy(busy)
		for compiles := range 4 {
			publishForeground(compiles)
			for asked := range 6 {
				if got, want := launchThreads(asked), torchbridge.ThreadsBeside(asked, busy, compiles); got != want {
					t.Errorf("asked %d, busy %v, %d compilers: C runs %d threads, the Go core %d", asked, busy, compiles, got, want)
				}
			}
		}
	}
}
