#!/usr/bin/env bash
# Builds the relocatable bundle dist/gpumemtrace-<version>-linux-x86_64.tar.gz: the preload
# library, the CLI, the report's JSON Schema, and every non-libc library they need, found
# through $ORIGIN (DT_RPATH, which unlike RUNPATH also serves the libraries' own
# dependencies), so it runs where only libc and the NVIDIA driver exist.
# usage: scripts/bundle.sh [OUT_DIR]   (default dist/); prints the bundle directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build="$root/build-bundle"
opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEMTRACE_BUILD_TESTS=OFF -DGMT_BUNDLE_RPATH=ON)
# The library is built profile-guided (scripts/pgo.sh) when a test build to train with is at
# hand: build/, or GMT_BUNDLE_TRAIN; GMT_BUNDLE_PGO=auto (the default), 1 or 0 (pgo.sh).
bash "$root/scripts/pgo.sh" "$build" "${GMT_BUNDLE_TRAIN:-$root/build}" all -- "${opts[@]}"
version=$(sed -n 's/^project(gpumemtrace VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
name="gpumemtrace-$version-linux-x86_64"
stage="$out/$name"
rm -rf "$stage"
cmake --install "$build" --prefix "$stage" >/dev/null
# Flatten lib/<multiarch> if GNUInstallDirs chose one.
if [ ! -f "$stage/lib/libgpumemtrace.so" ]; then
  mkdir -p "$stage/lib"
  find "$stage" -name 'libgpumemtrace.so' -exec mv {} "$stage/lib/" \;
fi
# Carry every shared library they need that is not part of libc itself.
copy_deps() {
  ldd "$1" | awk '/=> \// {print $3}' | while read -r dep; do
    case "$(basename "$dep")" in
      libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libgcc_s.so.*) ;;
      *) [ -f "$stage/lib/$(basename "$dep")" ] || cp -L "$dep" "$stage/lib/" ;;
    esac
  done
}
copy_deps "$stage/lib/libgpumemtrace.so"
copy_deps "$stage/bin/gpumemtrace"
# libdw is dlopened when a report is written (docs/symbols.md), so ldd does not list it: carry
# it; the loop below carries what it needs (libelf, libz, liblzma, libbz2...).
# awk reads the whole list: one that stopped at the first match could end ldconfig with
# SIGPIPE, which pipefail turns into the script's failure (it did, in session 23). ldconfig
# is in /sbin, which a user's PATH on Debian lacks.
libdw=$(PATH="$PATH:/usr/sbin:/sbin" ldconfig -p | awk '$1 == "libdw.so.1" && /x86-64/ && !found {print $NF; found = 1}')
[ -n "$libdw" ] && cp -L "$libdw" "$stage/lib/libdw.so.1"
for f in "$stage"/lib/*.so*; do copy_deps "$f"; done
cp "$root/README.md" "$root/LICENSE" "$stage/" 2>/dev/null || true
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "$stage"
