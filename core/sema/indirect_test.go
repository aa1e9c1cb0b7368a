package sema

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestIndirectAccessSpecializes(t *testing.T) {
	op := mustParse(t, "O[i, j] += LUT[I[i, k], j]", parse.Options{Inputs: []string{"LUT", "I"}})
	spec, err := SpecializeTyped(op, ir.Float32, [][]int64{{10, 4}, {3, 2}}, nil, map[string]ir.DType{"I": ir.Int64})
	checkErr(t, err)
	in := spec.Tensor("I")
	if in.DType != ir.Int64 || in.Limit != 10 || spec.ElemType(in) != ir.Int64 {
		t.Errorf("I: dtype %v limit %d, want int64 limit 10", in.DType, in.Limit)
	}
	if lut := spec.Tensor("LUT"); spec.ElemType(lut) != ir.Float32 || lut.Limit != 0 {
		t.Errorf("LUT: %v limit %d", spec.ElemType(lut), lut.Limit)
	}
	if o := spec.Tensor("O"); len(o.Shape) != 2 || o.Shape[0] != 3 || o.Shape[1] != 4 {
		t.Errorf("O shape %v, want [3 4]", o.Shape)
	}
}

func TestIndexLimitIsTheLeastExtentIndexed(t *testing.T) {
	op := mustParse(t, "O[b, d] = A[I[b], d] + B[I[b], d]", parse.Options{Inputs: []string{"A", "B", "I"}})
	spec, err := SpecializeTyped(op, ir.Float64, [][]int64{{7, 3}, {5, 3}, {4}}, nil, map[string]ir.DType{"I": ir.Int32})
	checkErr(t, err)
	if l := spec.Tensor("I").Limit; l != 5 {
		t.Errorf("limit %d, want 5", l)
	}
}

func TestIndexTensorMustBeInteger(t *testing.T) {
	src := "O[i, j] = LUT[I[i], j]"
	op := mustParse(t, src, parse.Options{Inputs: []string{"LUT", "I"}})
	_, err := Specialize(op, ir.Float32, [][]int64{{10, 4}, {3}}, nil)
	checkErr(t, err, "I is read as an index, so it must be an int32 or int64 tensor, got float32")
	_, err = SpecializeTyped(op, ir.Float32, [][]int64{{10, 4}, {3}}, nil, map[string]ir.DType{"I": ir.Bool})
	checkErr(t, err, "got bool")
	_, err = SpecializeTyped(op, ir.Float32, [][]int64{{10, 4}, {3}}, nil, map[string]ir.DType{"J": ir.Int32})
	checkErr(t, err, "J, which is not an input")
}

func TestIndexTensorReadAsValueToo(t *testing.T) {
	op := mustParse(t, "O[i, j] = LUT[I[i], j] * I[i]", parse.Options{Inputs: []string{"LUT", "I"}})
	spec, err := SpecializeTyped(op, ir.Float32, [][]int64{{10, 4}, {3}}, nil, map[string]ir.DType{"I": ir.Int32})
	checkErr(t, err)
	if spec.Tensor("I").Limit != 10 {
		t.Errorf("limit %d", spec.Tensor("I").Limit)
	}
}

func TestIndexTensorWrittenByTheOpIsRefused(t *testing.T) {
	op := mustParse(t, "T[i] = X[i]\nO[i] = X[T[i]]", parse.Options{Inputs: []string{"X"}})
	_, err := Specialize(op, ir.Float32, [][]int64{{4}}, nil)
	checkErr(t, err, "T is read as an index, so it must be an input")
}

func TestIndirectInArithmeticIsRefused(t *testing.T) {
	op := mustParse(t, "O[i] = X[I[i] + 1]", parse.Options{Inputs: []string{"X", "I"}})
	_, err := SpecializeTyped(op, ir.Float32, [][]int64{{4}, {3}}, nil, map[string]ir.DType{"I": ir.Int64})
	checkErr(t, err, "must be an integer expression", "must stand alone as the whole index")
}
