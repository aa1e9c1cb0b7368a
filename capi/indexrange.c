// nf_index_range: the least and greatest element of an int32 or int64
// array in host memory, for the range check Python runs before launching a
// kernel that reads through an index tensor (neoflow/op.py). Plain C, called
// through ctypes without entering the Go runtime: one branch-free pass the
// compiler vectorizes, a fraction of torch.aminmax's cost on the small index
// tensors of a training step.

#include <stdint.h>

__attribute__((target_clones("avx512f", "avx2", "default")))
int nf_index_range(const void *data, int64_t n, int64_t elem_bytes, int64_t *lo, int64_t *hi)
{
	if (n <= 0 || (elem_bytes != 4 && elem_bytes != 8))
		return -1;
	if (elem_bytes == 4) {
		const int32_t *p = (const int32_t *)data;
		int32_t a = p[0], b = p[0];
		for (int64_t i = 1; i < n; i++) {
			a = p[i] < a ? p[i] : a;
			b = p[i] > b ? p[i] : b;
		}
		*lo = a;
		*hi = b;
		return 0;
	}
	const int64_t *p = (const int64_t *)data;
	int64_t a = p[0], b = p[0];
	for (int64_t i = 1; i < n; i++) {
		a = p[i] < a ? p[i] : a;
		b = p[i] > b ? p[i] : b;
	}
	*lo = a;
	*hi = b;
	return 0;
}
