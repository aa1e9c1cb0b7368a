package torchbridge

import (
	"context"
	"sync"

	"github.com/neoflow/neoflow/kernels/cc"
)

// interrupter lets a Ctrl-C in Python stop the builds in flight: each build
// runs under the current build context, and Interrupt cancels it (the C
// compiler is killed) and starts a fresh one for later builds.
type interrupter struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// buildContext is the context builds run under now.
func (r *Runtime) buildContext() context.Context {
	in := &r.interrupt
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ctx == nil {
		in.ctx, in.cancel = context.WithCancel(context.Background())
	}
	return in.ctx
}

// Interrupt cancels every build in flight; later builds run normally.
func (r *Runtime) Interrupt() {
	in := &r.interrupt
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cancel != nil {
		in.cancel()
	}
	in.ctx, in.cancel = context.WithCancel(context.Background())
}

// Shutdown stops every build as the process exits: the background queue
// is dropped, the builds in flight (Interrupt) and the background ones are
// stopped and their compilers killed; no kernel is built after it.
func (r *Runtime) Shutdown() {
	r.bg.mu.Lock()
	r.bg.queue = nil
	r.bg.mu.Unlock()
	cc.StopAll()
	r.Interrupt()
}
