package torchbridge

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/api"
)

func TestTransformBatchesAndInlines(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "Y[i] += X[i, vb] * W[i]"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Transform(&api.TransformRequest{OpId: def.OpId, Batch: &api.BatchTransform{Inputs: []string{"W"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b.BatchIndex != "vb_" || b.Source != "Y[vb_, i] += X[i, vb] * W[vb_, i]" {
		t.Fatalf("batched: %q over %s", b.Source, b.BatchIndex)
	}
	in, err := r.Transform(&api.TransformRequest{OpId: def.OpId, Inline: &api.InlineTransform{
		TensorPrefix: "U1_", IndexPrefix: "u1_", Reads: map[string]string{"X": "P0[_1, _0]", "W": "P1[0, _0]"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Source != "U1_Y[u1_i] += P0[u1_vb, u1_i] * P1[0, u1_i]" {
		t.Fatalf("inlined: %q", in.Source)
	}
}

func TestTransformRefusesBadRequests(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "Y[i] = X[i] * 2.0"})
	if err != nil {
		t.Fatal(err)
	}
	inline := func(reads map[string]string) *api.InlineTransform {
		return &api.InlineTransform{TensorPrefix: "U_", IndexPrefix: "u_", Reads: reads}
	}
	cases := []struct {
		req  *api.TransformRequest
		want string
	}{
		{&api.TransformRequest{OpId: def.OpId}, "exactly one of batch and inline"},
		{&api.TransformRequest{OpId: def.OpId, Batch: &api.BatchTransform{}, Inline: inline(nil)}, "exactly one of batch and inline"},
		{&api.TransformRequest{OpId: 999, Batch: &api.BatchTransform{}}, "unknown op id 999"},
		{&api.TransformRequest{OpId: def.OpId, Batch: &api.BatchTransform{Inputs: []string{"Z"}}}, "has no input Z to batch"},
		{&api.TransformRequest{OpId: def.OpId, Inline: inline(nil)}, "no read is given for input X"},
		{&api.TransformRequest{OpId: def.OpId, Inline: inline(map[string]string{"X": "P0[_0", "Z": "P1[_0]"})}, "the read given for input X"},
		{&api.TransformRequest{OpId: def.OpId, Inline: inline(map[string]string{"Z": "P1[_0]"})}, "has no input Z to read"},
		{&api.TransformRequest{OpId: def.OpId, Inline: inline(map[string]string{"X": "P0[_3]"})}, "names index _3"},
	}
	for _, c := range cases {
		_, err := r.Transform(c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.req, err, c.want)
		}
	}
}
