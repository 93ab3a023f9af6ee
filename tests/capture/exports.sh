#!/usr/bin/env bash
# exports.sh LIB API_DEF - the preload library exports exactly api.def's CUDA functions plus
# the documented non-CUDA entry points of capture/exports.map.in, nothing else; and every
# api.def function is exported (a hook the linker script dropped would be silently unused).
set -euo pipefail
lib=$1 def=$2
explicit="cuGetProcAddress cuGetProcAddress_v2 dlsym dlclose cuptiSubscribe cuptiSubscribe_v2
cuptiUnsubscribe InitializeInjection gmt_version gmt_snapshot gmt_active _exit _Exit pipe2
execve execv execvp execvpe execl execlp execle fexecve execveat"
want=$( (sed -n 's/^GMT_HOOK(\([A-Za-z0-9_]*\),.*/\1/p' "$def"; printf '%s\n' $explicit) | sort -u)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWi]$/ {print $3}' | sed 's/@.*//' | sort -u)
[[ $(sed -n 's/^GMT_HOOK(\([A-Za-z0-9_]*\),.*/\1/p' "$def" | wc -l) -ge 30 ]] || {
  echo "FAIL: fewer than 30 GMT_HOOK lines read from $def" >&2; exit 1; }
if [[ "$want" != "$have" ]]; then
  echo "FAIL: exported symbols differ from api.def + explicit list" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi
echo "PASS: $(echo "$have" | wc -l) exports, all from api.def or the explicit list"
