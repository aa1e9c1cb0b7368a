/*
 * neoflow._launch: a C kernel's launch on PyTorch tensors, the hot path of
 * every call (Kernel.run on the CPU).
 *
 * In Python the launch cost 3.7 us for an op of two inputs and one output:
 * the checks of the inputs' layout, allocating the output, packing the data
 * pointers, the ctypes call. Here it is the calls PyTorch needs (its tensors'
 * methods and torch.empty) and nothing else: run() reads each input's
 * layout and data pointer, allocates the outputs and temporaries with the
 * callables Kernel gives it, and calls libneoflow.so's nf_launch (its
 * address given once by init(), so this module links nothing) with the GIL
 * released, as ctypes did.
 *
 * Built against Python's limited API (3.10): one module serves every
 * CPython the wheel does.
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
	*s_outputs, *empty_tuple;

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

/* A method of no arguments whose result is a bool: 1, 0, or -1 with an exception set. */
static int truth(PyObject *t, PyObject *name)
{
	PyObject *r = PyObject_CallMethodObjArgs(t, name, NULL);
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

/* Whether every input is contiguous and not a lazily negated view (whose memory is not negated): 1, 0 (the
 * caller makes them so, in Python), -1 with an exception set. */
static int plain_layout(PyObject *tensors, Py_ssize_t n)
{
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GetItem(tensors, i);
		int c = truth(t, s_is_contiguous);
		if (c <= 0)
			return c;
		int neg = truth(t, s_is_neg);
		if (neg != 0)
			return neg < 0 ? -1 : 0;
	}
	return 1;
}

/* Calls alloc[k], a (callable, args, kwargs or None) tuple, for each buffer the caller allocates, appending
 * what it returns to bufs from position n on. 0, or -1 with an exception set. */
static int allocate(PyObject *allocs, PyObject *bufs, Py_ssize_t n)
{
	Py_ssize_t m = PyTuple_Size(allocs);
	for (Py_ssize_t k = 0; k < m; k++) {
		PyObject *a = PyTuple_GetItem(allocs, k);
		PyObject *kw = PyTuple_GetItem(a, 2);
		PyObject *b = PyObject_Call(PyTuple_GetItem(a, 0), PyTuple_GetItem(a, 1), kw == Py_None ? NULL : kw);
		if (b == NULL)
			return -1;
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

/* run(spec, tensors) -> list | None
 *
 * spec: (kernel id, allocs, threads, tail): allocs a tuple of (callable, args, kwargs or None) returning each
 * output and temporary in the kernel's order, threads a callable returning the launch's thread count, tail
 * 0 or an address passed after the buffers' (a kernel with symbolic extents: its sizes' values). Returns the
 * buffers, the inputs then what it allocated, once the kernel ran; None, without launching, when an input
 * is not contiguous or is a negated view, or the library is not loaded in this process (the caller then
 * launches in Python, copying such inputs first, or raising the error that names the problem). */
static PyObject *run_spec(PyObject *spec, PyObject *tensors)
{
	if (nf_launch == NULL) /* not loaded in this process */
		Py_RETURN_NONE;
	Py_ssize_t n = PyTuple_Size(tensors);
	PyObject *allocs = PyTuple_GetItem(spec, 1);
	if (allocs == NULL)
		return NULL;
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
	PyObject *bufs = PyList_New(total);
	if (bufs == NULL)
		return NULL;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GetItem(tensors, i);
		Py_INCREF(t);
		PyList_SetItem(bufs, i, t);
	}
	if (allocate(allocs, bufs, n) < 0)
		goto fail;
	uint64_t pointers[MAX_BUFS];
	for (Py_ssize_t i = 0; i < total; i++) {
		pointers[i] = data_ptr(PyList_GetItem(bufs, i));
		if (pointers[i] == (uint64_t)-1 && PyErr_Occurred())
			goto fail;
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
	return bufs;
fail:
	Py_DECREF(bufs);
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
	PyObject *t = as_tuple(tensors, "neoflow._launch.signature(tensors: tuple | list)");
	if (t == NULL)
		return NULL;
	PyObject *key = sig(t);
	Py_DECREF(t);
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
	PyObject *result = m == 1 ? NULL : PyTuple_New(m < 0 ? 0 : m);
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

static PyMethodDef methods[] = {
	{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
	 "call(kernels, sized, tensors) -> outputs | None: an op's call without autograd (Op.__call__)."},
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

PyMODINIT_FUNC PyInit__launch(void)
{
	s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
	s_is_neg = PyUnicode_InternFromString("is_neg");
	s_data_ptr = PyUnicode_InternFromString("data_ptr");
	s_dtype = PyUnicode_InternFromString("dtype");
	s_shape = PyUnicode_InternFromString("shape");
	s_device = PyUnicode_InternFromString("device");
	s_spec = PyUnicode_InternFromString("spec");
	s_call = PyUnicode_InternFromString("call");
	s_outputs = PyUnicode_InternFromString("outputs");
	empty_tuple = PyTuple_New(0);
	if (!s_is_contiguous || !s_is_neg || !s_data_ptr || !s_dtype || !s_shape || !s_device || !s_spec || !s_call ||
	    !s_outputs || !empty_tuple)
		return NULL;
	return PyModule_Create(&module);
}
