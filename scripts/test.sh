#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): installs the Debian packages, then builds and
# runs the tests three times: a normal build (unit, integration, CLI; GPU tests show as
# skipped where there is no GPU), an ASan+UBSan build and a TSan build (the unit tests and the
# integration cases labelled tsan_ok: tests/integration/CMakeLists.txt says which cannot run
# under TSan and why), plus a clang-format check. Exits non-zero if anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/deps.sh
jobs=$(nproc)

echo "== clang-format"
if command -v clang-format >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src tests bench examples include -name '*.[ch]')
  # shellcheck disable=SC2086
  clang-format --dry-run --Werror $files
else
  echo "clang-format not installed: format check skipped"
fi

run_build() { # name, extra cmake args..., then -- ctest args
  local name=$1; shift
  local cmake_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  shift || true
  echo "== build $name"
  cmake -S . -B "build-ci-$name" -G Ninja "${cmake_args[@]}" >/dev/null
  cmake --build "build-ci-$name" -j "$jobs"
  echo "== test $name"
  ctest --test-dir "build-ci-$name" --output-on-failure -j "$jobs" "$@"
}

run_build release -DCMAKE_BUILD_TYPE=RelWithDebInfo --
run_build asan -DCMAKE_BUILD_TYPE=Debug -DGPUMEMTRACE_SANITIZE=address -DGPUMEMTRACE_BUILD_BENCH=OFF -- -LE gpu
run_build tsan -DCMAKE_BUILD_TYPE=Debug -DGPUMEMTRACE_SANITIZE=thread -DGPUMEMTRACE_BUILD_BENCH=OFF -- -L "^(unit|tsan_ok)$"
echo "== all test builds passed"
