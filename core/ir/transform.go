package ir

import (
	"slices"
	"strconv"

	"github.com/pkg/errors"
)

// Batched is op with the index variable v first in every access of the
// tensors named in batched and of every tensor op writes (its statements'
// left-hand sides and reads of them alike): op computed once for a whole
// batch of examples, example v of the batch computed as op computes one
// (torch.vmap). v must be a name op does not use (FreshName).
func Batched(op *Op, batched map[string]bool, v string) *Op {
	written := map[string]bool{}
	for _, s := range op.Stmts {
		written[s.Tensor] = true
	}
	add := func(name string) bool { return batched[name] || written[name] }
	out := cloneOp(op)
	for i, s := range op.Stmts {
		c := *s
		c.Indices = append([]*Index{{Pos: s.Pos, Name: v}}, s.Indices...)
		c.RHS = Rewrite(s.RHS, func(e Expr) Expr {
			if a, ok := e.(*Access); ok && add(a.Tensor) {
				n := *a
				n.Indices = append([]Expr{&Index{Pos: a.Pos, Name: v}}, a.Indices...)
				return &n
			}
			return nil
		})
		out.Stmts[i] = &c
	}
	return out
}

// Instance is op made to stand among the statements of another op (the
// torch.compile backend lowers a user's op inside a subgraph's op): every
// tensor it writes is renamed tensorPrefix + name, every index variable
// indexPrefix + name, every named constant becomes its value, and every
// read of an input becomes reads[input], a template in which the index
// variables _0, _1, ... stand for the read's indices. An input without a
// template, or a template that names an index the read does not have, is
// an error.
func Instance(op *Op, tensorPrefix, indexPrefix string, reads map[string]Expr) (*Op, error) {
	written := map[string]bool{}
	for _, s := range op.Stmts {
		written[s.Tensor] = true
	}
	out := cloneOp(op)
	out.Consts = nil
	var err error
	index := func(e Expr) Expr {
		return Rewrite(e, func(n Expr) Expr {
			switch x := n.(type) {
			case *Index:
				return &Index{Pos: x.Pos, Name: indexPrefix + x.Name}
			case *Const:
				if x.IsFloat {
					return &FloatLit{Pos: x.Pos, Value: x.Float}
				}
				return &IntLit{Pos: x.Pos, Value: x.Int}
			}
			return nil
		})
	}
	for i, s := range op.Stmts {
		c := *s
		c.Tensor = tensorPrefix + s.Tensor
		c.Indices = make([]*Index, len(s.Indices))
		for k, x := range s.Indices {
			c.Indices[k] = &Index{Pos: x.Pos, Name: indexPrefix + x.Name}
		}
		c.RHS = Rewrite(index(s.RHS), func(e Expr) Expr {
			a, ok := e.(*Access)
			if !ok {
				return nil
			}
			if written[a.Tensor] {
				n := *a
				n.Tensor = tensorPrefix + a.Tensor
				return &n
			}
			r, e2 := readThrough(a, reads[a.Tensor])
			if e2 != nil && err == nil {
				err = e2
			}
			return r
		})
		out.Stmts[i] = &c
	}
	if err != nil {
		return nil, err
	}
	out.Inputs = nil
	for k, name := range out.Outputs {
		out.Outputs[k] = tensorPrefix + name
	}
	return out, nil
}

// readThrough is a read of an input through its template: the template
// with _k replaced by the read's k-th index.
func readThrough(a *Access, template Expr) (Expr, error) {
	if template == nil {
		return nil, errors.Errorf("no read is given for input %s", a.Tensor)
	}
	sub := map[string]Expr{}
	for k, x := range a.Indices {
		sub["_"+strconv.Itoa(k)] = x
	}
	var err error
	Walk(template, func(e Expr) bool {
		if x, ok := e.(*Index); ok && sub[x.Name] == nil && err == nil {
			err = errors.Errorf("the read given for input %s (rank %d) names index %s, which is not _0 to _%d", a.Tensor, len(a.Indices), x.Name, len(a.Indices)-1)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return SubstIndex(template, sub), nil
}

// FreshName is base, or base followed by as many '_' as it takes to be a
// name op does not use for a tensor, an index variable or a constant.
func FreshName(op *Op, base string) string {
	used := map[string]bool{}
	for name := range op.Consts {
		used[name] = true
	}
	for _, s := range op.Stmts {
		used[s.Tensor] = true
		for _, x := range s.Indices {
			used[x.Name] = true
		}
		Walk(s.RHS, func(e Expr) bool {
			switch x := e.(type) {
			case *Access:
				used[x.Tensor] = true
			case *Index:
				used[x.Name] = true
			}
			return true
		})
	}
	name := base
	for used[name] {
		name += "_"
	}
	return name
}

// cloneOp is a copy of op whose statement slice and name lists may be
// changed without changing op's.
func cloneOp(op *Op) *Op {
	c := *op
	c.Stmts = slices.Clone(op.Stmts)
	c.Inputs = slices.Clone(op.Inputs)
	c.Outputs = slices.Clone(op.Outputs)
	return &c
}
