package torchbridge

import (
	"sync"

	"github.com/neoflow/neoflow/core/ir"
)

// specialized is one run of the Kernel plan: the spec a kernel is built
// from and its explanation.
type specialized struct {
	spec      *ir.Spec
	explained string
}

// maxSpecialized bounds a specCache; when full it is emptied, and the
// specializations asked for again are run again.
const maxSpecialized = 1024

// specCache keeps the Kernel plan's results by op and specialization key
// (specKey), so that the requests of a first call (the shapes, the
// build, the source) run the passes once. Safe for concurrent use. A
// spec is never changed once made (every pass returns a new one).
type specCache struct {
	mu sync.Mutex
	m  map[*ir.Op]map[string]specialized
	n  int
}

func (c *specCache) get(op *ir.Op, key string) (specialized, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[op][key]
	return s, ok
}

func (c *specCache) put(op *ir.Op, key string, s specialized) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.n >= maxSpecialized {
		c.m, c.n = map[*ir.Op]map[string]specialized{}, 0
	}
	if c.m[op] == nil {
		c.m[op] = map[string]specialized{}
	}
	if _, ok := c.m[op][key]; !ok {
		c.n++
	}
	c.m[op][key] = s
}

// drop forgets an op's specializations (the op was released).
func (c *specCache) drop(op *ir.Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n -= len(c.m[op])
	delete(c.m, op)
}

// clear forgets every specialization (the settings changed).
func (c *specCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.n = nil, 0
}
