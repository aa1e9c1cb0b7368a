package autodiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// GradOp is a derived op: a gradient op (Grad, GradSaving,
// GradRecomputing) or a tangent op (Tangent, with Tangents set).
type GradOp struct {
	// Op is an ordinary op, built as IR (never printed and parsed back);
	// its Source is ir.Print(Op), for messages.
	//
	// Inputs of Op, in order: the forward inputs (same names), then one
	// gradient per forward output, "d_<Out>" (the output's shape), in the
	// order of spec.Outputs(). Outputs of Op, in order: "d_<In>" for each
	// input selected by wrt (the input's shape). A name d_X that is taken
	// (an op with tensors X and d_X) is made fresh, d_X_1, d_X_2, ...: the
	// positions, not the names, match gradients to tensors. A gradient op derived by
	// GradSaving takes the forward tensors listed in Saved after the
	// output gradients.
	Op *ir.Op
	// Saved lists, for GradSaving, the forward temporaries and outputs the
	// gradient op reads instead of recomputing them, by their forward
	// names, in forward statement order; the gradient op's last
	// len(Saved) inputs are these tensors (renamed where a forward name
	// collides with a gradient name). Empty for Grad.
	Saved []string
	// Recomputed maps, for GradRecomputing, each forward tensor the
	// gradient op computes again to the name it has there.
	Recomputed map[string]string
	// Sizes are the extents to pass to sema.Specialize for the index
	// variables it cannot infer. Each name has one extent in every
	// statement that uses it.
	Sizes map[string]int64
	// Tangents, for a tangent op, selects the forward inputs it takes
	// tangents of (the wrt of Tangent); nil for a gradient op.
	Tangents []bool

	notes []string // per statement of Op, for Explain
}

// InputShapes lists the shapes of Op's inputs in order, to specialize it
// with (sema.Specialize, with Sizes): those of fwd's inputs, of its
// outputs (their gradients), then of the Saved tensors; for a tangent op,
// those of fwd's inputs, then of the selected ones (their tangents). fwd
// is the spec g was derived from.
func (g *GradOp) InputShapes(fwd *ir.Spec) [][]int64 {
	var shapes [][]int64
	if g.Tangents != nil { // a tangent op: the inputs, then the selected ones' tangents
		ins := fwd.InputsDecl()
		for _, t := range ins {
			shapes = append(shapes, t.Shape)
		}
		for i, t := range ins {
			if g.Tangents[i] {
				shapes = append(shapes, t.Shape)
			}
		}
		return shapes
	}
	for _, t := range append(fwd.InputsDecl(), fwd.Outputs()...) {
		shapes = append(shapes, t.Shape)
	}
	for _, name := range g.Saved {
		shapes = append(shapes, fwd.Tensor(name).Shape)
	}
	return shapes
}

// Grad returns the op computing the gradients of spec's outputs with
// respect to the inputs selected by wrt (len(wrt) == number of inputs):
// given the forward inputs and d_<Out> for each output, it computes
// d_<In> = Σ_outputs Σ d_<Out> · ∂<Out>/∂<In>. See the package
// documentation for the method.
//
// The result is checked before it is returned: it specializes (bounds
// proof included) for the forward shapes and Sizes, and its outputs are
// the requested gradients. Specialize it with
//
//	sema.Specialize(g.Op, spec.DType, shapes(forward inputs ++ forward outputs), g.Sizes)
func Grad(spec *ir.Spec, wrt []bool) (*GradOp, error) {
	return grad(spec, wrt, gradOptions{})
}

// GradSaving is Grad for a caller that keeps the forward op's temporaries
// and outputs: instead of recomputing the forward statements it reads,
// the gradient op takes the tensors those statements wrote as inputs
// (GradOp.Saved), as PyTorch eager saves activations for the backward.
// A statement's own value is then read, not recomputed, so a gradient op
// of an op whose temporaries are matrix products does no product twice.
func GradSaving(spec *ir.Spec, wrt []bool) (*GradOp, error) {
	return grad(spec, wrt, gradOptions{save: true})
}

// GradRecomputing is GradSaving except for the forward tensors named in
// recompute: the gradient op computes those again from what their
// statements read (saved tensors, forward inputs, or tensors it
// recomputes too) instead of taking them saved. A name that is not a
// tensor a single forward statement writes whole is saved as GradSaving
// would. core/fuse's Recompute chooses the names by the fusion reward.
func GradRecomputing(spec *ir.Spec, wrt []bool, recompute map[string]bool) (*GradOp, error) {
	return grad(spec, wrt, gradOptions{save: true, recompute: recompute})
}

// gradOptions are internal knobs of Grad for tests.
type gradOptions struct {
	// forceSNF inverts every quasi-affine read through the Smith normal
	// form, skipping Gauss-Jordan elimination.
	forceSNF bool
	// save takes the forward tensors the gradient reads as inputs
	// (GradSaving) instead of recomputing them, except those named in
	// recompute (GradRecomputing).
	save      bool
	recompute map[string]bool
}

func grad(spec *ir.Spec, wrt []bool, opts gradOptions) (*GradOp, error) {
	b, err := newBuilder(spec, wrt, "d_")
	if err != nil {
		return nil, err
	}
	op := spec.Op
	b.forceSNF = opts.forceSNF
	body, err := b.run(wrt)
	if err != nil {
		return nil, err
	}
	for _, g := range body {
		substituteIndirect(g, b.shapes)
	}
	var outputs []string
	for i, in := range op.Inputs {
		if wrt[i] {
			outputs = append(outputs, b.dIn[in])
		}
	}
	body = prune(body, outputs)
	all, saved, recomputed := b.withForward(body, opts)

	inputs := slices.Clone(op.Inputs)
	var shapes [][]int64
	for _, t := range spec.InputsDecl() {
		shapes = append(shapes, t.Shape)
	}
	for _, t := range spec.Outputs() {
		inputs = append(inputs, b.dOut[t.Name])
		shapes = append(shapes, t.Shape)
	}
	for _, t := range saved {
		inputs = append(inputs, b.gname(t))
		shapes = append(shapes, b.shapes[b.gname(t)])
	}
	anchorInputs(all, inputs, outputs[0], b.shapes)

	var want [][]int64
	for i, in := range op.Inputs {
		if wrt[i] {
			want = append(want, spec.Tensor(in).Shape)
		}
	}
	g, err := b.assemble(gradName(op), inputs, outputs, shapes, all, want)
	if err != nil {
		return nil, err
	}
	g.Saved, g.Recomputed = saved, recomputed
	return g, nil
}

// assemble makes the derived op from its statements all: the extents
// sema cannot infer (Sizes), the op, checked before it is returned: it
// specializes (bounds proof included) for the input shapes, and its
// outputs are outputs, with the shapes want.
func (b *builder) assemble(name string, inputs, outputs []string, shapes [][]int64, all []*gstmt, want [][]int64) (*GradOp, error) {
	kind := b.memo.kind
	taken := nameSet{}
	for c := range b.consts {
		taken[c] = true
	}
	sizes := resolveSizes(all, taken, b.shapes)

	gop := &ir.Op{Name: name, Inputs: inputs, Outputs: outputs, Consts: b.consts}
	var notes []string
	for _, g := range all {
		gop.Stmts = append(gop.Stmts, g.s)
		notes = append(notes, g.note)
	}
	if err := checkOpSize(b.fwd, gop, kind); err != nil {
		return nil, err
	}
	// The op goes on as built, not printed and parsed back: a folded
	// constant may have no literal (1e308 * 1e308 is +Inf).
	src := ir.Print(gop)
	gop.Source = src
	gs, err := sema.SpecializeTyped(gop, b.dtype, shapes, sizes, b.ints)
	if err != nil {
		return nil, errors.Errorf("autodiff: internal error: the %s op does not specialize: %v\n%s", kind, err, src)
	}
	outs := gs.Outputs()
	for i, name := range outputs {
		if i >= len(outs) || outs[i].Name != name || !slices.Equal(outs[i].Shape, want[i]) {
			return nil, errors.Errorf("autodiff: internal error: the %s op's outputs are not %s\n%s", kind, strings.Join(outputs, ", "), src)
		}
	}
	if len(outs) != len(outputs) {
		return nil, errors.Errorf("autodiff: internal error: the %s op has extra outputs\n%s", kind, src)
	}
	return &GradOp{Op: gop, Sizes: sizes, notes: notes}, nil
}

// withForward is the gradient statements body with the forward ones they
// need before them: all of them recomputed (Grad), or, saving, those
// opts.recompute names (GradRecomputing), the rest read saved. saved
// lists the saved tensors by forward name, recomputed maps each
// recomputed forward tensor to its gradient-op name.
func (b *builder) withForward(body []*gstmt, opts gradOptions) (all []*gstmt, saved []string, recomputed map[string]string) {
	if !opts.save {
		return append(b.recompute(body), body...), nil, nil
	}
	saved, rec, recomputed := b.savedOrRecomputed(body, opts.recompute)
	return append(rec, body...), saved, recomputed
}

func nameSpace(op *ir.Op) string {
	if op.Name == "" {
		return ""
	}
	return op.Name + " "
}

func gradName(op *ir.Op) string {
	if op.Name == "" {
		return "grad"
	}
	return op.Name + "_grad"
}

// prune drops statements nothing reads (a gradient that reaches no input
// through a non-zero derivative), except the outputs.
func prune(stmts []*gstmt, outputs []string) []*gstmt {
	for {
		read := map[string]bool{}
		for _, g := range stmts {
			for _, a := range accessesOf(g.s.RHS) {
				read[a.Tensor] = true
			}
		}
		var out []*gstmt
		for _, g := range stmts {
			if read[g.s.Tensor] || slices.Contains(outputs, g.s.Tensor) {
				out = append(out, g)
			}
		}
		if len(out) == len(stmts) {
			return out
		}
		stmts = out
	}
}

// anchorInputs makes the op read every input: sema rejects an op with an
// input it never reads, and the contract fixes the inputs, so an input the
// gradient does not need (a d_<Out> of an output that does not depend on a
// selected input, a forward input no derivative uses) is read in a branch
// that never runs, where(0 > 1, X[0, ...] + ..., rhs), in the statement
// writing the first output.
func anchorInputs(all []*gstmt, inputs []string, first string, shapes map[string][]int64) {
	read := map[string]bool{}
	for _, g := range all {
		for _, a := range accessesOf(g.s.RHS) {
			read[a.Tensor] = true
		}
	}
	var anchors ir.Expr
	var names []string
	for _, in := range inputs {
		if read[in] {
			continue
		}
		a := &ir.Access{Tensor: in}
		for range shapes[in] {
			a.Indices = append(a.Indices, ilit(0))
		}
		anchors = addAnchor(anchors, a)
		names = append(names, in)
	}
	if anchors == nil {
		return
	}
	for _, g := range all {
		if g.s.Tensor == first {
			s := *g.s
			s.RHS = where(never(), anchors, s.RHS)
			g.s = &s
			g.note += fmt.Sprintf("; never-taken read of %s, which the gradient does not use", strings.Join(names, ", "))
			return
		}
	}
}

// Explain renders a gradient op for people: the inputs and outputs, each
// statement of the derived gradient (guards included) with a note on how
// it was derived, and the sizes. The text parses back to the op (notes
// are comments).
func Explain(g *GradOp) string {
	if g == nil || g.Op == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# inputs: %s\n", g.Op.Name, strings.Join(g.Op.Inputs, ", "))
	read := map[string]bool{}
	for _, s := range g.Op.Stmts {
		for _, a := range accessesOf(s.RHS) {
			read[a.Tensor] = true
		}
	}
	outs := g.Op.Outputs // a tangent op's outputs may be read by its later statements
	if len(outs) == 0 {
		for _, s := range g.Op.Stmts {
			if !read[s.Tensor] {
				outs = append(outs, s.Tensor)
			}
		}
	}
	fmt.Fprintf(&b, "# outputs: %s\n", strings.Join(outs, ", "))
	for i, s := range g.Op.Stmts {
		b.WriteString(ir.StmtString(s))
		if i < len(g.notes) && g.notes[i] != "" {
			b.WriteString("  # " + g.notes[i])
		}
		b.WriteByte('\n')
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g.Sizes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, g.Sizes[k]))
	}
	if len(parts) == 0 {
		b.WriteString("# sizes: none")
	} else {
		b.WriteString("# sizes: " + strings.Join(parts, ", "))
	}
	return b.String()
}
