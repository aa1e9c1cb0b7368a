/*
 * neoflow._launch: the hot path of an op's call, a C kernel's launch on PyTorch tensors (Kernel.run on the
 * CPU), and the lookups before it (Op.__call__'s usual calls, the autograd forward's plan). In Python the
 * launch alone cost 3.7 us for two inputs and one output; here it is the calls PyTorch needs (its tensors'
 * methods, torch.empty) and libneoflow.so's nf_launch (its address given by init(), so this module links
 * nothing), run with the GIL released as ctypes did. Built against Python's limited API (3.10): one module
 * serves every CPython the wheel does.
 */

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef char *(*launch_fn)(int kernel, void *bufs, int nbufs, int nthreads);
typedef void (*free_fn)(void *p);

static launch_fn nf_launch;
static free_fn nf_free;
static PyObject *error_type; /* neoflow._lib.Error */
static PyObject *s_is_contiguous, *s_is_neg, *s_data_ptr, *s_dtype, *s_shape, *s_device, *s_spec, *s_call,
	*s_outputs, *s_saves, *s_save_for_backward, *s_plan, *s_kernel, *s_needs_input_grad, *s_requires_grad,
	*s_out_checks, *s_kernels, *s_dynamic, *s_sized, *s_function, *s_apply, *s_current_level, *s_is_cpu,
	*s_fast, *s_forward, *empty_tuple;

#define MAX_BUFS 512

/* init(launch_address, free_address, error_type): libneoflow.so's nf_launch and nf_free, and the exception
 * a failed launch raises; init(0, 0, error_type) after a fork, when the library cannot run (run then
 * returns None: Kernel.run launches through neoflow._lib, which raises ForkError). */
static PyObject *init(PyObject *Py_UNUSED(self), PyObject *args)
{
	PyObject *launch, *free_, *err;
	if (!PyArg_ParseTuple(args, "OOO", &launch, &free_, &err))
		return NULL;
	void *l = PyLong_AsVoidPtr(launch), *f = PyLong_AsVoidPtr(free_);
	if (PyErr_Occurred())
		return NULL;
	nf_launch = (launch_fn)l;
	nf_free = (free_fn)f;
	Py_INCREF(err);
	Py_XDECREF(error_type);
	error_type = err;
	Py_RETURN_NONE;
}

/* Whether r, a new reference it releases (a method's or attribute's value, a call's result), is true: 1, 0,
 * or -1 with an exception set (r NULL). */
static int is_true(PyObject *r)
{
	if (r == NULL)
		return -1;
	int v = PyObject_IsTrue(r);
	Py_DECREF(r);
	return v;
}

/* t.data_ptr() as an address, or (uint64_t)-1 with an exception set. */
static uint64_t data_ptr(PyObject *t)
{
	PyObject *r = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
	if (r == NULL)
		return (uint64_t)-1;
	uint64_t p = PyLong_AsUnsignedLongLong(r);
	Py_DECREF(r);
	return p;
}

/* Whether every input is in host memory, contiguous and not a lazily negated view (whose memory is not
 * negated): 1, 0 (the caller launches in Python, copying first or naming the problem), -1 with an exception
 * set. */
static int plain_layout(PyObject *tensors, Py_ssize_t n)
{
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GetItem(tensors, i);
		int c = is_true(PyObject_GetAttr(t, s_is_cpu));
		if (c <= 0)
			return c;
		c = is_true(PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL));
		if (c <= 0)
			return c;
		int neg = is_true(PyObject_CallMethodObjArgs(t, s_is_neg, NULL));
		if (neg != 0)
			return neg < 0 ? -1 : 0;
	}
	return 1;
}

/* Calls a, a (callable, args, kwargs or None) tuple: a new reference, or NULL with an exception set. */
static PyObject *call_alloc(PyObject *a)
{
	PyObject *kw = PyTuple_Check(a) && PyTuple_Size(a) == 3 ? PyTuple_GetItem(a, 2) : NULL;
	if (kw == NULL || !PyTuple_Check(PyTuple_GetItem(a, 1)) || (kw != Py_None && !PyDict_Check(kw))) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch: an alloc is (callable, args: tuple, kwargs)");
		return NULL;
	}
	return PyObject_Call(PyTuple_GetItem(a, 0), PyTuple_GetItem(a, 1), kw == Py_None ? NULL : kw);
}

/* The scratch block of a launch (Kernel._scratch): the one spare in scratch's list, taken from it, else a new
 * one from its allocation. A new reference, or NULL with an exception set. */
static PyObject *take_scratch(PyObject *scratch)
{
	PyObject *spare = PyTuple_Check(scratch) && PyTuple_Size(scratch) == 2 ? PyTuple_GetItem(scratch, 0) : NULL;
	if (spare == NULL || !PyList_Check(spare)) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch: a scratch is (spare: list, alloc)");
		return NULL;
	}
	Py_ssize_t n = PyList_Size(spare);
	if (n == 0)
		return call_alloc(PyTuple_GetItem(scratch, 1));
	PyObject *block = Py_NewRef(PyList_GetItem(spare, n - 1));
	if (PyList_SetSlice(spare, n - 1, n, NULL) < 0) {
		Py_DECREF(block);
		return NULL;
	}
	return block;
}

/* Puts block back as scratch's spare unless it has one (another launch's, made while this one held it). */
static void give_back(PyObject *scratch, PyObject *block)
{
	PyObject *spare = PyTuple_GetItem(scratch, 0);
	if (PyList_Size(spare) == 0 && PyList_Append(spare, block) < 0)
		PyErr_Clear(); /* out of memory: the block is dropped, the next launch makes another */
}

/* Fills bufs from position n on with each buffer the caller allocates: alloc[k] called, or for an int, the byte
 * offset of a temporary in the scratch block, the block itself (its pointer then that offset further: offsets[]
 * gets it, -1 for the others). 0, or -1 with an exception set. */
static int allocate(PyObject *allocs, PyObject *block, PyObject *bufs, Py_ssize_t n, int64_t *offsets)
{
	Py_ssize_t m = PyTuple_Size(allocs);
	for (Py_ssize_t k = 0; k < m; k++) {
		PyObject *a = PyTuple_GetItem(allocs, k), *b;
		offsets[n + k] = -1;
		if (PyLong_Check(a)) {
			offsets[n + k] = PyLong_AsLongLong(a);
			if (block == NULL || offsets[n + k] < 0) {
				if (!PyErr_Occurred())
					PyErr_SetString(PyExc_TypeError, "neoflow._launch: a scratch offset without a scratch");
				return -1;
			}
			b = Py_NewRef(block);
		} else if ((b = call_alloc(a)) == NULL) {
			return -1;
		}
		PyList_SetItem(bufs, n + k, b); /* steals b */
	}
	return 0;
}

/* Calls nf_launch without the GIL; 0, or -1 with neoflow's Error set from its message. */
static int launch(int kernel, uint64_t *pointers, int nbufs, int nthreads)
{
	char *err;
	Py_BEGIN_ALLOW_THREADS
	err = nf_launch(kernel, pointers, nbufs, nthreads);
	Py_END_ALLOW_THREADS
	if (err == NULL)
		return 0;
	PyObject *msg = PyUnicode_DecodeUTF8(err, (Py_ssize_t)strlen(err), "replace");
	nf_free(err);
	if (msg != NULL) {
		PyErr_SetObject(error_type, msg);
		Py_DECREF(msg);
	}
	return -1;
}

/* run(spec, tensors) -> list | None. spec: (kernel id, allocs, threads, tail, scratch): allocs (callable, args,
 * kwargs or None) making each output and temporary in the kernel's order, or a temporary's byte offset in the
 * scratch block; threads a callable giving the thread count; tail 0 or an address passed after the buffers' (a
 * symbolic kernel's sizes); scratch None or (spare list, allocation) of the block (take_scratch). Returns the
 * buffers (the inputs, then what it allocated, the block for each temporary in it) once the kernel ran; None,
 * launching nothing, where plain_layout refuses or the library is not loaded in this process (Kernel.run then
 * launches in Python). */
static PyObject *run_spec(PyObject *spec, PyObject *tensors)
{
	if (nf_launch == NULL) /* not loaded in this process */
		Py_RETURN_NONE;
	Py_ssize_t n = PyTuple_Size(tensors);
	PyObject *allocs = PyTuple_Size(spec) == 5 ? PyTuple_GetItem(spec, 1) : NULL;
	if (allocs == NULL || !PyTuple_Check(allocs)) {
		PyErr_SetString(PyExc_TypeError,
				"neoflow._launch: a spec is (kernel id, allocs: tuple, threads, tail, scratch)");
		return NULL;
	}
	Py_ssize_t total = n + PyTuple_Size(allocs);
	uint64_t tail = PyLong_AsUnsignedLongLong(PyTuple_GetItem(spec, 3));
	if (PyErr_Occurred())
		return NULL;
	if (total + 1 > MAX_BUFS)
		Py_RETURN_NONE;
	int plain = plain_layout(tensors, n);
	if (plain <= 0) {
		if (plain < 0)
			return NULL;
		Py_RETURN_NONE;
	}
	PyObject *scratch = PyTuple_GetItem(spec, 4), *block = NULL;
	if (scratch != Py_None && (block = take_scratch(scratch)) == NULL)
		return NULL;
	PyObject *bufs = PyList_New(total);
	if (bufs == NULL)
		goto fail;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GetItem(tensors, i);
		Py_INCREF(t);
		PyList_SetItem(bufs, i, t);
	}
	int64_t offsets[MAX_BUFS];
	if (allocate(allocs, block, bufs, n, offsets) < 0)
		goto fail;
	uint64_t pointers[MAX_BUFS];
	for (Py_ssize_t i = 0; i < total; i++) {
		pointers[i] = data_ptr(PyList_GetItem(bufs, i));
		if (pointers[i] == (uint64_t)-1 && PyErr_Occurred())
			goto fail;
		if (i >= n && offsets[i] >= 0)
			pointers[i] += (uint64_t)offsets[i];
	}
	if (tail != 0)
		pointers[total] = tail;
	PyObject *threads = PyObject_CallNoArgs(PyTuple_GetItem(spec, 2));
	if (threads == NULL)
		goto fail;
	long nthreads = PyLong_AsLong(threads);
	Py_DECREF(threads);
	long kernel = PyLong_AsLong(PyTuple_GetItem(spec, 0));
	if (PyErr_Occurred())
		goto fail;
	if (launch((int)kernel, pointers, (int)(total + (tail != 0)), (int)nthreads) < 0)
		goto fail;
	if (block != NULL) {
		give_back(scratch, block);
		Py_DECREF(block);
	}
	return bufs;
fail:
	if (block != NULL) {
		PyObject *type, *value, *trace;
		PyErr_Fetch(&type, &value, &trace);
		give_back(scratch, block);
		PyErr_Restore(type, value, trace);
		Py_DECREF(block);
	}
	Py_XDECREF(bufs);
	return NULL;
}

/* tensors as a new tuple (a list's items), or NULL with TypeError naming the function. */
static PyObject *as_tuple(PyObject *tensors, const char *usage)
{
	if (PyTuple_Check(tensors))
		return Py_NewRef(tensors);
	if (PyList_Check(tensors))
		return PyList_AsTuple(tensors);
	PyErr_SetString(PyExc_TypeError, usage);
	return NULL;
}

static PyObject *run(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
	const char *usage = "neoflow._launch.run(spec: tuple, tensors: tuple | list)";
	if (nargs != 2 || !PyTuple_Check(args[0])) {
		PyErr_SetString(PyExc_TypeError, usage);
		return NULL;
	}
	PyObject *tensors = as_tuple(args[1], usage);
	if (tensors == NULL)
		return NULL;
	PyObject *bufs = run_spec(args[0], tensors);
	Py_DECREF(tensors);
	return bufs;
}

/* signature(tensors) -> tuple: ((t.dtype, t.shape, t.device) for each tensor t), the part of a call's key that
 * its tensors give (Op's kernels and autograd's plans are found by it). */
static PyObject *sig(PyObject *tensors)
{
	Py_ssize_t n = PyTuple_Size(tensors);
	PyObject *key = PyTuple_New(n);
	if (key == NULL)
		return NULL;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GetItem(tensors, i), *entry = PyTuple_New(3);
		if (entry == NULL)
			goto fail;
		PyTuple_SetItem(key, i, entry); /* steals entry */
		PyObject *names[3] = {s_dtype, s_shape, s_device};
		for (int j = 0; j < 3; j++) {
			PyObject *v = PyObject_GetAttr(t, names[j]);
			if (v == NULL)
				goto fail;
			PyTuple_SetItem(entry, j, v);
		}
	}
	return key;
fail:
	Py_DECREF(key);
	return NULL;
}

static PyObject *signature(PyObject *Py_UNUSED(self), PyObject *tensors)
{
	PyObject *t = as_tuple(tensors, "neoflow._launch.signature(tensors: tuple | list)"), *key;
	key = t == NULL ? NULL : sig(t);
	Py_XDECREF(t);
	return key;
}

/* The kernel's outputs among the buffers of its launch (Kernel.outputs: their positions): one tensor, or a
 * tuple of them. */
static PyObject *outputs_of(PyObject *kernel, PyObject *bufs)
{
	PyObject *outs = PyObject_GetAttr(kernel, s_outputs);
	if (outs == NULL)
		return NULL;
	Py_ssize_t m = PyList_Size(outs);
	if (m < 0) {
		Py_DECREF(outs);
		return NULL;
	}
	PyObject *result = m == 1 ? NULL : PyTuple_New(m);
	for (Py_ssize_t j = 0; j < m; j++) {
		PyObject *b = PyList_GetItem(bufs, PyLong_AsSsize_t(PyList_GetItem(outs, j)));
		if (b == NULL) {
			Py_CLEAR(result);
			break;
		}
		if (m == 1)
			result = Py_NewRef(b);
		else
			PyTuple_SetItem(result, j, Py_NewRef(b));
	}
	Py_DECREF(outs);
	return result;
}

/* The outputs of a Kernel's launch on tensors: its C launch (run_spec) where it has one and the inputs
 * allow, else its call method (Python: CUDA, index checks, copies of inputs first). */
static PyObject *launch_kernel(PyObject *kernel, PyObject *tensors)
{
	PyObject *spec = PyObject_GetAttr(kernel, s_spec);
	if (spec == NULL)
		return NULL;
	PyObject *bufs = spec == Py_None ? Py_NewRef(Py_None) : run_spec(spec, tensors);
	Py_DECREF(spec);
	if (bufs == Py_None) {
		Py_DECREF(bufs);
		return PyObject_CallMethodObjArgs(kernel, s_call, tensors, NULL);
	}
	if (bufs == NULL)
		return NULL;
	PyObject *result = outputs_of(kernel, bufs);
	Py_DECREF(bufs);
	return result;
}

/* call(kernels, sized, tensors) -> outputs | None
 *
 * An op's call without autograd (Op.__call__'s direct path): the Kernel kernels (or else sized) holds for the
 * key (signature(tensors), ()), launched (launch_kernel) and its output or tuple of outputs returned; None
 * when neither holds one (the caller then specializes). */
static PyObject *call(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 3 || !PyDict_Check(args[0]) || !PyDict_Check(args[1]) || !PyTuple_Check(args[2])) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch.call(kernels: dict, sized: dict, tensors: tuple)");
		return NULL;
	}
	PyObject *s = sig(args[2]);
	if (s == NULL)
		return NULL;
	PyObject *key = PyTuple_Pack(2, s, empty_tuple);
	Py_DECREF(s);
	if (key == NULL)
		return NULL;
	PyObject *kernel = PyDict_GetItemWithError(args[0], key); /* borrowed */
	if (kernel == NULL && !PyErr_Occurred())
		kernel = PyDict_GetItemWithError(args[1], key);
	Py_DECREF(key);
	if (kernel == NULL) {
		if (PyErr_Occurred())
			return NULL;
		Py_RETURN_NONE;
	}
	Py_INCREF(kernel);
	PyObject *result = launch_kernel(kernel, args[2]);
	Py_DECREF(kernel);
	return result;
}

/* Saves the buffers at the plan's positions (its saves) for the backward, and the plan, on ctx. 0, or -1 with
 * an exception set. */
static int save(PyObject *ctx, PyObject *plan, PyObject *bufs)
{
	PyObject *saves = PyObject_GetAttr(plan, s_saves), *saved = NULL, *fn = NULL, *r = NULL;
	if (saves == NULL)
		return -1;
	Py_ssize_t m = PyTuple_Size(saves);
	if (m < 0 || (saved = PyTuple_New(m)) == NULL)
		goto done;
	for (Py_ssize_t j = 0; j < m; j++) {
		PyObject *b = PyList_GetItem(bufs, PyLong_AsSsize_t(PyTuple_GetItem(saves, j)));
		if (b == NULL)
			goto done;
		PyTuple_SetItem(saved, j, Py_NewRef(b));
	}
	if ((fn = PyObject_GetAttr(ctx, s_save_for_backward)) != NULL)
		r = PyObject_Call(fn, saved, NULL);
done:
	Py_DECREF(saves);
	Py_XDECREF(saved);
	Py_XDECREF(fn);
	if (r == NULL)
		return -1;
	Py_DECREF(r);
	return PyObject_SetAttr(ctx, s_plan, plan);
}

/* forward(plans, ctx, tensors) -> outputs | None
 *
 * The forward of an op's autograd.Function (autograd.make_function) called without sizes: the _Plan plans
 * holds for the key (signature(tensors), ctx.needs_input_grad), its kernel launched in C, the buffers at the
 * plan's saves saved on ctx with the plan, and the output or tuple of outputs returned. None, having done
 * nothing, where there is no plan yet or the launch is not one for C (the caller then goes the Python way). */
static PyObject *forward(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 3 || !PyDict_Check(args[0]) || !PyTuple_Check(args[2])) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch.forward(plans: dict, ctx, tensors: tuple)");
		return NULL;
	}
	PyObject *ctx = args[1], *tensors = args[2], *key = NULL, *plan = NULL, *kernel = NULL, *spec = NULL;
	PyObject *bufs = NULL, *result = NULL;
	PyObject *s = sig(tensors), *needs = PyObject_GetAttr(ctx, s_needs_input_grad);
	if (s != NULL && needs != NULL)
		key = PyTuple_Pack(2, s, needs);
	Py_XDECREF(s);
	Py_XDECREF(needs);
	if (key == NULL)
		return NULL;
	plan = PyDict_GetItemWithError(args[0], key); /* borrowed */
	Py_DECREF(key);
	if (plan == NULL)
		return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
	Py_INCREF(plan);
	if ((kernel = PyObject_GetAttr(plan, s_kernel)) == NULL || (spec = PyObject_GetAttr(kernel, s_spec)) == NULL)
		goto done;
	bufs = spec == Py_None ? Py_NewRef(Py_None) : run_spec(spec, tensors);
	if (bufs == NULL || bufs == Py_None) {
		result = bufs;
		bufs = NULL;
		goto done;
	}
	if (save(ctx, plan, bufs) == 0)
		result = outputs_of(kernel, bufs);
done:
	Py_DECREF(plan);
	Py_XDECREF(kernel);
	Py_XDECREF(spec);
	Py_XDECREF(bufs);
	return result;
}

/* An op's call without autograd: call(op._kernels, op._dynamic.sized, tensors). */
static PyObject *direct_call(PyObject *op, PyObject *tensors)
{
	PyObject *kernels = PyObject_GetAttr(op, s_kernels), *dynamic = NULL, *sized = NULL, *result = NULL;
	if (kernels != NULL && (dynamic = PyObject_GetAttr(op, s_dynamic)) != NULL &&
	    (sized = PyObject_GetAttr(dynamic, s_sized)) != NULL) {
		PyObject *a[3] = {kernels, sized, tensors};
		result = call(NULL, a, 3);
	}
	Py_XDECREF(kernels);
	Py_XDECREF(dynamic);
	Py_XDECREF(sized);
	return result;
}

/* An op's call under autograd: op._function.apply(None, *tensors), or None before the Function exists. */
static PyObject *eager_call(PyObject *op, PyObject *tensors)
{
	PyObject *fn = PyObject_GetAttr(op, s_function), *apply = NULL, *a = NULL, *result = NULL;
	if (fn == NULL)
		return NULL;
	if (fn == Py_None) {
		result = fn;
		fn = NULL;
		goto done;
	}
	Py_ssize_t n = PyTuple_Size(tensors);
	if ((apply = PyObject_GetAttr(fn, s_apply)) == NULL || (a = PyTuple_New(n + 1)) == NULL)
		goto done;
	PyTuple_SetItem(a, 0, Py_NewRef(Py_None));
	for (Py_ssize_t i = 0; i < n; i++)
		PyTuple_SetItem(a, i + 1, Py_NewRef(PyTuple_GetItem(tensors, i)));
	result = PyObject_Call(apply, a, NULL);
done:
	Py_XDECREF(fn);
	Py_XDECREF(apply);
	Py_XDECREF(a);
	return result;
}

/* What op_call asks of PyTorch, given once by configure(): torch._C._is_any_autocast_enabled,
 * torch._C._are_functorch_transforms_active, torch.autograd.forward_ad (its _current_level),
 * torch.is_grad_enabled, and the plain tensor types (torch.Tensor, torch.nn.Parameter). */
static PyObject *any_autocast, *transforms_active, *forward_ad, *is_grad_enabled, *plain_types;

static PyObject *configure(PyObject *Py_UNUSED(self), PyObject *args)
{
	PyObject *v[5];
	if (!PyArg_ParseTuple(args, "OOOOO!", &v[0], &v[1], &v[2], &v[3], &PyTuple_Type, &v[4]))
		return NULL;
	if (PyTuple_Size(v[4]) != 2) {
		PyErr_SetString(PyExc_ValueError, "neoflow._launch.configure: plain_types holds two types");
		return NULL;
	}
	PyObject **slots[5] = {&any_autocast, &transforms_active, &forward_ad, &is_grad_enabled, &plain_types};
	for (int i = 0; i < 5; i++) {
		Py_INCREF(v[i]);
		Py_XDECREF(*slots[i]);
		*slots[i] = v[i];
	}
	Py_RETURN_NONE;
}

enum { DIRECT = 0, EAGER = 1, OTHER = 2 }; /* op.py's _DIRECT and _EAGER; OTHER: op.py's _mode decides */

/* The usual calls' mode, as op.py's _mode finds it outside torch.compile's tracing: OTHER under a torch.func
 * transform or forward-mode AD, or for a tensor not plain; else EAGER when grad mode is on and a tensor
 * requires grad, DIRECT when none does. -1 with an exception set. */
static int usual_mode(PyObject *tensors)
{
	int v;
	if ((v = is_true(PyObject_CallNoArgs(transforms_active))) != 0)
		return v < 0 ? -1 : OTHER;
	PyObject *level = PyObject_GetAttr(forward_ad, s_current_level);
	if (level == NULL) { /* a PyTorch without that counter: op.py asks every tensor */
		PyErr_Clear();
		return OTHER;
	}
	long l = PyLong_AsLong(level);
	Py_DECREF(level);
	if (l >= 0 || PyErr_Occurred())
		return PyErr_Occurred() ? -1 : OTHER;
	Py_ssize_t n = PyTuple_Size(tensors);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *type = (PyObject *)Py_TYPE(PyTuple_GetItem(tensors, i));
		if (type != PyTuple_GetItem(plain_types, 0) && type != PyTuple_GetItem(plain_types, 1))
			return OTHER;
	}
	if ((v = is_true(PyObject_CallNoArgs(is_grad_enabled))) <= 0)
		return v < 0 ? -1 : DIRECT;
	for (Py_ssize_t i = 0; i < n; i++) {
		if ((v = is_true(PyObject_GetAttr(PyTuple_GetItem(tensors, i), s_requires_grad))) != 0)
			return v < 0 ? -1 : EAGER;
	}
	return DIRECT;
}

/* op_call(op, tensors) -> outputs | None
 *
 * Op.__call__ without sizes or out_shapes, outside torch.compile's tracing (the caller asks first: Dynamo
 * cannot trace this function, and traces the custom op instead), in the usual modes: without
 * autograd the kernel op._kernels or op._dynamic.sized holds for the tensors, launched (call); under autograd
 * op._function's apply. None where the call is not a usual one, the op has no kernel or Function for it yet,
 * or it has output checks or autocast is on (Op.__call__ then goes the general way). */
static PyObject *op_call(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 2 || !PyTuple_Check(args[1])) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch.op_call(op, tensors: tuple)");
		return NULL;
	}
	if (plain_types == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "neoflow._launch.op_call before neoflow._launch.configure");
		return NULL;
	}
	PyObject *op = args[0], *tensors = args[1];
	int v = is_true(PyObject_GetAttr(op, s_out_checks));
	if (v != 0 || (v = is_true(PyObject_CallNoArgs(any_autocast))) != 0)
		return v < 0 ? NULL : Py_NewRef(Py_None);
	int mode = usual_mode(tensors);
	if (mode < 0)
		return NULL;
	if (mode == DIRECT)
		return direct_call(op, tensors);
	if (mode == EAGER)
		return eager_call(op, tensors);
	Py_RETURN_NONE;
}

/* subgraph(sub, *args) -> its outputs
 *
 * A lowered subgraph's call (backend/subgraph.py) from the graph's code: where sub.fast holds its one kernel
 * of static shapes, (spec, used, shapes, dtypes, outputs, many), and the arguments fit it (the used ones of
 * those shapes and dtypes, contiguous in host memory), the kernel launched (run_spec) and its output or
 * tuple of outputs returned; otherwise sub.forward(*args), which does everything else. */
static PyObject *subgraph(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs < 1) {
		PyErr_SetString(PyExc_TypeError, "neoflow._launch.subgraph(sub, *args)");
		return NULL;
	}
	PyObject *fast = PyObject_GetAttr(args[0], s_fast), *flat = NULL, *bufs = NULL, *result = NULL;
	if (fast == NULL)
		return NULL;
	if (!PyTuple_Check(fast) || PyTuple_Size(fast) != 6)
		goto slow;
	PyObject *spec = PyTuple_GetItem(fast, 0), *used = PyTuple_GetItem(fast, 1), *shapes = PyTuple_GetItem(fast, 2),
		 *dtypes = PyTuple_GetItem(fast, 3), *outs = PyTuple_GetItem(fast, 4);
	Py_ssize_t n = PyTuple_Size(used);
	if (n < 0 || (flat = PyTuple_New(n)) == NULL)
		goto done;
	for (Py_ssize_t i = 0; i < n; i++) {
		Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GetItem(used, i));
		if (k < 0 || k + 1 >= nargs) {
			PyErr_Clear();
			goto slow;
		}
		PyObject *t = args[k + 1], *v = PyObject_GetAttr(t, s_dtype);
		if (v == NULL) {
			PyErr_Clear();
			goto slow;
		}
		int same = v == PyTuple_GetItem(dtypes, i);
		Py_DECREF(v);
		if (!same || (v = PyObject_GetAttr(t, s_shape)) == NULL) {
			PyErr_Clear();
			goto slow;
		}
		same = PyObject_RichCompareBool(v, PyTuple_GetItem(shapes, i), Py_EQ);
		Py_DECREF(v);
		if (same != 1) {
			PyErr_Clear();
			goto slow;
		}
		PyTuple_SetItem(flat, i, Py_NewRef(t));
	}
	if ((bufs = run_spec(spec, flat)) == NULL)
		goto done;
	if (bufs == Py_None)
		goto slow;
	Py_ssize_t m = PyTuple_Size(outs);
	int many = PyObject_IsTrue(PyTuple_GetItem(fast, 5));
	if (m < 1 || many < 0)
		goto done;
	if (many && (result = PyTuple_New(m)) == NULL)
		goto done;
	for (Py_ssize_t j = 0; j < m; j++) {
		PyObject *b = PyList_GetItem(bufs, PyLong_AsSsize_t(PyTuple_GetItem(outs, j)));
		if (b == NULL) {
			Py_CLEAR(result);
			break;
		}
		if (!many) {
			result = Py_NewRef(b);
			break;
		}
		PyTuple_SetItem(result, j, Py_NewRef(b));
	}
	goto done;
slow:
	{
		PyObject *forward = PyObject_GetAttr(args[0], s_forward), *rest = NULL;
		if (forward != NULL && (rest = PyTuple_New(nargs - 1)) != NULL) {
			for (Py_ssize_t i = 1; i < nargs; i++)
				PyTuple_SetItem(rest, i - 1, Py_NewRef(args[i]));
			result = PyObject_Call(forward, rest, NULL);
		}
		Py_XDECREF(forward);
		Py_XDECREF(rest);
	}
done:
	Py_DECREF(fast);
	Py_XDECREF(flat);
	Py_XDECREF(bufs);
	return result;
}

static PyMethodDef methods[] = {
	{"subgraph", (PyCFunction)(void (*)(void))subgraph, METH_FASTCALL,
	 "subgraph(sub, *args) -> outputs: a lowered subgraph's call (backend/subgraph.py)."},
	{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
	 "call(kernels, sized, tensors) -> outputs | None: an op's call without autograd (Op.__call__)."},
	{"forward", (PyCFunction)(void (*)(void))forward, METH_FASTCALL,
	 "forward(plans, ctx, tensors) -> outputs | None: an op's autograd forward (autograd.make_function)."},
	{"configure", configure, METH_VARARGS,
	 "configure(any_autocast, transforms_active, forward_ad, is_grad_enabled, plain_types): op_call's torch."},
	{"op_call", (PyCFunction)(void (*)(void))op_call, METH_FASTCALL,
	 "op_call(op, tensors) -> outputs | None: Op.__call__'s usual calls."},
	{"signature", signature, METH_O, "signature(tensors) -> ((dtype, shape, device), ...) of each tensor."},
	{"init", init, METH_VARARGS, "init(launch_address, free_address, error_type): nf_launch, nf_free, the error."},
	{"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
	 "run(spec, tensors) -> list | None: launches a C kernel on contiguous inputs (Kernel.run)."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "neoflow._launch", "A C kernel's launch on PyTorch tensors (Kernel.run's hot path).",
	-1, methods, NULL, NULL, NULL, NULL,
};

/* The attribute names the module asks for, interned once. */
static const struct {
	PyObject **name;
	const char *text;
} names[] = {
	{&s_is_contiguous, "is_contiguous"}, {&s_is_neg, "is_neg"}, {&s_data_ptr, "data_ptr"}, {&s_dtype, "dtype"},
	{&s_shape, "shape"}, {&s_device, "device"}, {&s_spec, "spec"}, {&s_call, "call"}, {&s_outputs, "outputs"},
	{&s_saves, "saves"}, {&s_save_for_backward, "save_for_backward"}, {&s_plan, "plan"}, {&s_kernel, "kernel"},
	{&s_needs_input_grad, "needs_input_grad"}, {&s_requires_grad, "requires_grad"},
	{&s_out_checks, "_out_checks"}, {&s_kernels, "_kernels"}, {&s_dynamic, "_dynamic"}, {&s_sized, "sized"},
	{&s_function, "_function"}, {&s_apply, "apply"}, {&s_current_level, "_current_level"},
	{&s_is_cpu, "is_cpu"}, {&s_fast, "fast"}, {&s_forward, "forward"},
};

PyMODINIT_FUNC PyInit__launch(void)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
			return NULL;
	}
	if ((empty_tuple = PyTuple_New(0)) == NULL)
		return NULL;
	return PyModule_Create(&module);
}
