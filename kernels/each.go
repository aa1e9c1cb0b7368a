package kernels

import (
	"runtime"
	"sync"
)

// BuildEach calls build(i) for every i < n, parallel at once (below 1:
// as many as there are CPUs; each build mostly runs the C compiler), and
// returns the kernels in order. On an error it closes the kernels that
// were built and returns the first error, by index.
func BuildEach(n, parallel int, build func(i int) (*Kernel, error)) ([]*Kernel, error) {
	ks, errs := make([]*Kernel, n), make([]error, n)
	if parallel < 1 {
		parallel = runtime.NumCPU()
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ks[i], errs[i] = build(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, k := range ks {
				if k != nil {
					_ = k.Close()
				}
			}
			return nil, err
		}
	}
	return ks, nil
}
