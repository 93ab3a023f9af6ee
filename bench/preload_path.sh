# preload_path.sh - sourced by the bench scripts: the dynamic loader splits LD_PRELOAD at
# spaces and colons, so a library path holding either is not loaded (the loader says so and the
# program runs untraced, exit status 0): a "traced" figure would be the untraced program's.
# gmt_bench_preloadable PATH... exits the script with status 2 at the first such path.
gmt_bench_preloadable() {
  local p
  for p in "$@"; do
    case $p in
      *[[:space:]:]*)
        echo "$(basename "$0"): $p: LD_PRELOAD cannot name a path with a space or a colon;" \
          "build or copy the library elsewhere" >&2
        exit 2 ;;
    esac
  done
}
