package cgen

import "strings"

// helper is a static inline C function a kernel may need. In the text, $T
// is the value type and $F the math-function suffix ("f" for float).
type helper struct {
	name string
	text string
}

// helpers in the order they are emitted.
var helpers = []helper{
	{"nf_floordiv", `static inline int64_t nf_floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}`},
	{"nf_floormod", `static inline int64_t nf_floormod(int64_t a, int64_t b)
{
	int64_t m = a % b;
	return (m != 0 && (m < 0) != (b < 0)) ? m + b : m;
}`},
	{"nf_absi", `static inline int64_t nf_absi(int64_t a) { return a < 0 ? -a : a; }`},
	{"nf_mini", `static inline int64_t nf_mini(int64_t a, int64_t b) { return a < b ? a : b; }`},
	{"nf_maxi", `static inline int64_t nf_maxi(int64_t a, int64_t b) { return a > b ? a : b; }`},
	// max, min and relu on values, exactly as core/ir defines them
	// (a NaN operand propagates; of equal operands the second is
	// returned): branch-free selects that vectorize.
	{"nf_max", `static inline $T nf_max($T a, $T b) { return a > b || a != a ? a : b; }`},
	{"nf_min", `static inline $T nf_min($T a, $T b) { return a < b || a != a ? a : b; }`},
	{"nf_relu", `static inline $T nf_relu($T x) { return x > 0 || x != x ? x : 0; }`},
	{"nf_sigmoid", `static inline $T nf_sigmoid($T x) { return 1 / (1 + exp$F(-x)); }`},
	{"nf_rsqrt", `static inline $T nf_rsqrt($T x) { return 1 / sqrt$F(x); }`},
	{"nf_mod", `static inline $T nf_mod($T x, $T y) { return x - floor$F(x / y) * y; }`},
	// where(c, a, b) on values already computed: the bits of a where c
	// holds, of b elsewhere. Unlike c ? a : b it never branches, so a
	// lane loop that blends vectorizes (see blend.go).
	{"nf_blend", `static inline $T nf_blend(int c, $T a, $T b)
{
	union { $T v; $U u; } x = {a}, y = {b};
	$U m = ($U)0 - ($U)(c != 0);
	x.u = (x.u & m) | (y.u & ~m);
	return x.v;
}`},
}

// helperDeps lists helpers another helper calls.
var helperDeps = map[string][]string{}

// uintOf is the unsigned integer type of a value type's width.
var uintOf = map[string]string{"float": "uint32_t", "double": "uint64_t"}

// helperText renders the used helpers for value type ctype.
func helperText(used map[string]bool, ctype, suffix string) string {
	var b strings.Builder
	for _, h := range helpers {
		if !used[h.name] {
			continue
		}
		t := strings.ReplaceAll(h.text, "$T", ctype)
		t = strings.ReplaceAll(t, "$U", uintOf[ctype])
		t = strings.ReplaceAll(t, "$F", suffix)
		b.WriteString(t + "\n\n")
	}
	return b.String()
}
