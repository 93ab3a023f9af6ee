# Finds what the build needs and stops with one line naming the Debian package when something
# is missing. scripts/setup.sh installs all of them.
find_package(PkgConfig QUIET)

function(gmt_require_header var header package)
  find_path(${var} NAMES ${header} PATHS ${ARGN} PATH_SUFFIXES x86_64-linux-gnu cjson)
  if(NOT ${var})
    message(FATAL_ERROR "gpumemtrace: ${header} not found: install the Debian package '${package}' (scripts/setup.sh does)")
  endif()
endfunction()

function(gmt_require_lib var name package)
  find_library(${var} NAMES ${name})
  if(NOT ${var})
    message(FATAL_ERROR "gpumemtrace: lib${name} not found: install the Debian package '${package}' (scripts/setup.sh does)")
  endif()
endfunction()

gmt_require_header(GMT_LIBUNWIND_INCLUDE libunwind.h libunwind-dev)
gmt_require_lib(GMT_LIBUNWIND_LIB unwind libunwind-dev)
# libdw (elfutils): headers at build time; the library itself is loaded with dlopen when a
# report is symbolized (docs/symbols.md), so nothing links it.
gmt_require_header(GMT_LIBDW_INCLUDE elfutils/libdwfl.h libdw-dev)
gmt_require_lib(GMT_LIBDW_LIB dw libdw-dev)
gmt_require_header(GMT_CJSON_INCLUDE cJSON.h libcjson-dev)
gmt_require_lib(GMT_CJSON_LIB cjson libcjson-dev)
# The CLI's pprof export is gzip-compressed.
gmt_require_header(GMT_ZLIB_INCLUDE zlib.h zlib1g-dev)
gmt_require_lib(GMT_ZLIB_LIB z zlib1g-dev)

# The CUDA toolkit: headers (cuda.h, cuda_runtime_api.h, cupti.h) only; nothing CUDA is linked.
set(_gmt_cuda_hints ${CUDAToolkit_ROOT} $ENV{CUDAToolkit_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda /usr)
find_path(GMT_CUDA_INCLUDE NAMES cuda.h PATHS ${_gmt_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include NO_DEFAULT_PATH)
find_path(GMT_CUPTI_INCLUDE NAMES cupti.h PATHS ${_gmt_cuda_hints} PATH_SUFFIXES include extras/CUPTI/include targets/x86_64-linux/include NO_DEFAULT_PATH)
if(NOT GMT_CUDA_INCLUDE OR NOT GMT_CUPTI_INCLUDE)
  message(FATAL_ERROR "gpumemtrace: CUDA toolkit headers (cuda.h, cupti.h) not found: set CUDAToolkit_ROOT or install the CUDA toolkit")
endif()
find_program(GMT_NVCC nvcc PATHS ${_gmt_cuda_hints} PATH_SUFFIXES bin NO_DEFAULT_PATH)

if(GPUMEMTRACE_BUILD_TESTS)
  gmt_require_header(GMT_CMOCKA_INCLUDE cmocka.h libcmocka-dev)
  gmt_require_lib(GMT_CMOCKA_LIB cmocka libcmocka-dev)
  # The integration tests validate every report against docs/report.schema.json.
  set(GMT_PYTHON "" CACHE FILEPATH "Python interpreter with the jsonschema module")
  if(NOT GMT_PYTHON)
    foreach(_py /usr/bin/python3 python3)
      execute_process(COMMAND ${_py} -c "import jsonschema" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(GMT_PYTHON ${_py} CACHE FILEPATH "Python interpreter with the jsonschema module" FORCE)
        break()
      endif()
    endforeach()
  endif()
  if(NOT GMT_PYTHON)
    message(FATAL_ERROR "gpumemtrace: no python3 with jsonschema: install the Debian package 'python3-jsonschema'")
  endif()
endif()
