package cc

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// OnOwnThread runs fn on an OS thread that ends with it, at LowPriority
// under a marked context and at the caller's priority otherwise, and
// passes fn's panic on to the caller.
func TestOnOwnThread(t *testing.T) {
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - nice on Linux
	base := 20 - prio
	for _, low := range []bool{false, true} {
		ctx := context.Background()
		want := base
		if low {
			ctx, want = WithLowPriority(ctx), max(base, LowPriority)
		}
		var tid, nice int
		OnOwnThread(ctx, func() {
			tid = syscall.Gettid()
			p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			nice = 20 - p
		})
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("low priority %v: fn's thread %d (process %d) still runs", low, tid, os.Getpid())
			}
		}
		if nice != want {
			t.Errorf("low priority %v: fn ran at nice %d, want %d", low, nice, want)
		}
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want fn's panic", p)
		}
	}()
	OnOwnThread(context.Background(), func() { panic("boom") })
	t.Error("OnOwnThread returned after fn panicked")
}
