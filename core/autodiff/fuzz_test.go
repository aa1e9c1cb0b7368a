package autodiff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// randomIndex draws a quasi-affine index over the variables: Σ a·v + c
// with small coefficients, shifted so that its minimum is 0, optionally
// divided or reduced modulo a small constant. It returns the text and the
// largest value.
func randomIndex(r *rand.Rand, vars []string, ext []int64) (string, int64) {
	var terms []string
	lo, hi := int64(0), int64(0)
	for i, v := range vars {
		a := int64(r.IntN(6)) - 2 // -2..3
		if r.IntN(3) == 0 {
			a = 0
		}
		if a == 0 {
			continue
		}
		terms = append(terms, fmt.Sprintf("%d*%s", a, v))
		if a > 0 {
			hi += a * (ext[i] - 1)
		} else {
			lo += a * (ext[i] - 1)
		}
	}
	terms = append(terms, fmt.Sprint(-lo))
	e := strings.Join(terms, " + ")
	max := hi - lo
	switch r.IntN(6) {
	case 0:
		k := int64(2 + r.IntN(2))
		e, max = fmt.Sprintf("(%s) / %d", e, k), max/k
	case 1:
		k := int64(2 + r.IntN(2))
		e, max = fmt.Sprintf("(%s) %% %d", e, k), min(max, k-1)
	case 2:
		k1, k2 := int64(2+r.IntN(2)), int64(2+r.IntN(2))
		e, max = fmt.Sprintf("(%s) / %d %% %d", e, k1, k2), min(max/k1, k2-1)
	}
	return e, max
}

// randomCase builds a random one-statement op reading X through random
// quasi-affine indices and W through every variable.
func randomCase(seed uint64) gcase {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"i", "j", "k"}[:1+r.IntN(3)]
	ext := make([]int64, len(names))
	sizes := map[string]int64{}
	var spatial, red []string
	for i, v := range names {
		ext[i] = int64(1 + r.IntN(4))
		sizes[v] = ext[i]
		if r.IntN(2) == 0 {
			spatial = append(spatial, v)
		} else {
			red = append(red, v)
		}
	}
	rank := 1 + r.IntN(2)
	nacc := 1 + r.IntN(2)
	xshape := make([]int64, rank)
	accs := make([]string, nacc)
	for a := range accs {
		var ix []string
		var maxes []int64
		for range rank {
			e, m := randomIndex(r, names, ext)
			ix = append(ix, e)
			maxes = append(maxes, m)
		}
		accs[a] = "X[" + strings.Join(ix, ", ") + "]"
		// Sometimes a read shifted below zero, kept in bounds by a guard.
		if off := int64(1 + r.IntN(2)); r.IntN(4) == 0 && maxes[0] >= off {
			ix[0] = fmt.Sprintf("%s - %d", ix[0], off)
			maxes[0] -= off
			accs[a] = fmt.Sprintf("where(%s >= 0, X[%s], 0.0)", ix[0], strings.Join(ix, ", "))
		}
		for d, m := range maxes {
			xshape[d] = max(xshape[d], m+1+int64(r.IntN(2)))
		}
	}
	x1, x2 := accs[0], accs[len(accs)-1]
	w := "W[" + strings.Join(names, ", ") + "]"
	var rhs string
	switch r.IntN(5) {
	case 0:
		rhs = x1 + " * " + w
	case 1:
		rhs = "exp(" + x1 + ") * " + w
	case 2:
		rhs = x1 + " * " + x2 + " * " + w
	case 3:
		rhs = fmt.Sprintf("where(%s < %d, %s, 0.0) * %s", names[0], 1+r.IntN(3), x1, w)
	default:
		rhs = "sigmoid(" + x1 + " * " + w + ") + " + x2
	}
	op := "="
	if len(red) > 0 {
		op = []string{"+=", "+=", "+=", "max=", "min=", "*="}[r.IntN(6)]
	}
	src := fmt.Sprintf("Y[%s] %s %s", strings.Join(spatial, ", "), op, rhs)
	return gcase{name: fmt.Sprintf("fuzz%d", seed), src: src, shapes: [][]int64{xshape, ext}, sizes: sizes}
}

// randomSpec is randomCase(seed) specialized, and its source.
func randomSpec(t *testing.T, seed uint64) (*ir.Spec, string) {
	t.Helper()
	c := randomCase(seed)
	op, err := parse.Parse(c.src, parse.Options{Name: c.name})
	if err != nil {
		t.Fatalf("%s: %v", c.src, err)
	}
	spec, err := sema.Specialize(op, ir.Float64, c.shapes, c.sizes)
	if err != nil {
		t.Fatalf("%s: %v", c.src, err)
	}
	return spec, c.src
}

func FuzzGrad(f *testing.F) {
	for i := range 40 {
		f.Add(uint64(i))
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		spec, _ := randomSpec(t, seed)
		wrt := allTrue(len(spec.Op.Inputs))
		// Both methods: Gauss-Jordan first (the default), and every read
		// through the Smith normal form.
		for _, opts := range []gradOptions{{}, {forceSNF: true}} {
			g, gs := gradSpecOpts(t, spec, wrt, opts)
			r := rand.New(rand.NewPCG(seed, 1))
			xs := randomInputs(r, spec, 0.2, 1.2)
			dys := randomGrads(r, spec)
			checkFD(t, spec, g, gs, xs, dys, wrt, 1e-5)
			if opts.forceSNF {
				checkSNFNotes(t, g, false)
			}
		}
	})
}

// TestQuasiAffineIsExact checks that random quasi-affine reads invert
// exactly: none falls back to the indicator form.
func TestQuasiAffineIsExact(t *testing.T) {
	for seed := uint64(0); seed < 400; seed++ {
		spec, src := randomSpec(t, seed)
		for _, opts := range []gradOptions{{}, {forceSNF: true}} {
			g, err := grad(spec, allTrue(len(spec.Op.Inputs)), opts)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			for i, n := range g.notes {
				if strings.Contains(n, "indicator") {
					t.Errorf("%s (forceSNF %v): indicator fallback:\n%s\n%s", src, opts.forceSNF, ir.StmtString(g.Op.Stmts[i]), n)
				}
			}
		}
	}
}
