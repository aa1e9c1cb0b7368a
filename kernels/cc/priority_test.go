package cc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A compiler started under WithLowPriority runs at LowPriority, one under
// WithIdleCompiles under SCHED_IDLE besides, from its start, and so do the
// children it starts at once; one started without either runs at the
// caller's priority and policy.
func TestLowPriorityCompiler(t *testing.T) {
	// The fake compiler records its nice value and scheduling policy (the
	// 41st field of /proc/PID/stat) and its child's, at once: a compiler's
	// children must start low too.
	body := "echo $(nice) $(cut -d' ' -f41 /proc/$$/stat) > \"$2\"\n" +
		"sh -c 'echo $(nice) $(cut -d\" \" -f41 /proc/$$/stat)' >> \"$2\"\n"
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - nice on Linux
	base := 20 - prio
	low := max(base, LowPriority) // an unprivileged process cannot raise its priority
	for _, k := range []struct {
		name   string
		ctx    context.Context
		nice   int
		policy int
	}{
		{"normal", context.Background(), base, 0}, // SCHED_OTHER
		{"low", WithLowPriority(context.Background()), low, 0},
		{"idle", WithIdleCompiles(context.Background()), low, schedIdle},
	} {
		want := fmt.Sprintf("%d %d %d %d", k.nice, k.policy, k.nice, k.policy)
		if g := fakeCompile(t, k.ctx, body); g != want {
			t.Errorf("%s: the compiler and its child ran at nice and policy %q, want %q", k.name, g, want)
		}
	}
}

// fakeCompile compiles under ctx with a fake compiler whose shell script is
// body (it finds its output path after -o), and returns the whitespace-
// separated fields the script wrote there, joined by single spaces.
func fakeCompile(t *testing.T, ctx context.Context, body string) string {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "fakecc")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	if err := (Compiler{Path: script}).Compile(ctx, "int x;", out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(got)), " ")
}

// setThreadPriority changes the calling thread's priority only.
func TestSetThreadPriority(t *testing.T) {
	done := make(chan int)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine, and its priority with it
		setThreadPriority(LowPriority)
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

// A compiler still running under SCHED_IDLE after IdleCompileLimit (one
// starved on a busy machine) is stopped and run again at LowPriority alone.
func TestStarvedIdleCompilerRunsAgainLow(t *testing.T) {
	// Under SCHED_IDLE the fake compiler hangs (as if starved); otherwise it
	// records its nice value and policy.
	body := "if [ \"$(cut -d' ' -f41 /proc/$$/stat)\" = 5 ]; then exec sleep 30; fi\n" +
		"echo $(nice) $(cut -d' ' -f41 /proc/$$/stat) > \"$2\"\n"
	defer func(d time.Duration) { IdleCompileLimit = d }(IdleCompileLimit)
	IdleCompileLimit = 300 * time.Millisecond
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - nice on Linux
	// Had the starved compiler not been stopped, it would have slept and
	// written nothing: the nice value and policy below come from its rerun.
	got := fakeCompile(t, WithIdleCompiles(context.Background()), body)
	if want := fmt.Sprintf("%d 0", max(20-prio, LowPriority)); got != want {
		t.Errorf("the second run's nice value and policy are %q, want %q", got, want)
	}
}

// Foreground counts the compilers running at their caller's priority
// while they run, not the low-priority ones.
func TestForegroundCountsWaitedForCompiles(t *testing.T) {
	for _, k := range []struct {
		name string
		ctx  context.Context
		want int
	}{{"normal", context.Background(), 1}, {"low", WithLowPriority(context.Background()), 0}} {
		dir := t.TempDir()
		started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
		script := filepath.Join(dir, "fakecc")
		body := fmt.Sprintf("#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\n: > %s\nwhile [ ! -e %s ]; do sleep 0.01; done\n: > \"$2\"\n", started, gate)
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- (Compiler{Path: script}).Compile(k.ctx, "int x;", filepath.Join(dir, "out.so")) }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the fake compiler did not start")
			}
		}
		got := Foreground()
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got != k.want {
			t.Errorf("%s: %d foreground compiles while it ran, want %d", k.name, got, k.want)
		}
		if n := Foreground(); n != 0 {
			t.Errorf("%s: %d foreground compiles after it ended", k.name, n)
		}
	}
}
