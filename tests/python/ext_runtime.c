/* ext_runtime.c - a CPython extension module in CuPy's runtime wrapper's place
 * (cupy_backends/cuda/api/runtime*.so, machinery by docs/symbols.md's table) for run_python.py's
 * "library" case: malloc(n) calls the stand-in's cudaMalloc and leaks it. A METH_O function:
 * once a loop has warmed up, CPython 3.11+ calls it straight from the evaluation loop
 * (CALL_BUILTIN_O), so the stack's first interpreter frame is the evaluation frame, with the
 * calling Python frame before it. Built by the case with the interpreter's own headers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

extern int cudaMalloc(void **p, size_t n);

static PyObject *ext_malloc(PyObject *self, PyObject *arg)
{
    (void)self;
    void *p = NULL;
    size_t n = PyLong_AsSize_t(arg);
    if (n == (size_t)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(cudaMalloc(&p, n));
}

static PyMethodDef methods[] = {{"malloc", ext_malloc, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "runtime", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_runtime(void)
{
    return PyModule_Create(&module);
}
