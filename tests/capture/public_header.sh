#!/usr/bin/env bash
# public_header.sh CC INCLUDE GENERATED CUDA_INCLUDE STANDIN LIB WORK - the public header used as
# README.md and include/gpumemtrace/gpumemtrace.h say: a program that includes it and calls
# gmt_snapshot (after testing its address) compiles cleanly, links without the library, runs
# untraced, and writes its snapshot when the library is preloaded. Before, the header declared
# the functions strong: such a program failed to link ("undefined reference to gmt_snapshot").
set -euo pipefail
cc=$1 inc=$2 gen=$3 cuda=$4 standin=$5 lib=$6 work=$7
# the stand-in runtime loads its driver by name (libcuda.so.1): the stand-in's, never a real
# one of the machine, as tests/integration runs its programs
export LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rm -rf "$work" && mkdir -p "$work"
cat >"$work/api_user.c" <<'PROG'
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "gpumemtrace/gpumemtrace.h"

int main(void)
{
    void *p = NULL;
    if (cudaMalloc(&p, 1 << 20) != 0) return 90;
    if (!gmt_snapshot || !gmt_active || !gmt_version) {
        printf("untraced\n");
        return 0;
    }
    printf("traced %s active=%d snapshot=%d\n", gmt_version(), gmt_active(), gmt_snapshot(NULL));
    return 0;
}
PROG
"$cc" -std=c17 -Wall -Wextra -Werror -pedantic -fPIE -pie -I"$inc" -I"$gen" -I"$cuda" \
    "$work/api_user.c" -L"$standin" -lcudart -Wl,-rpath,"$standin" -o "$work/api_user" ||
    { echo "FAIL: a program that includes the header does not build without the library" >&2; exit 1; }
out=$("$work/api_user")
[[ $out == untraced ]] || { echo "FAIL: untraced run said '$out'" >&2; exit 1; }
# a sanitizer build of the library needs its runtime first in the preload list
preload=$(ldd "$lib" | awk '$1 ~ /^lib[at]san\.so/ {printf "%s:", $3}')$lib
out=$(cd "$work" && GPUMEMTRACE_OUTPUT="$work/r.json" LD_PRELOAD="$preload" "$work/api_user" 2>/dev/null)
[[ $out =~ ^traced\ [0-9]+\.[0-9]+\.[0-9]+\ active=1\ snapshot=0$ ]] ||
    { echo "FAIL: traced run said '$out'" >&2; exit 1; }
[[ -f $work/r.snapshot-1.json && -f $work/r.json ]] ||
    { echo "FAIL: no snapshot report beside r.json: $(ls "$work")" >&2; exit 1; }
echo "PASS: the header links without the library; untraced and traced runs as documented"
