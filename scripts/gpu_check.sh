#!/usr/bin/env bash
# The GPU tier's one command (run on a machine with a CUDA GPU, offline is fine):
#   bash scripts/gpu_check.sh
# offline install, the GPU tests, the executable's validation, a quick benchmark; the closing
# line of each step is printed last. Logs go to $LOG_DIR (default results/local/gpu_check).
# Each step has a time limit (seconds) so a hang cannot eat the machine: STEP_TIMEOUT=600.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${LOG_DIR:-results/local/gpu_check}
STEP_TIMEOUT=${STEP_TIMEOUT:-600}
mkdir -p "$LOG_DIR"
PY=${PYTHON:-python3}
summary=()

step() {  # step NAME LOGFILE CMD...: run with a time limit, keep the log, remember its closing line
  local name=$1 log=$2
  shift 2
  echo "=== $name: $*"
  timeout "$STEP_TIMEOUT" "$@" > "$LOG_DIR/$log" 2>&1
  local rc=$?
  local last
  last=$(grep -E "[0-9]+ passed|[0-9]+ failed|^OK|^FAILED|^Ran [0-9]+ test|wrote " "$LOG_DIR/$log" | tail -n 2 | tr '\n' ' ')
  summary+=("$name (rc=$rc): $last")
  [ $rc -eq 0 ] || tail -n 30 "$LOG_DIR/$log"
  return $rc
}

step install install.log $PY -m pip install --no-build-isolation -v -e . || { printf '%s\n' "${summary[@]}"; exit 1; }
step gpu-tests gpu_tests.log env KERNEL_REQUIRE_GPU=1 $PY -m unittest tests.test_gpu
step executable executable.log cuda_portfolio --test-only
step benchmark benchmark.log $PY -m cuda_portfolio.bench --op all --shapes quick --json "$LOG_DIR/bench-quick.json"
echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
