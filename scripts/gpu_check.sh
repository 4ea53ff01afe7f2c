#!/usr/bin/env bash
# The GPU tier's one command (run on a machine with a CUDA GPU, offline is fine):
#   bash scripts/gpu_check.sh
# offline install, the GPU tests, the executable's validation, a quick benchmark; the summary
# line of each step is printed last. Logs go to $LOG_DIR (default results/local/gpu_check).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${LOG_DIR:-results/local/gpu_check}
mkdir -p "$LOG_DIR"
PY=${PYTHON:-python3}
declare -a summary

step() {  # step NAME LOGFILE CMD...: run, keep the log, remember its closing line
  local name=$1 log=$2
  shift 2
  echo "=== $name: $*"
  "$@" > "$LOG_DIR/$log" 2>&1
  local rc=$?
  local last
  last=$(grep -E "passed|failed|^OK|^FAILED|^Ran |error" "$LOG_DIR/$log" | tail -n 2 | tr '\n' ' ')
  summary+=("$name (rc=$rc): $last")
  [ $rc -eq 0 ] || tail -n 40 "$LOG_DIR/$log"
  return $rc
}

step install install.log $PY -m pip install --no-build-isolation -v -e . || { printf '%s\n' "${summary[@]}"; exit 1; }
step gpu-tests gpu_tests.log env KERNEL_REQUIRE_GPU=1 $PY -m unittest tests.test_gpu -v
step executable executable.log cuda_portfolio --test-only
if $PY -c "import cuda_portfolio.bench" 2>/dev/null; then
  step benchmark benchmark.log $PY -m cuda_portfolio.bench --op all --shapes quick --json "$LOG_DIR/bench-quick.json"
fi
echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
