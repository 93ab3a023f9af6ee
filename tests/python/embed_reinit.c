/* embed_reinit.c - a program that embeds CPython, runs a script that allocates through the
 * stand-in runtime, finalizes the interpreter, initializes it again and runs a second script
 * whose function of the same name allocates on another line. Built at test time against the
 * CPython under test (run_python.py, case reinit).
 *
 * usage: embed_reinit CUDART
 * The scripts call the runtime through a built-in module of this program's (gmtcuda: malloc
 * and free, with the GIL held; ctypes does not survive a second initialization on 3.12).
 * Round 0 makes 200 allocate/free pairs and leaks 5 MiB from alloc() (the allocation on line 3
 * of its script); round 1 the same with a blank line more before it (line 4) and 6 MiB, then
 * runs exec_script. A memory of round 0's code objects that outlived the finalization (their
 * addresses are often those of round 1's) would name round 1's allocation with round 0's line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

static int (*cuda_malloc)(void **, size_t);
static int (*cuda_free)(void *);

static PyObject *gmt_malloc(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t size = PyLong_AsSize_t(arg);
    if (size == (size_t)-1 && PyErr_Occurred()) return NULL;
    void *p = NULL;
    if (cuda_malloc(&p, size) != 0) return PyErr_Format(PyExc_MemoryError, "cudaMalloc failed");
    return PyLong_FromVoidPtr(p);
}

static PyObject *gmt_free(PyObject *self, PyObject *arg)
{
    (void)self;
    void *p = PyLong_AsVoidPtr(arg);
    if (!p && PyErr_Occurred()) return NULL;
    if (cuda_free(p) != 0) return PyErr_Format(PyExc_RuntimeError, "cudaFree failed");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"malloc", gmt_malloc, METH_O, "cudaMalloc(size) -> address"},
    {"free", gmt_free, METH_O, "cudaFree(address)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gmtcuda", NULL, -1, methods, NULL, NULL, NULL, NULL};

static PyObject *init_gmtcuda(void)
{
    return PyModule_Create(&module);
}

static const char script[] = "import gmtcuda\n"
                             "def alloc(size):\n"
                             "%s"
                             "    return gmtcuda.malloc(size)\n"
                             "for _ in range(200):\n"
                             "    gmtcuda.free(alloc(4096))\n"
                             "keep = [alloc(%d << 20)]\n";

/* Round 1's too: 8 strings exec'd one after another, each allocating (k + 1) * 4 KiB on its
 * line k + 1 and freed before the next is made (its code object, often at the address of the
 * one before: only a count of destroyed code objects that survived the finalization tells
 * them apart without loading them). */
static const char exec_script[] = "for k in range(8):\n"
                                  "    exec('\\n' * k + f'keep.append(alloc({(k + 1) << 12}))',"
                                  " globals())\n";

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: embed_reinit CUDART\n");
        return 2;
    }
    void *rt = dlopen(argv[1], RTLD_NOW);
    cuda_malloc = rt ? (int (*)(void **, size_t))dlsym(rt, "cudaMalloc") : NULL;
    cuda_free = rt ? (int (*)(void *))dlsym(rt, "cudaFree") : NULL;
    if (!cuda_malloc || !cuda_free) {
        fprintf(stderr, "embed_reinit: %s: no cudaMalloc and cudaFree\n", argv[1]);
        return 2;
    }
    for (int round = 0; round < 2; round++) {
        char code[1024];
        snprintf(code, sizeof code, script, round ? "\n" : "", 5 + round);
        if (PyImport_AppendInittab("gmtcuda", init_gmtcuda) != 0) return 1;
        Py_Initialize();
        int rc = PyRun_SimpleString(code);
        if (rc == 0 && round == 1) rc = PyRun_SimpleString(exec_script);
        if (Py_FinalizeEx() != 0 || rc != 0) {
            fprintf(stderr, "embed_reinit: round %d failed\n", round);
            return 1;
        }
    }
    printf("done\n");
    return 0;
}
