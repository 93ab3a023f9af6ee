/* test_attribute.c - the table of allocator-internal modules and symbols (attribute.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "symbolize/attribute.h"

static void whole_modules(void **state)
{
    (void)state;
    assert_true(gmt_attr_frame_internal("/usr/local/cuda/lib64/libcudart.so.13", "cudaMalloc"));
    assert_true(gmt_attr_frame_internal("libcuda.so.1", NULL));
    assert_true(gmt_attr_frame_internal("/opt/gmt/lib/libgpumemtrace.so", NULL));
    assert_true(gmt_attr_frame_internal("/x/libcupti.so.2025.3.1", NULL));
    assert_true(gmt_attr_frame_internal("/site-packages/torch/lib/libc10_cuda.so", NULL));
    assert_true(gmt_attr_frame_internal(
        "/site-packages/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", "anything"));
    assert_false(gmt_attr_frame_internal(
        "/site-packages/cupy/cuda/stream.cpython-312-x86_64-linux-gnu.so", NULL));
    assert_false(gmt_attr_frame_internal("/usr/lib/libcublasLt.so.13", "cublasLtMatmul"));
    assert_false(gmt_attr_frame_internal("/usr/lib/libnccl.so.2", NULL));
    assert_true(gmt_attr_frame_internal("/usr/lib/x86_64-linux-gnu/libffi.so.8", "ffi_call"));
    assert_true(gmt_attr_frame_internal(
        "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so", NULL));
    assert_false(gmt_attr_frame_internal("/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0", NULL));
    assert_false(gmt_attr_frame_internal("/home/u/train", "main"));
    /* libcudart must not swallow a user library that only starts alike. */
    assert_false(gmt_attr_frame_internal("/home/u/libcudaraptor.so", NULL));
    assert_false(gmt_attr_frame_internal(NULL, "x"));
    assert_false(gmt_attr_frame_internal("", "x"));
}

static void by_symbol(void **state)
{
    (void)state;
    const char *torch = "/site-packages/torch/lib/libtorch_cuda.so";
    /* Demangled and mangled spellings of the caching allocator. */
    assert_true(gmt_attr_frame_internal(
        torch, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, "
               "signed char, unsigned long, CUstream_st*)"));
    assert_true(gmt_attr_frame_internal(
        torch, "_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvamP11"
               "CUstream_st"));
    /* Real operators in the same library stay libtorch_cuda's. */
    assert_false(gmt_attr_frame_internal(torch, "at::native::addmm_out_cuda_impl"));
    /* No symbol: charged to the module. */
    assert_false(gmt_attr_frame_internal(torch, NULL));
    /* Tensor-factory glue: at::empty's implementation, mangled and demangled. */
    assert_true(gmt_attr_frame_internal(torch, "_ZN2at6detail10empty_cudaEN3c108ArrayRefIlEE"));
    assert_true(gmt_attr_frame_internal("/t/libtorch_cpu.so",
                                        "at::detail::empty_generic(c10::ArrayRef<long>, ...)"));
    assert_false(gmt_attr_frame_internal("/t/libtorch_cpu.so", "at::native::add_out"));
    const char *xla = "/site-packages/jaxlib/xla_extension.so";
    assert_true(gmt_attr_frame_internal(xla, "tsl::BFCAllocator::AllocateRaw(unsigned long)"));
    assert_false(gmt_attr_frame_internal(xla, "xla::gpu::GemmThunk::ExecuteOnStream"));
}

static void picks_first_outside(void **state)
{
    (void)state;
    const char *mods[] = {"/l/libgpumemtrace.so", "/l/libcudart.so.13",  NULL,
                          "/t/libc10_cuda.so",    "/t/libtorch_cuda.so", "/t/libtorch_cuda.so",
                          "/u/python3.12"};
    const char *syms[] = {"hook",
                          "cudaMalloc",
                          NULL,
                          "x",
                          "c10::cuda::CUDACachingAllocator::m",
                          "at::native::addmm_out_cuda_impl",
                          "main"};
    assert_int_equal(gmt_attr_pick(mods, syms, 7), 5);
    assert_int_equal(gmt_attr_pick(mods, syms, 5), -1);
    assert_int_equal(gmt_attr_pick(mods, NULL, 7), 4); /* without symbols: the module */
    assert_int_equal(gmt_attr_pick(mods, syms, 0), -1);
    assert_string_equal(gmt_attr_basename("/a/b/libx.so.1"), "libx.so.1");
    assert_string_equal(gmt_attr_basename("libx.so.1"), "libx.so.1");
    assert_null(gmt_attr_basename(NULL));
}

static void python_names(void **state)
{
    (void)state;
    char b[64];
    /* The interpreter's modules, not a library that starts alike. */
    assert_true(gmt_attr_is_interpreter("/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0"));
    assert_true(gmt_attr_is_interpreter("/root/.pyenv/versions/3.11.7/bin/python3.11"));
    assert_true(gmt_attr_is_interpreter("/usr/bin/python3"));
    assert_true(gmt_attr_is_interpreter("python"));
    assert_false(gmt_attr_is_interpreter("/site-packages/torch/lib/libtorch_python.so"));
    assert_false(gmt_attr_is_interpreter("/home/u/pythonic"));
    assert_false(gmt_attr_is_interpreter(NULL));
    /* The glue the views fold beside Python frames: the interpreter and the table's ctypes rows. */
    assert_true(gmt_attr_is_python_glue("/usr/lib/x86_64-linux-gnu/libffi.so.8"));
    assert_true(gmt_attr_is_python_glue(
        "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so"));
    assert_true(gmt_attr_is_python_glue("/usr/bin/python3.12"));
    assert_false(gmt_attr_is_python_glue("/site-packages/torch/lib/libc10_cuda.so"));
    assert_false(gmt_attr_is_python_glue("/home/u/libmine.so"));
    assert_false(gmt_attr_is_python_glue(NULL));
    /* A source file: its top-level package under site- or dist-packages, else its name. */
    assert_string_equal(gmt_attr_python_library(
                            "/v/lib/python3.12/site-packages/cupy/_creation/basic.py", b, sizeof b),
                        "cupy");
    assert_string_equal(
        gmt_attr_python_library("/usr/lib/python3/dist-packages/six.py", b, sizeof b), "six");
    assert_string_equal(
        gmt_attr_python_library("/a/site-packages/x/site-packages/inner/m.py", b, sizeof b),
        "inner"); /* the last one */
    assert_string_equal(gmt_attr_python_library("/home/u/train.py", b, sizeof b), "train.py");
    assert_string_equal(gmt_attr_python_library("<string>", b, sizeof b), "<string>");
    assert_null(gmt_attr_python_library("/home/u/project-packages/m.py", b, 3)); /* too long */
    assert_null(gmt_attr_python_library("/v/site-packages/", b, sizeof b));
    assert_null(gmt_attr_python_library(NULL, b, sizeof b));
    assert_null(gmt_attr_python_library("", b, sizeof b));
    /* A Python extension module under site-packages: its package; any other module: NULL. */
    assert_string_equal(
        gmt_attr_extension_library(
            "/v/site-packages/cupy/_core/core.cpython-312-x86_64-linux-gnu.so", b, sizeof b),
        "cupy");
    assert_string_equal(
        gmt_attr_extension_library("/v/site-packages/_cffi_backend.cpython-312-x86_64-linux-gnu.so",
                                   b, sizeof b),
        "_cffi_backend");
    assert_string_equal(
        gmt_attr_extension_library("/v/site-packages/pkg/_ext.abi3.so", b, sizeof b), "pkg");
    assert_null(
        gmt_attr_extension_library("/v/site-packages/torch/lib/libtorch_cuda.so", b, sizeof b));
    assert_null(gmt_attr_extension_library("/home/u/build/ext.cpython-312-x86_64-linux-gnu.so", b,
                                           sizeof b));
    assert_null(gmt_attr_extension_library(NULL, b, sizeof b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_modules),
        cmocka_unit_test(by_symbol),
        cmocka_unit_test(picks_first_outside),
        cmocka_unit_test(python_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
