package ir

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"sort"
)

// Equal reports whether two expressions are structurally identical,
// ignoring positions. Float values (literals and float constants) compare by
// their bits, so 0.0 and -0.0 differ. Constants compare by name and value.
// Two nil expressions are equal.
func Equal(a, b Expr) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case *IntLit:
		y, ok := b.(*IntLit)
		return ok && x.Value == y.Value
	case *FloatLit:
		y, ok := b.(*FloatLit)
		return ok && math.Float64bits(x.Value) == math.Float64bits(y.Value)
	case *Const:
		y, ok := b.(*Const)
		return ok && constEqual(x, y)
	case *Index:
		y, ok := b.(*Index)
		return ok && x.Name == y.Name
	case *Access:
		y, ok := b.(*Access)
		return ok && x.Tensor == y.Tensor && x.Indirect == y.Indirect && equalList(x.Indices, y.Indices)
	case *Unary:
		y, ok := b.(*Unary)
		return ok && x.Op == y.Op && Equal(x.X, y.X)
	case *Binary:
		y, ok := b.(*Binary)
		return ok && x.Op == y.Op && Equal(x.X, y.X) && Equal(x.Y, y.Y)
	case *Call:
		y, ok := b.(*Call)
		return ok && x.Fn == y.Fn && equalList(x.Args, y.Args)
	case *Where:
		y, ok := b.(*Where)
		return ok && Equal(x.Cond, y.Cond) && Equal(x.Then, y.Then) && Equal(x.Else, y.Else)
	}
	return false
}

func constEqual(x, y *Const) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.Name != y.Name || x.IsFloat != y.IsFloat {
		return false
	}
	if x.IsFloat {
		return math.Float64bits(x.Float) == math.Float64bits(y.Float)
	}
	return x.Int == y.Int
}

func equalList(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// EqualOp reports whether two ops are structurally identical: the same
// Inputs, the same statements (tensor, left-hand side indices, assignment
// operator, right-hand side) and the same Consts (names and values). Name,
// Source and positions are ignored; a nil and an empty slice or map are
// equal.
func EqualOp(a, b *Op) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !slices.Equal(a.Inputs, b.Inputs) || !slices.Equal(a.OutputNames(), b.OutputNames()) || len(a.Stmts) != len(b.Stmts) || len(a.Consts) != len(b.Consts) {
		return false
	}
	for i := range a.Stmts {
		if !stmtEqual(a.Stmts[i], b.Stmts[i]) {
			return false
		}
	}
	for k, x := range a.Consts {
		y, ok := b.Consts[k]
		if !ok || !constEqual(x, y) {
			return false
		}
	}
	return true
}

func stmtEqual(x, y *Stmt) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.Tensor != y.Tensor || x.Reduce != y.Reduce || len(x.Indices) != len(y.Indices) {
		return false
	}
	for i := range x.Indices {
		a, b := x.Indices[i], y.Indices[i]
		if a == nil || b == nil {
			if a != b {
				return false
			}
			continue
		}
		if a.Name != b.Name {
			return false
		}
	}
	return Equal(x.RHS, y.RHS)
}

// Hash returns a hex SHA-256 of a canonical encoding of op's structure: the
// same fields EqualOp compares (Inputs, Stmts, Consts, the output order),
// ignoring Name,
// Source and positions. Ops that are EqualOp have the same Hash, stable
// across processes and platforms; use it as a cache key.
func Hash(op *Op) string {
	var h hasher
	h.str("neoflow.ir.Op/v1")
	if op == nil {
		h.tag('0')
		return h.sum()
	}
	h.n(len(op.Inputs))
	for _, in := range op.Inputs {
		h.str(in)
	}
	h.n(len(op.Stmts))
	for _, s := range op.Stmts {
		if s == nil {
			h.tag('0')
			continue
		}
		h.tag('S')
		h.str(s.Tensor)
		h.n(int(s.Reduce))
		h.n(len(s.Indices))
		for _, ix := range s.Indices {
			if ix == nil {
				h.tag('0')
				continue
			}
			h.tag('v')
			h.str(ix.Name)
		}
		h.expr(s.RHS)
	}
	names := make([]string, 0, len(op.Consts))
	for k := range op.Consts {
		names = append(names, k)
	}
	sort.Strings(names)
	h.n(len(names))
	for _, k := range names {
		h.str(k)
		h.expr(op.Consts[k])
	}
	// An output order other than statement order changes the kernel's
	// buffers; the usual order adds nothing, so those hashes stay as they were.
	if outs := op.OutputNames(); !slices.Equal(outs, DefaultOutputs(op.Stmts)) {
		h.tag('O')
		h.n(len(outs))
		for _, o := range outs {
			h.str(o)
		}
	}
	return h.sum()
}

// HashExpr returns a hex SHA-256 of a canonical encoding of e, ignoring
// positions. Expressions that are Equal have the same HashExpr.
func HashExpr(e Expr) string {
	var h hasher
	h.str("neoflow.ir.Expr/v1")
	h.expr(e)
	return h.sum()
}

// hasher builds an unambiguous prefix encoding: every node starts with a tag
// byte, strings are length prefixed and numbers fixed width.
type hasher struct{ buf []byte }

func (h *hasher) tag(c byte)   { h.buf = append(h.buf, c) }
func (h *hasher) u64(v uint64) { h.buf = binary.BigEndian.AppendUint64(h.buf, v) }
func (h *hasher) n(v int)      { h.u64(uint64(int64(v))) }
func (h *hasher) str(s string) {
	h.n(len(s))
	h.buf = append(h.buf, s...)
}

func (h *hasher) sum() string {
	d := sha256.Sum256(h.buf)
	return hex.EncodeToString(d[:])
}

func (h *hasher) list(es []Expr) {
	h.n(len(es))
	for _, e := range es {
		h.expr(e)
	}
}

func (h *hasher) expr(e Expr) {
	switch x := e.(type) {
	case nil:
		h.tag('0')
	case *IntLit:
		h.tag('i')
		h.u64(uint64(x.Value))
	case *FloatLit:
		h.tag('f')
		h.u64(math.Float64bits(x.Value))
	case *Const:
		if x == nil {
			h.tag('0')
			return
		}
		h.tag('c')
		h.str(x.Name)
		if x.IsFloat {
			h.tag('f')
			h.u64(math.Float64bits(x.Float))
		} else {
			h.tag('i')
			h.u64(uint64(x.Int))
		}
	case *Index:
		h.tag('v')
		h.str(x.Name)
	case *Access:
		h.tag('a')
		if x.Indirect {
			h.tag('I')
		}
		h.str(x.Tensor)
		h.list(x.Indices)
	case *Unary:
		h.tag('u')
		h.n(int(x.Op))
		h.expr(x.X)
	case *Binary:
		h.tag('b')
		h.n(int(x.Op))
		h.expr(x.X)
		h.expr(x.Y)
	case *Call:
		h.tag('C')
		h.n(int(x.Fn))
		h.list(x.Args)
	case *Where:
		h.tag('w')
		h.expr(x.Cond)
		h.expr(x.Then)
		h.expr(x.Else)
	default:
		h.tag('?')
	}
}
