#!/usr/bin/env bash
# Regenerate the committed evidence on a GPU machine, one command per group of results:
#   bash scripts/reproduce_results.sh OUT_DIR [bench] [sanitizer] [ncu]      (default: all three)
# bench:     the reference benchmarks (results/README.md): softmax full preset, fp32+bf16, fwd+bwd,
#            the plan each backend picks; GEMM full preset, bf16+fp16, the kernel each backend
#            picks; the GEMM ladder (every kernel version, fp32 and bf16) at 4096^3. JSON + PNG each;
#            then every cell of the three against the issues' bars (bench.targets; targets.png).
# sanitizer: compute-sanitizer memcheck over the executable, the GPU test tier and the smoke run of
#            every variant (allocator cache off), racecheck/initcheck/synccheck over the smoke run,
#            and both negative controls (which must report an invalid global write). The steps are
#            independent correctness runs, so they run side by side (never time anything here). About
#            7 minutes on an H200 (436 s in session 38): the longest chain is the softmax memcheck steps, one
#            after another (CUDA sweep ~195 s, Triton sweep ~110 s, the rest of the module ~95 s after them).
# ncu:       compare_backends.py for softmax (bf16 4096x4096) and matmul (bf16 4096^3): counters of both
#            backends side by side.
# Assumes the package is installed (scripts/gpu_check.sh does it). Every step has a time limit
# (STEP_TIMEOUT seconds, default 900), keeps its full log in OUT_DIR and contributes one summary
# line, printed last. Profiled and sanitized runs are never used for timing.
# PYTHON names the interpreter (default python3).
set -uo pipefail
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "" | -*) usage >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
OUT_DIR=$1
shift
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(bench sanitizer ncu)
for group in "${groups[@]}"; do  # every group checked before any runs
  case $group in
    bench | sanitizer | ncu) ;;
    *) echo "reproduce_results.sh: unknown group '$group' (bench, sanitizer, ncu)" >&2; exit 2 ;;
  esac
done
STEP_TIMEOUT=${STEP_TIMEOUT:-900}
PY=${PYTHON:-python3}
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/*.summary

step() {  # step NAME PATTERN CMD...: run with the time limit into OUT_DIR/NAME.log; PATTERN picks the summary lines
  local name=$1 pattern=$2
  shift 2
  echo "=== $name: $*"
  timeout "$STEP_TIMEOUT" "$@" > "$OUT_DIR/$name.log" 2>&1
  local rc=$?
  local lines
  lines=$(grep -E "$pattern" "$OUT_DIR/$name.log" | sort | uniq -c | tail -n 4 | tr -s ' ' | tr '\n' ';')
  echo "$name (rc=$rc): ${lines:-$(tail -n 1 "$OUT_DIR/$name.log")}" > "$OUT_DIR/$name.summary"
}

for group in "${groups[@]}"; do
  case $group in
    bench)
      step bench-softmax "^results: |A/A control" $PY -m cuda_portfolio.bench --op softmax --shapes full \
        --dtype fp32,bf16 --direction both --json "$OUT_DIR/softmax.json" --plot "$OUT_DIR/softmax.png"
      step bench-matmul "^results: |A/A control" $PY -m cuda_portfolio.bench --op matmul --shapes full \
        --dtype bf16,fp16 --json "$OUT_DIR/matmul.json" --plot "$OUT_DIR/matmul.png"
      step bench-matmul-ladder "^results: |A/A control" $PY -m cuda_portfolio.bench --op matmul \
        --shapes 4096x4096x4096 --dtype fp32,bf16 --plans all --json "$OUT_DIR/matmul-ladder.json" \
        --plot "$OUT_DIR/matmul-ladder.png"
      step targets "cells with a target" $PY -m cuda_portfolio.bench.targets "$OUT_DIR/softmax.json" \
        "$OUT_DIR/matmul.json" "$OUT_DIR/matmul-ladder.json" --plot "$OUT_DIR/targets.png"
      ;;
    sanitizer)
      # With the allocator cache on, a stray write can land in another tensor unseen; Triton GEMM
      # autotuning (timed launches + cache flushes) means nothing under a sanitizer and dominates it.
      export KERNEL_REQUIRE_GPU=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDA_PORTFOLIO_NO_TUNING=1
      step memcheck-executable "ERROR SUMMARY|[0-9]+ passed" compute-sanitizer --tool memcheck cuda_portfolio --test-only &
      for module in gpu_copy_cases gpu_matmul_cases gpu_bench_cases; do  # bench: the harness's launches, untimed here
        step "memcheck-$module" "ERROR SUMMARY|^Ran |^OK|^FAILED" \
          compute-sanitizer --tool memcheck $PY -m unittest "tests.$module" &
      done
      # The softmax sweeps (~195 s CUDA, ~110 s Triton under memcheck) are the hungriest steps: memcheck
      # keeps device memory per freed large tensor, so one process per backend, and these softmax
      # steps run one after another (side by side they ran out of the H200's 141 GB).
      (
        for backend in cuda triton; do
          CUDA_PORTFOLIO_TEST_BACKENDS=$backend step "memcheck-gpu_softmax_cases-sweep-$backend" \
            "ERROR SUMMARY|^Ran |^OK|^FAILED" compute-sanitizer --tool memcheck $PY -m unittest \
            tests.gpu_softmax_cases.SoftmaxGpuTest.test_every_backend_plan_dtype_shape_forward_backward
        done
        # ...and every other test method of the module (tests/test_tooling_cpu.py checks the list).
        step "memcheck-gpu_softmax_cases-rest" "ERROR SUMMARY|^Ran |^OK|^FAILED" \
          compute-sanitizer --tool memcheck $PY -m unittest -k test_operands -k test_api \
          -k test_special -k test_torch_compile -k test_runs_on -k test_tensor_past \
          -k test_block_online -k test_cuda_split_row -k test_cuda_describe_launch -k test_triton_tuned \
          -k test_triton_every_tuning_candidate \
          -k test_triton_split_row -k test_triton_block_online -k test_16_bit_rows \
          -k test_double_backward -k test_vmap -k test_auto_backend \
          tests.gpu_softmax_cases
      ) &
      for tool in memcheck racecheck initcheck synccheck; do
        step "$tool-smoke" "ERROR SUMMARY|RACECHECK SUMMARY|[0-9]+ passed" compute-sanitizer --tool "$tool" $PY scripts/sanitizer_smoke.py &
      done
      step negative-control-executable "Invalid __global__ write|ERROR SUMMARY" \
        compute-sanitizer --tool memcheck cuda_portfolio --negative-control &
      step negative-control-python "Invalid __global__ write|ERROR SUMMARY" \
        compute-sanitizer --tool memcheck $PY scripts/sanitizer_smoke.py --negative-control &
      wait
      unset PYTORCH_NO_CUDA_MEMORY_CACHING CUDA_PORTFOLIO_NO_TUNING
      ;;
    ncu)
      step compare-softmax "." $PY scripts/compare_backends.py --op softmax --dtype bfloat16 --shape 4096x4096 \
        --results-dir "$OUT_DIR"
      step compare-matmul "." $PY scripts/compare_backends.py --op matmul --dtype bfloat16 --shape 4096x4096x4096 \
        --results-dir "$OUT_DIR"
      ;;
  esac
done

echo
echo "=== summary (logs in $OUT_DIR)"
cat "$OUT_DIR"/*.summary
