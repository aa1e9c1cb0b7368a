/*
 * What neoflow._launch's two files share (_launch.c: the module, its state and the launch; _launch_calls.c:
 * the calls that find a kernel first): Python's limited API (3.10), the attribute names interned at import,
 * the helpers both use, and the module's functions the other file defines. Nothing here is exported from the
 * module's shared library but its init function (the build hides every other symbol).
 */

#ifndef NEOFLOW_LAUNCH_H
#define NEOFLOW_LAUNCH_H

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* attribute names, interned by PyInit__launch */
extern PyObject *s_is_contiguous, *s_is_neg, *s_data_ptr, *s_dtype, *s_shape, *s_device, *s_spec, *s_call,
	*s_outputs, *s_saves, *s_save_for_backward, *s_plan, *s_kernel, *s_needs_input_grad, *s_requires_grad,
	*s_out_checks, *s_kernels, *s_dynamic, *s_sized, *s_function, *s_apply, *s_current_level, *s_is_cpu,
	*s_fast, *s_forward, *empty_tuple;

/* _launch.c */
int is_true(PyObject *r);
PyObject *run_spec(PyObject *spec, PyObject *tensors);
PyObject *as_tuple(PyObject *tensors, const char *usage);

/* _launch_calls.c: the module's functions */
PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *forward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *configure(PyObject *self, PyObject *args);
PyObject *op_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *signature(PyObject *self, PyObject *tensors);
PyObject *subgraph(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
