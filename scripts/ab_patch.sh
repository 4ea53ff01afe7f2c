#!/usr/bin/env bash
# A kernel patch timed against the tree it applies to, both builds in one run (on a GPU machine):
#   bash scripts/ab_patch.sh docs/next/<name>.patch [bench arguments...]
# 1. builds the tree as it is and times it: python -m cuda_portfolio.bench with the arguments given
#    (default: the CUDA softmax at the long-row shapes and 4096x4096 as a control, both directions);
# 2. applies the patch, rebuilds and times the same cases;
# 3. runs the tests in TESTS on the patched build (default tests.gpu_softmax_cases; TESTS= skips them).
#    They are not the whole tier: a kernel lands only after `python -m unittest tests.test_gpu` passes;
# 4. reverses the patch, whatever happened before, and rebuilds the tree as it was, so the installed
#    module is never left a build of the patch (RESTORE=0 skips the rebuild, for a machine discarded after);
# 5. times that build again in a third process ("repeat"; REPEAT=0 skips it) and prints
#    `python -m cuda_portfolio.bench.compare before after --repeat repeat`: our kernels move between
#    processes by more than the A/A band shows, and the repeat's drift widens the noise band.
# JSONs, the comparison and logs go to $OUT_DIR (default results/local/ab-<patch name>). The JSONs
# record the commit (CUDA_PORTFOLIO_GIT_COMMIT if set, else git's), the patched one as
# "<commit>+<patch name>" and dirty. Builds for the GPU present (CUDA_PORTFOLIO_CUDA_ARCHS=native).
# A patch that only edits existing files under python/, tests/, scripts/, docs/ or results/ is not
# rebuilt for (steps 2, 4, 5): the editable install imports the package's Python files from python/.
# PYTHON names the interpreter (default python3).
set -uo pipefail
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
esac
PATCH=$(realpath "$1")
shift
cd "$(dirname "$0")/.."
[ -f "$PATCH" ] || { echo "ab_patch.sh: no patch at $PATCH" >&2; exit 2; }
git apply --check "$PATCH" || { echo "ab_patch.sh: $PATCH does not apply to this tree" >&2; exit 2; }
NAME=$(basename "$PATCH" .patch)
OUT_DIR=${OUT_DIR:-results/local/ab-$NAME}
PY=${PYTHON:-python3}
TESTS=${TESTS-tests.gpu_softmax_cases}
REPEAT=${REPEAT:-1}
RESTORE=${RESTORE:-1}
mkdir -p "$OUT_DIR"
export CUDA_PORTFOLIO_CUDA_ARCHS=${CUDA_PORTFOLIO_CUDA_ARCHS:-native}
BASE=${CUDA_PORTFOLIO_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ $# -eq 0 ]; then
  set -- --op softmax --backend cuda --dtype fp32,bf16 --direction both --rounds 3 \
    --shapes 4096x4096,2048x50257,1024x131072,256x262144,32x1048576,4x4194304
fi

# Rebuild after applying the patch unless it only edits files the editable install reads from the tree.
rebuild=1
if ! git apply --numstat "$PATCH" | cut -f3 | grep -qvE '^(python|tests|scripts|docs|results)/' &&
    ! git apply --summary "$PATCH" | grep -qE '^ *(create|delete|rename)'; then
  rebuild=0
fi

applied=0 patched_build=0
restore() {
  [ "$applied" = 1 ] && git apply -R "$PATCH" && applied=0
  [ "$patched_build" = 1 ] || return 0
  [ "$RESTORE" != 0 ] || { echo "RESTORE=0: the installed module is still the patched build"; return 0; }
  if CUDA_PORTFOLIO_GIT_COMMIT=$BASE CUDA_PORTFOLIO_GIT_DIRTY=0 \
      $PY -m pip install --no-build-isolation -e . > "$OUT_DIR/install-restored.log" 2>&1; then
    echo "rebuilt the tree as it was (the installed module no longer has the patch)"
  else
    echo "ab_patch.sh: rebuilding the tree as it was failed; the installed module may still be the patched" \
      "build (see $OUT_DIR/install-restored.log)" >&2
  fi
}
trap restore EXIT

build_and_time() {  # build_and_time LABEL COMMIT DIRTY BUILD(0/1) BENCH_ARGS...
  local label=$1 commit=$2 dirty=$3 build=$4 t0=$SECONDS rc
  shift 4
  if [ "$build" = 1 ] && ! CUDA_PORTFOLIO_GIT_COMMIT=$commit CUDA_PORTFOLIO_GIT_DIRTY=$dirty \
      $PY -m pip install --no-build-isolation -e . > "$OUT_DIR/install-$label.log" 2>&1; then
    tail -n 30 "$OUT_DIR/install-$label.log"
    echo "ab_patch.sh: the $label build failed (see $OUT_DIR/install-$label.log)" >&2
    exit 1
  fi
  CUDA_PORTFOLIO_GIT_COMMIT=$commit CUDA_PORTFOLIO_GIT_DIRTY=$dirty \
    $PY -m cuda_portfolio.bench "$@" --json "$OUT_DIR/$label.json" > "$OUT_DIR/bench-$label.log" 2>&1
  rc=$?
  echo "$label: build and bench $((SECONDS - t0)) s, bench rc $rc"
  [ $rc -eq 0 ] || { tail -n 20 "$OUT_DIR/bench-$label.log"; exit 1; }
}

# A build directory kept from an earlier build of other sources (a warm GPU machine's, after a call that built a
# patch and reverted it; the tree copied afresh with older timestamps) looks newer than these sources, and ninja
# would keep those objects for "before": touch every native source so the first build compiles the tree as it is.
find csrc CMakeLists.txt -type f -exec touch {} +
build_and_time before "$BASE" 0 1 "$@"
git apply "$PATCH" && applied=1
patched_build=$rebuild
build_and_time after "$BASE+$NAME" 1 "$rebuild" "$@"
status=0
if [ -n "$TESTS" ]; then
  t0=$SECONDS
  KERNEL_REQUIRE_GPU=1 $PY -m unittest $TESTS > "$OUT_DIR/tests.log" 2>&1
  status=$?
  echo "tests ($TESTS) on the patched build: rc $status, $((SECONDS - t0)) s: $(grep -E '^Ran |^OK|^FAILED' "$OUT_DIR/tests.log" | tr '\n' ' ')"
fi
repeat=()
if [ "$REPEAT" != 0 ]; then
  git apply -R "$PATCH" && applied=0
  build_and_time repeat "$BASE" 0 "$rebuild" "$@"  # the tree as it was (rebuilt if the patch was): restore has nothing left
  patched_build=0
  repeat=(--repeat "$OUT_DIR/repeat.json")
fi
$PY -m cuda_portfolio.bench.compare "$OUT_DIR/before.json" "$OUT_DIR/after.json" ${repeat[@]+"${repeat[@]}"} | tee "$OUT_DIR/compare.txt"
echo "files: $OUT_DIR"
exit $status
