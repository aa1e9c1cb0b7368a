package testops

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

//go:embed ops.json
var table []byte

// Op is a test operator at its test sizes: its source, input shapes and
// optional sizes and constants.
type Op struct {
	Name   string
	Desc   string
	Src    string
	Inputs []string
	// Outputs names the op's outputs in order when a later statement
	// reads one of them (parse.Options.Outputs); empty: the default.
	Outputs []string
	Shapes  [][]int64
	Sizes   map[string]int64
	Consts  map[string]parse.ConstValue
	// Want is the shape every output and temporary must get.
	Want map[string][]int64
	// Positive asks for inputs in (0.5, 1.5] instead of [-1, 1) (for log,
	// sqrt, pow, division).
	Positive bool
	// Ints gives the element type of each integer input (the others have
	// the float dtype the op is specialized to).
	Ints map[string]ir.DType
}

// entry is one op of ops.json.
type entry struct {
	Name     string                 `json:"name"`
	Desc     string                 `json:"desc"`
	Source   string                 `json:"source"`
	Inputs   []string               `json:"inputs"`
	Outputs  []string               `json:"outputs"`
	Consts   map[string]json.Number `json:"consts"`
	Test     variant                `json:"test"`
	Bench    *variant               `json:"bench"`
	Positive bool                   `json:"positive"`
	// Ints are the integer inputs: their dtype and, for pytest, the bound
	// of their values, [0, high) (an index tensor's must be its Limit).
	Ints map[string]struct {
		DType string `json:"dtype"`
		High  int64  `json:"high"`
	} `json:"ints"`
	Torch string `json:"torch"`
}

type variant struct {
	Shapes [][]int64              `json:"shapes"`
	Sizes  map[string]int64       `json:"sizes"`
	Consts map[string]json.Number `json:"consts"`
	Want   map[string][]int64     `json:"want"`
}

// All is the table, in the order of ops.json.
var All = mustLoad(table)

func mustLoad(data []byte) []Op {
	ops, err := load(data)
	if err != nil {
		panic("testops: ops.json: " + err.Error())
	}
	return ops
}

func load(data []byte) ([]Op, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var entries []entry
	if err := dec.Decode(&entries); err != nil {
		return nil, err
	}
	var ops []Op
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Name == "" || seen[e.Name] || e.Torch == "" || len(e.Test.Shapes) != len(e.Inputs) {
			return nil, errors.Errorf("op %q: a unique name, a torch reference and one test shape per input are required", e.Name)
		}
		seen[e.Name] = true
		var ints map[string]ir.DType
		for name, it := range e.Ints {
			d, err := ir.ParseDType(it.DType)
			if err != nil || !d.Integer() || it.High < 1 {
				return nil, errors.Errorf("op %s: integer input %s needs an integer dtype and a high of at least 1", e.Name, name)
			}
			if ints == nil {
				ints = map[string]ir.DType{}
			}
			ints[name] = d
		}
		consts := map[string]parse.ConstValue{}
		for _, m := range []map[string]json.Number{e.Consts, e.Test.Consts} {
			for k, v := range m {
				c, err := constValue(v)
				if err != nil {
					return nil, errors.Wrapf(err, "op %s: constant %s", e.Name, k)
				}
				consts[k] = c
			}
		}
		ops = append(ops, Op{Name: e.Name, Desc: e.Desc, Src: e.Source, Inputs: e.Inputs, Outputs: e.Outputs, Shapes: e.Test.Shapes,
			Sizes: e.Test.Sizes, Consts: consts, Want: e.Test.Want, Positive: e.Positive, Ints: ints})
	}
	return ops, nil
}

// constValue is an integer constant, or a float one when written with a
// '.' or an exponent (7.0).
func constValue(v json.Number) (parse.ConstValue, error) {
	if !strings.ContainsAny(v.String(), ".eE") {
		n, err := v.Int64()
		return parse.ConstValue{Int: n}, err
	}
	f, err := v.Float64()
	return parse.ConstValue{IsFloat: true, Float: f}, err
}

// Spec parses and specializes the op for dt.
func (o Op) Spec(dt ir.DType) (*ir.Spec, error) {
	op, err := parse.Parse(o.Src, parse.Options{Name: o.Name, Inputs: o.Inputs, Outputs: o.Outputs, Consts: o.Consts})
	if err != nil {
		return nil, errors.Wrapf(err, "parsing %s", o.Name)
	}
	spec, err := sema.SpecializeTyped(op, dt, o.Shapes, o.Sizes, o.Ints)
	if err != nil {
		return nil, errors.Wrapf(err, "specializing %s", o.Name)
	}
	return spec, nil
}

// Lookup finds an op by name.
func Lookup(name string) (Op, bool) {
	for _, o := range All {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// GradSpec derives the gradient of o's dt specialization with respect to
// every floating-point input and specializes it for o's shapes.
func (o Op) GradSpec(dt ir.DType) (*ir.Spec, *autodiff.GradOp, error) {
	return o.derivedSpec(dt, autodiff.Grad, "gradient")
}

// TangentSpec derives the tangent op (forward mode) of o's dt
// specialization along every floating-point input and specializes it for
// o's shapes.
func (o Op) TangentSpec(dt ir.DType) (*ir.Spec, *autodiff.GradOp, error) {
	return o.derivedSpec(dt, autodiff.Tangent, "tangent")
}

func (o Op) derivedSpec(dt ir.DType, derive func(*ir.Spec, []bool) (*autodiff.GradOp, error), what string) (*ir.Spec, *autodiff.GradOp, error) {
	fwd, err := o.Spec(dt)
	if err != nil {
		return nil, nil, err
	}
	wrt := make([]bool, len(fwd.InputsDecl()))
	for i, t := range fwd.InputsDecl() {
		wrt[i] = !t.DType.Integer()
	}
	g, err := derive(fwd, wrt)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "deriving the %s of %s", what, o.Name)
	}
	spec, err := sema.SpecializeTyped(g.Op, dt, g.InputShapes(fwd), g.Sizes, fwd.IntInputs())
	if err != nil {
		return nil, nil, errors.Wrapf(err, "specializing the %s of %s", what, o.Name)
	}
	return spec, g, nil
}
