#!/usr/bin/env bash
# Installs the Debian packages gpumemtrace needs to build and test. Idempotent: asks apt only
# for what is missing. The CUDA toolkit (headers, CUPTI, nvcc) is expected at /usr/local/cuda
# or $CUDAToolkit_ROOT; it is not a Debian package here.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libunwind-dev libdw-dev libc6-dbg libcjson-dev libcmocka-dev
      python3 python3-jsonschema zlib1g-dev clang clang-format libclang-rt-14-dev chromium golang-go
      prometheus valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq || true
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
