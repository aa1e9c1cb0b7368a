/*
 * neoflow._launch: the hot path of an op's call, a C kernel's launch on PyTorch tensors (Kernel.run on the
 * CPU), and the lookups before it (Op.__call__'s usual calls, the autograd forward's plan, a backend
 * subgraph's call). In Python the launch alone cost 3.7 us for two inputs and one output; here it is the calls
 * PyTorch needs (its tensors' methods, torch.empty) and libneoflow.so's nf_launch (its address given by init(),
 * so this module links nothing), run with the GIL released as ctypes did. Built against Python's limited API
 * (3.10): one module serves every CPython the wheel does.
 *
 * This file: the module, its state and the launch (run); _launch_calls.c: the calls that find the kernel
 * first (call, op_call, forward, subgraph, signature).
 */

#include "_launch.h"

#include <string.h>

typedef char *(*launch_fn)(int kernel, void *bufs, int nbufs, int nthreads);
typedef void (*free_fn)(void *p);

static launch_fn nf_launch;
static free_fn nf_free;
static PyObject *error_type; /* neoflow._lib.Error */
PyObject *s_is_contiguous, *s_is_neg, *s_data_ptr, *s_dtype, *s_shape, *s_device, *s_spec, *s_call, *s_outputs,
	*s_saves, *s_save_for_backward, *s_plan, *s_kernel, *s_needs_input_grad, *s_requires_grad, *s_out_checks,
	*s_kernels, *s_dynamic, *s_sized, *s_function, *s_apply, *s_current_level, *s_is_cpu, *s_fast, *s_forward,
	*empty_tuple;

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
int is_true(PyObject *r)
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
PyObject *run_spec(PyObject *spec, PyObject *tensors)
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
PyObject *as_tuple(PyObject *tensors, const char *usage)
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
