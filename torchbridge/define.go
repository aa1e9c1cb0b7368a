package torchbridge

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// Define parses and checks an op and registers it.
func (r *Runtime) Define(req *api.DefineRequest) (*api.DefineResponse, error) {
	consts := map[string]parse.ConstValue{}
	for name, s := range req.GetConsts() {
		switch v := s.GetValue().(type) {
		case *api.Scalar_Int:
			consts[name] = parse.ConstValue{Int: v.Int}
		case *api.Scalar_Float:
			consts[name] = parse.ConstValue{IsFloat: true, Float: v.Float}
		default:
			return nil, errors.Errorf("constant %s has no value", name)
		}
	}
	if err := checkName(req.GetName()); err != nil {
		return nil, err
	}
	op, err := parse.Parse(req.GetSource(), parse.Options{Name: req.GetName(), Inputs: req.GetInputs(), Outputs: req.GetOutputs(), Consts: consts})
	if err != nil {
		return nil, err
	}
	return r.register(op, req.GetForwardOnly())
}

// MaxNameLen is the longest op name.
const MaxNameLen = 128

// checkName accepts an empty name or one of 1 to MaxNameLen characters from
// A-Z a-z 0-9 _ . - : a name labels kernels, C symbols and messages.
func checkName(name string) error {
	ok := len(name) <= MaxNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	if !ok {
		return errors.Errorf("op name %.80q is not allowed: a name is 1 to %d characters from A-Z a-z 0-9 _ . -", name, MaxNameLen)
	}
	return nil
}

// register checks an op and adds it to the registry; with keepNone its
// kernels keep no temporaries for a gradient (Runtime.keepNone).
func (r *Runtime) register(op *ir.Op, keepNone bool) (*api.DefineResponse, error) {
	if err := sema.Check(op); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.nextOp++
	id := r.nextOp
	r.ops[id] = op
	if keepNone {
		r.keepNone[op] = true
	}
	r.mu.Unlock()

	resp := &api.DefineResponse{
		OpId:    id,
		Printed: ir.Print(op),
		Inputs:  op.Inputs,
		Outputs: op.OutputNames(),
		Hash:    ir.Hash(op),
		Copies:  ir.Copies(op),
	}
	ranks := ranksOf(op)
	for _, in := range op.Inputs {
		resp.InputRanks = append(resp.InputRanks, int32(ranks[in]))
	}
	for _, out := range resp.Outputs {
		resp.OutputRanks = append(resp.OutputRanks, int32(ranks[out]))
	}
	for _, s := range op.Stmts {
		for _, x := range s.Indices {
			if d, via, ok := ir.ScatterTarget(s, x.Name); ok {
				resp.ScatterAxes = append(resp.ScatterAxes, &api.ScatterAxis{Tensor: s.Tensor, Dim: int32(d), Var: x.Name, Via: ir.ExprString(via)})
			}
		}
	}
	return resp, nil
}

// Release forgets an op. Kernels built for it stay loaded: other ops may
// share them, and a launch in flight must not lose its code.
func (r *Runtime) Release(req *api.ReleaseRequest) (*api.Empty, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specialized.drop(r.ops[req.GetOpId()])
	delete(r.keepNone, r.ops[req.GetOpId()])
	delete(r.gradOf, r.ops[req.GetOpId()])
	delete(r.ops, req.GetOpId())
	delete(r.specs, req.GetOpId())
	return &api.Empty{}, nil
}

func (r *Runtime) op(id uint64) (*ir.Op, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op, ok := r.ops[id]
	if !ok {
		return nil, errors.Errorf("unknown op id %d (released, or defined in another process)", id)
	}
	return op, nil
}

// ranksOf gives the number of indices each tensor is used with.
func ranksOf(op *ir.Op) map[string]int {
	ranks := map[string]int{}
	for _, s := range op.Stmts {
		ranks[s.Tensor] = len(s.Indices)
		ir.Walk(s.RHS, func(e ir.Expr) bool {
			if a, ok := e.(*ir.Access); ok {
				ranks[a.Tensor] = len(a.Indices)
			}
			return true
		})
	}
	return ranks
}
