package cgen

import "strings"

// helper is a static inline C function a kernel may need. In the text, $T
// is the value type, $F the math-function suffix ("f" for float), $I the
// index type and $Q the qualifiers of a helper function.
type helper struct {
	name string
	text string
}

// cudaHelpers are the helpers whose CUDA text differs from the C one.
var cudaHelpers = map[string]string{
	// CUDA's exp has no slow lanes (nf_sigmoid's C text says why it has).
	"nf_sigmoid": `$Q $T nf_sigmoid($T x) { return 1 / (1 + exp$F(-x)); }`,
}

// helpers in the order they are emitted.
var helpers = []helper{
	{"nf_floordiv", `$Q $I nf_floordiv($I a, $I b)
{
	$I q = a / b;
	return ((a % b != 0) & ((a < 0) != (b < 0))) ? q - 1 : q;
}`},
	{"nf_floormod", `$Q $I nf_floormod($I a, $I b)
{
	$I m = a % b;
	return ((m != 0) & ((m < 0) != (b < 0))) ? m + b : m;
}`},
	{"nf_absi", `$Q $I nf_absi($I a) { return a < 0 ? -a : a; }`},
	{"nf_mini", `$Q $I nf_mini($I a, $I b) { return a < b ? a : b; }`},
	{"nf_maxi", `$Q $I nf_maxi($I a, $I b) { return a > b ? a : b; }`},
	// max, min and relu on values, exactly as core/ir defines them
	// (a NaN operand propagates; of equal operands the second is
	// returned): branch-free selects that vectorize. The helpers combine
	// their conditions with | and & (never || and &&, which are branches
	// to if-convert): GCC 12.2 with AVX-512 miscompiled an omp simd loop
	// over max(min(i * 0.5, 0.5), i * 0.5) written with || (found by the
	// property suite's long run; TestMaxMinLaneLoopIsNotMiscompiled).
	{"nf_max", `$Q $T nf_max($T a, $T b) { return (a > b) | (a != a) ? a : b; }`},
	{"nf_min", `$Q $T nf_min($T a, $T b) { return (a < b) | (a != a) ? a : b; }`},
	{"nf_relu", `$Q $T nf_relu($T x) { return (x > 0) | (x != x) ? x : 0; }`},
	// sigmoid is 1/(1+exp(-x)), with exp(-x) taken as exp(-x/2)^2 of an
	// argument cut to [-87, 88.8] ([-700, 710] for double): libmvec's
	// vector exp leaves its fast path past about 87.3 (708), where each
	// lane calls the scalar function, and saturated sigmoids (x of
	// magnitude 120, 2^18 of them) took 1.41 ms against PyTorch's 0.38.
	// Below -87 exp adds nothing to 1; the square overflows to inf where
	// exp(-x) does; comparisons leave a NaN as it is. The square doubles
	// exp's error (libmvec: within 4 ulp). Now 0.11 ms there, and 0.082
	// ms for x of magnitude 1 (0.060 before, PyTorch 0.060). A select
	// that split exp's argument at 87 instead had GCC call exp twice.
	// CUDA kernels keep the plain formula (cudaHelpers).
	{"nf_sigmoid", `$Q $T nf_sigmoid($T x)
{
	const int f = sizeof($T) == 4;
	const $T lo = f ? -87 : -700, top = f ? 88.8 : 710;
	$T t = -x;
	t = t < lo ? lo : t;
	t = t > top ? top : t;
	$T h = exp$F(t * ($T)0.5);
	return 1 / (1 + h * h);
}`},
	{"nf_softplus", `$Q $T nf_softplus($T x) { return x > 20 ? x : log1p$F(exp$F(x)); }`},
	{"nf_sign", `$Q $T nf_sign($T x) { return (x > 0) - (x < 0); }`},
	{"nf_rsqrt", `$Q $T nf_rsqrt($T x) { return 1 / sqrt$F(x); }`},
	// pow(x, n) for the small integer exponents PyTorch's pow kernel also
	// multiplies out (smallPower): libmvec's vector pow has no fast path
	// for a negative base, where every lane calls the scalar function
	// (pow(x, 3.0) over 2^20 normal floats took 12.8 ms against
	// PyTorch's 0.38).
	{"nf_pow2", `$Q $T nf_pow2($T x) { return x * x; }`},
	{"nf_pow3", `$Q $T nf_pow3($T x) { return x * x * x; }`},
	{"nf_pow4", `$Q $T nf_pow4($T x) { $T s = x * x; return s * s; }`},
	{"nf_pow_1", `$Q $T nf_pow_1($T x) { return 1 / x; }`},
	{"nf_pow_2", `$Q $T nf_pow_2($T x) { return 1 / (x * x); }`},
	{"nf_mod", `$Q $T nf_mod($T x, $T y) { return x - floor$F(x / y) * y; }`},
	// where(c, a, b) on values already computed: the bits of a where c
	// holds, of b elsewhere. Unlike c ? a : b it never branches, so a
	// lane loop that blends vectorizes (see blend.go).
	{"nf_blend", `$Q $T nf_blend(int c, $T a, $T b)
{
	union { $T v; $U u; } x = {a}, y = {b};
	$U m = ($U)0 - ($U)(c != 0);
	x.u = (x.u & m) | (y.u & ~m);
	return x.v;
}`},
}

// uintOf is the unsigned integer type of a value type's width.
var uintOf = map[string]string{"float": "uint32_t", "double": "uint64_t"}

// helperText renders the helpers the kernel uses.
func (r *renderer) helperText() string {
	qual := "static inline"
	if r.cuda {
		qual = "static __device__ __forceinline__"
	}
	var b strings.Builder
	for _, h := range helpers {
		if !r.used[h.name] {
			continue
		}
		t := h.text
		if c, ok := cudaHelpers[h.name]; ok && r.cuda {
			t = c
		}
		t = strings.ReplaceAll(t, "$T", r.ctype)
		t = strings.ReplaceAll(t, "$U", uintOf[r.ctype])
		t = strings.ReplaceAll(t, "$F", r.suffix)
		t = strings.ReplaceAll(t, "$I", r.itype)
		t = strings.ReplaceAll(t, "$Q", qual)
		b.WriteString(t + "\n\n")
	}
	return b.String()
}
