package cc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A compiler started under WithLowPriority runs at LowPriority; one
// started without it at the caller's priority.
func TestLowPriorityCompiler(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fakecc")
	// It records its nice value where the next argument after -o points.
	body := "#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\nnice > \"$2\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Compiler{Path: script}
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - nice on Linux
	base := 20 - prio
	for _, low := range []bool{false, true} {
		ctx := context.Background()
		if low {
			ctx = WithLowPriority(ctx)
		}
		out := filepath.Join(dir, "out.txt")
		if err := c.Compile(ctx, "int x;", out); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want := base
		if low {
			want = max(base, LowPriority) // an unprivileged process cannot raise its priority
		}
		if strings.TrimSpace(string(got)) != strconv.Itoa(want) {
			t.Errorf("low priority %v: the compiler ran at nice %q, want %d", low, strings.TrimSpace(string(got)), want)
		}
	}
}

// SetThreadPriority changes the calling thread's priority only.
func TestSetThreadPriority(t *testing.T) {
	done := make(chan int)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine, and its priority with it
		SetThreadPriority(LowPriority)
		p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		done <- p
	}()
	// Getpriority returns 20 - nice on Linux.
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if p := <-done; 20-p != max(20-prio, LowPriority) {
		t.Errorf("the thread's nice value is %d, want %d", 20-p, max(20-prio, LowPriority))
	}
	if p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()); p != prio {
		t.Errorf("this thread's nice value changed from %d to %d", 20-prio, 20-p)
	}
}

// lower reaches the children a compiler driver started before it was
// called, not the driver alone: cc1 may already run when the driver is
// lowered on a busy machine.
func TestLowerReachesTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	// The driver starts a child, which announces itself, and both wait.
	cmd := exec.Command("/bin/sh", "-c", "sleep 5 & echo $! > "+ready+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the driver's child never started")
		}
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	want := max(20-prio, LowPriority) // an unprivileged process cannot raise its priority
	lower(cmd.Process.Pid)
	for _, pid := range []int{cmd.Process.Pid, child} {
		if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid); err != nil || 20-p != want {
			t.Errorf("process %d runs at nice %d (%v), want %d", pid, 20-p, err, want)
		}
	}
}
