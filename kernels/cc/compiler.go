package cc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/errors"
)

// DefaultPath is the compiler used when Compiler.Path is empty.
const DefaultPath = "cc"

// DefaultFlags are used when Compiler.Flags is nil. -ffp-contract=fast
// lets GCC fuse a*b + c into one fused multiply-add, as PyTorch's own CPU
// kernels do: it doubles the arithmetic rate of reductions (capsule conv
// forward+backward 1.3 -> 1.0 ms), and the result differs from the
// unfused one by rounding only (one rounding instead of two), within the
// tolerances the kernels are checked to against the reference interpreter.
// -ffp-contract=off in NEOFLOW_CFLAGS restores the unfused rounding. Never
// add -ffast-math: it breaks NaN, infinity and signed-zero semantics.
// -fno-math-errno changes no result (only whether sqrt and friends set
// errno) and lets sqrt vectorize.
//
// -fvect-cost-model=very-cheap limits GCC's own vectorization of loops
// the schedule did not mark; kernels/cgen also keeps GCC's loop
// vectorizer off those loops altogether (NF_SCALAR), since GCC 12.2
// miscompiled them. The lane loops neoflow marks "#pragma omp simd" are
// vectorized as before: their cost model is -fsimd-cost-model.
// (-fno-tree-loop-vectorize would also stop the simd loops inside
// "#pragma omp parallel for" from using vector math, _ZGVeN16v_expf.)
//
// -mprefer-vector-width=512 lets GCC use the 64-byte vectors the schedule
// assumes (loops.VectorBytes) on a CPU with AVX-512, where it would split
// each lane loop into two 32-byte halves and call the 8-lane vector math;
// PyTorch's CPU kernels run AVX-512 there too. Measured on a 2-core Xeon
// (2^20 float32, 2 threads, medians of two runs): exp 286 -> 259 us, tanh
// 344 -> 297, erf 586 -> 529, sigmoid 521 -> 475, tanh GELU 432 -> 385,
// column sums 156 -> 116, softmax 512x2048 711 -> 580. Elsewhere it
// changes nothing.
//
// -pipe passes the assembly from cc1 to as through a pipe, not a file in
// /tmp: a compile killed (interrupted, or at exit) leaves none behind.
var DefaultFlags = []string{"-O3", "-march=native", "-fPIC", "-shared", "-fopenmp", "-std=c11", "-ffp-contract=fast", "-fno-math-errno",
	"-fvect-cost-model=very-cheap", "-mprefer-vector-width=512", "-pipe"}

// Compiler is a C compiler invocation: Path (a name looked up on PATH, or
// a path) and Flags, which replace DefaultFlags when non-nil and must then
// produce a shared object themselves. "-lm" (and "-lmvec" on linux/amd64,
// for vectorized math) is always added after the source file.
type Compiler struct {
	Path  string
	Flags []string
}

func (c Compiler) path() string {
	if c.Path == "" {
		return DefaultPath
	}
	return c.Path
}

// EffectiveFlags are the flags a compilation uses.
func (c Compiler) EffectiveFlags() []string {
	if c.Flags == nil {
		return append([]string(nil), DefaultFlags...)
	}
	return append([]string(nil), c.Flags...)
}

// Resolve finds the compiler executable, returning its absolute path.
func (c Compiler) Resolve() (string, error) {
	p, err := exec.LookPath(c.path())
	if err != nil {
		return "", errors.Errorf("C compiler %q not found on PATH (set NEOFLOW_CC to a working compiler)", c.path())
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", errors.Wrapf(err, "resolving C compiler %q", c.path())
	}
	return abs, nil
}

// Identity describes the compiler for cache keys without running it: the
// resolved executable (symbolic links followed) with its size and
// modification time, so that replacing or upgrading the compiler changes
// the identity.
func (c Compiler) Identity() (string, error) {
	p, err := c.Resolve()
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", errors.Wrapf(err, "resolving C compiler %s", p)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", errors.Wrapf(err, "C compiler %s", real)
	}
	return fmt.Sprintf("%s -> %s size=%d mtime=%d", p, real, fi.Size(), fi.ModTime().UnixNano()), nil
}

// CommandLine is the argument list (compiler first) that compiles the C
// file src into the shared object out, less what this compiler refused
// earlier in the process (fallback.go).
func (c Compiler) CommandLine(compiler, src, out string) []string {
	args := []string{compiler}
	args = append(args, c.EffectiveFlags()...)
	args = append(args, "-o", out, src)
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		args = append(args, "-lmvec") // vector math for the kernels' lane loops (cgen)
	}
	return withoutLeftOut(compiler, append(args, "-lm"))
}

// Compile compiles source into the shared object out. The source is
// written to a temporary .c file next to out and removed afterwards. On
// failure the error holds the command line and the compiler's full
// standard error.
func (c Compiler) Compile(ctx context.Context, source, out string) error {
	compiler, err := c.Resolve()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.c")
	if err != nil {
		return errors.Wrap(err, "writing kernel source")
	}
	src := f.Name()
	defer os.Remove(src)
	if _, err := f.WriteString(source); err != nil {
		f.Close()
		return errors.Wrapf(err, "writing kernel source %s", src)
	}
	if err := f.Close(); err != nil {
		return errors.Wrapf(err, "writing kernel source %s", src)
	}
	for {
		args := c.CommandLine(compiler, src, out)
		var stderr bytes.Buffer
		err = runAtPriority(ctx, args, &stderr)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return errors.Wrap(ctx.Err(), "compiling the kernel: interrupted")
		}
		// A compiler or C library older than the defaults assume: leave
		// out what it refused and compile again (fallback.go).
		if arg := refused(args, stderr.String()); arg != "" && leaveOut(compiler, arg) {
			continue
		}
		msg := strings.TrimRight(stderr.String(), "\n")
		return errors.Errorf("C compiler failed (%v): %s\n%s%s", err, strings.Join(args, " "), msg, openMPHint(msg))
	}
}

// runAtPriority runs the compiler command args at the priority ctx asks for.
func runAtPriority(ctx context.Context, args []string, stderr *bytes.Buffer) error {
	switch {
	case !IsLowPriority(ctx):
		addForeground(1)
		defer addForeground(-1)
		return run(ctx, args, stderr, priorityNormal)
	case !isIdle(ctx):
		return run(ctx, args, stderr, priorityLow)
	}
	// Under SCHED_IDLE first; a compiler that has not ended after
	// IdleCompileLimit is starved (priority.go) and runs again at
	// LowPriority alone, where it gets a share of a busy machine.
	idle, cancel := context.WithTimeout(ctx, IdleCompileLimit)
	err := run(idle, args, stderr, priorityIdle)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(idle.Err(), context.DeadlineExceeded) {
		stderr.Reset()
		err = run(ctx, args, stderr, priorityLow)
	}
	return err
}

// foreground counts the compilers running at the caller's priority.
var foreground atomic.Int64

// Foreground is the number of this process's compilers running now at
// their caller's priority: builds that someone waits for (a first call's
// kernels, its gradients built ahead), not the low-priority work of
// picks and searches.
func Foreground() int { return int(foreground.Load()) }

// onForeground, when set (OnForeground), is told each change of
// foreground.
var onForeground atomic.Pointer[func(n int)]

// OnForeground has f told the number of foreground compilers (Foreground)
// at each change: the C API publishes it to its launch path, which runs
// without entering Go.
func OnForeground(f func(n int)) { onForeground.Store(&f) }

func addForeground(d int64) {
	n := foreground.Add(d)
	if f := onForeground.Load(); f != nil {
		(*f)(int(n))
	}
}

// IdleCompileLimit is how long a compiler may run under SCHED_IDLE before
// it is stopped and started again at LowPriority alone.
var IdleCompileLimit = 10 * time.Second

// A compiler's priority: the caller's, LowPriority, or LowPriority under
// SCHED_IDLE.
const (
	priorityNormal = iota
	priorityLow
	priorityIdle
)

// run runs the compiler command line args at priority, its output into
// out. Cancelling ctx kills the compiler's whole process group: the
// driver's children (cc1, as, ld) hold its output pipe, and would
// otherwise run to their end before it returns.
//
// The compiler's temporary files (cc1's assembly, as's objects) go into a
// directory of its own (TMPDIR), removed when it ends or is killed.
func run(ctx context.Context, args []string, out *bytes.Buffer, priority int) error {
	tmp, err := os.MkdirTemp("", "neoflow-cc-")
	if err != nil {
		return errors.Wrap(err, "the C compiler's temporary directory")
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdout = out
	cmd.Stderr = out
	// Forked from a thread at LowPriority (under SCHED_IDLE), the driver
	// and its children (cc1, as, ld) are born so. (Lowering the driver
	// after Start raced with it: on a busy machine it had often forked cc1
	// by then.)
	switch priority {
	case priorityIdle:
		onIdleThread(func() { err = cmd.Start() })
	case priorityLow:
		OnOwnThread(WithLowPriority(context.Background()), func() { err = cmd.Start() })
	default:
		err = cmd.Start()
	}
	if err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	if !track(pgid, tmp) {
		cmd.Wait()
		return errStopped
	}
	defer untrack(pgid)
	return cmd.Wait()
}
