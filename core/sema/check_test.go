package sema

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		desc   string
		src    string
		inputs []string // fixes Op.Inputs when set
		outs   []string // fixes Op.Outputs when set
		consts map[string]parse.ConstValue
		want   []string // error fragments; none means valid
	}{
		{desc: "conv", src: "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]"},
		{desc: "softmax", src: "M[i] max= X[i,j]\nE[i,j] = exp(X[i,j] - M[i])\nS[i] += E[i,j]\nY[i,j] = E[i,j] / S[i]"},
		{desc: "padding guard", src: "Y[i] += where(i+r-1 >= 0 && i+r-1 < 8, X[i+r-1], 0.0) * W[r]"},
		{desc: "value comparison in where", src: "Y[i] = where(A[i] > 0.0, A[i], 0.0)"},
		{desc: "index promoted to value", src: "Y[i] = A[i] * i + 1"},
		{desc: "index div by int constant", src: "Y[i] = A[i / G]", consts: ints("G", 2)},
		{desc: "scalar output", src: "S[] += X[i]"},
		{desc: "index where", src: "Y[i] = A[where(i < 3, i, 3)]"},

		{desc: "float literal index", src: "Y[i] = A[1.5]",
			want: []string{"1:10:", "index expression of A must be an integer expression, got a value: 1.5"}},
		{desc: "float constant index", src: "Y[i] = A[i + eps]", consts: ints("eps", 0.5),
			want: []string{"index expression of A must be an integer expression, got a value: i + eps"}},
		{desc: "tensor value in index arithmetic", src: "Y[i] = A[B[i] * 2]",
			want: []string{"index expression of A must be an integer expression, got a value: B[i] * 2", "must stand alone"}},
		{desc: "bool index", src: "Y[i] = A[i < 2]",
			want: []string{"index expression of A must be an integer expression, got a bool: i < 2"}},
		{desc: "where condition not bool", src: "Y[i] = where(A[i], 1.0, 0.0)",
			want: []string{"condition of where must be a bool (a comparison), got a value: A[i]"}},
		{desc: "and operand not bool", src: "Y[i] = where(i && i < 2, A[i], 0.0)",
			want: []string{"1:14:", "operand of && must be a bool (a comparison), got an integer expression: i"}},
		{desc: "not operand not bool", src: "Y[i] = where(!A[i], A[i], 0.0)",
			want: []string{"operand of ! must be a bool"}},
		{desc: "bool as value operand", src: "Y[i] = A[i] + (i < 2)",
			want: []string{"operand of + must be a number, got a bool: i < 2"}},
		{desc: "bool right-hand side", src: "Y[i] = A[i] < 2.0",
			want: []string{"the right-hand side of Y must be a number, got a bool"}},
		{desc: "bool where branch", src: "Y[i] = where(i < 2, i < 3, A[i])",
			want: []string{"branch of where must be a number, got a bool: i < 3"}},
		{desc: "bool function argument", src: "Y[i] = exp(A[i] > 0.0)",
			want: []string{"argument of exp must be a number, got a bool"}},
		{desc: "index division by variable", src: "Y[i,j] = A[i / j, j]",
			want: []string{"1:16:", "divisor of / in an index expression must be a positive integer constant, got j"}},
		{desc: "index modulo by zero", src: "Y[i] = A[i % 0]",
			want: []string{"divisor of % in an index expression must be a positive integer constant, got 0"}},
		{desc: "index division by negative", src: "Y[i] = A[i / -2]",
			want: []string{"divisor of / in an index expression must be a positive integer constant, got -2"}},
		{desc: "index division in value context", src: "Y[i,j] = A[i,j] * (i / j)",
			want: []string{"divisor of / in an index expression"}},

		{desc: "written twice", src: "Y[i] = A[i]\nY[i] = A[i]",
			want: []string{"2:1:", "tensor Y is written twice (first at 1:1)"}},
		{desc: "reads itself", src: "Y[i] += Y[i] * A[i]",
			want: []string{"1:9:", "statement writing Y also reads it"}},
		{desc: "input written", src: "Y[i] = A[i]", inputs: []string{"A", "Y"},
			want: []string{"tensor Y is an input of the op and cannot be written"}},
		{desc: "unknown tensor", src: "Y[i] = A[i] + Z[i]", inputs: []string{"A"},
			want: []string{"1:15:", "unknown tensor Z"}},
		{desc: "read before written", src: "U[i] = T[i]\nT[i] = A[i]", inputs: []string{"A"},
			want: []string{"1:8:", "tensor T is read before the statement that writes it"}},
		{desc: "input never read", src: "Y[i] = A[i]", inputs: []string{"A", "B"},
			want: []string{"input B is never read"}},
		{desc: "input listed twice", src: "Y[i] = A[i]", inputs: []string{"A", "A"},
			want: []string{"input A is listed twice"}},
		{desc: "outputs reordered", src: "Y[i] = A[i]\nZ[i] = A[i]", outs: []string{"Z", "Y"}},
		{desc: "output listed twice", src: "Y[i] = A[i]\nZ[i] = A[i]", outs: []string{"Z", "Z"},
			want: []string{"output Z is listed twice"}},
		{desc: "an output a later statement reads", src: "T[i] = A[i]\nZ[i] = T[i]", outs: []string{"Z", "T"}},
		{desc: "input listed as output", src: "T[i] = A[i]\nZ[i] = T[i]", outs: []string{"Z", "A"},
			want: []string{"A is not an output of op", "no later statement reads, Z, must be outputs"}},
		{desc: "output left out", src: "Y[i] = A[i]\nZ[i] = A[i]", outs: []string{"Z"},
			want: []string{"the output list Z leaves out output Y"}},

		{desc: "rank mismatch", src: "Y[i] = X[i, 0, 1] + X[i, 0, 1, 2]",
			want: []string{"1:21:", "rank mismatch: X is used with 4 indices here but 3 at 1:8"}},
		{desc: "rank mismatch with left-hand side", src: "T[i] = A[i]\nY[i] = T[i, i]",
			want: []string{"2:8:", "rank mismatch: T is used with 2 indices here but 1 at 1:1"}},

		{desc: "reduction axis under =", src: "Y[i] = A[i, j]",
			want: []string{"1:13:", "index j appears only on the right-hand side of '='", "+="}},
		{desc: "unknown index in value", src: "Y[i] = A[i] * j",
			want: []string{"1:15:", "unknown index j: it is neither on the left-hand side nor in any tensor access"}},
		{desc: "unknown index in guard", src: "Y[i] += where(j < 3, A[i], 0.0)",
			want: []string{"unknown index j"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			op := mustParse(t, tc.src, parse.Options{Inputs: tc.inputs, Outputs: tc.outs, Consts: tc.consts})
			checkErr(t, Check(op), tc.want...)
		})
	}
}

// TestCheckHandBuilt covers ops the parser would reject itself.
func TestCheckHandBuilt(t *testing.T) {
	i := func() *ir.Index { return &ir.Index{Name: "i"} }
	a := &ir.Access{Tensor: "A", Indices: []ir.Expr{i()}}
	tests := []struct {
		desc string
		op   *ir.Op
		want []string
	}{
		{desc: "no statements", op: &ir.Op{Name: "empty"}, want: []string{"op empty has no statements"}},
		{desc: "duplicate left-hand index", op: &ir.Op{Inputs: []string{"A"}, Stmts: []*ir.Stmt{
			{Tensor: "Y", Indices: []*ir.Index{i(), i()}, Reduce: ir.Assign, RHS: a}}},
			want: []string{"index i appears twice on the left-hand side of Y"}},
		{desc: "missing right-hand side", op: &ir.Op{Stmts: []*ir.Stmt{{Tensor: "Y", Indices: []*ir.Index{i()}}}},
			want: []string{"statement writing Y has no right-hand side"}},
		{desc: "wrong arity", op: &ir.Op{Inputs: []string{"A"}, Stmts: []*ir.Stmt{
			{Tensor: "Y", Indices: []*ir.Index{i()}, RHS: &ir.Call{Fn: ir.FuncMax, Args: []ir.Expr{a}}}}},
			want: []string{"max takes 2 argument(s), got 1"}},
		{desc: "valid", op: &ir.Op{Inputs: []string{"A"}, Stmts: []*ir.Stmt{
			{Tensor: "Y", Indices: []*ir.Index{i()}, RHS: a}}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			checkErr(t, Check(tc.op), tc.want...)
		})
	}
}
