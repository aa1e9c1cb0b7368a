/*
 * neoflow._launch's calls that find a kernel before launching it (run_spec, in _launch.c): an op's call
 * without autograd (call, op_call), its autograd forward once a plan exists (forward), a backend subgraph's
 * call from its graph's code (subgraph), and the key they look kernels up by (signature).
 */

#include "_launch.h"

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

PyObject *signature(PyObject *Py_UNUSED(self), PyObject *tensors)
{
	PyObject *t = as_tuple(tensors, "neoflow._launch.signature(tensors: tuple | list)"), *key;
	key = t == NULL ? NULL : sig(t);
	Py_XDECREF(t);
	return key;
}

/* The buffers at positions (a list or tuple of ints) among a launch's: a tuple of them, or with !many the one
 * tensor (positions then holds one). NULL with an exception set. */
static PyObject *pick(PyObject *positions, PyObject *bufs, int many)
{
	Py_ssize_t m = PySequence_Size(positions);
	if (m < 0)
		return NULL;
	if (!many && m != 1) {
		PyErr_SetString(PyExc_ValueError, "neoflow._launch: one output expected");
		return NULL;
	}
	PyObject *result = many ? PyTuple_New(m) : NULL;
	if (many && result == NULL)
		return NULL;
	for (Py_ssize_t j = 0; j < m; j++) {
		PyObject *p = PySequence_GetItem(positions, j), *b = NULL;
		if (p != NULL) {
			b = PyList_GetItem(bufs, PyLong_AsSsize_t(p));
			Py_DECREF(p);
		}
		if (b == NULL) {
			Py_XDECREF(result);
			return NULL;
		}
		if (!many)
			return Py_NewRef(b);
		PyTuple_SetItem(result, j, Py_NewRef(b));
	}
	return result;
}

/* The kernel's outputs among the buffers of its launch (Kernel.outputs: their positions): one tensor, or a
 * tuple of them. */
static PyObject *outputs_of(PyObject *kernel, PyObject *bufs)
{
	PyObject *outs = PyObject_GetAttr(kernel, s_outputs);
	if (outs == NULL)
		return NULL;
	Py_ssize_t m = PySequence_Size(outs);
	PyObject *result = m < 0 ? NULL : pick(outs, bufs, m != 1);
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
PyObject *call(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
PyObject *forward(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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

PyObject *configure(PyObject *Py_UNUSED(self), PyObject *args)
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
PyObject *op_call(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
PyObject *subgraph(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
	int many = PyObject_IsTrue(PyTuple_GetItem(fast, 5));
	if (many >= 0)
		result = pick(outs, bufs, many);
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
