#!/usr/bin/env bash
# The GPU tier's one command (run on a machine with a CUDA GPU, offline is fine):
#   bash scripts/gpu_check.sh
# offline install, the GPU tests, the executable's validation, a quick benchmark; the closing
# line of each step is printed last. Logs go to $LOG_DIR (default results/local/gpu_check).
#
# The GPU test modules (tests/gpu_*_cases.py, the same tests tests/test_gpu.py gathers) run as
# parallel processes beside `cuda_portfolio --test-only`, which cuts the wall time from the sum
# to the longest (matmul, ~4 min on an H200); SERIAL=1 runs `python -m unittest tests.test_gpu`
# in one process instead. The benchmark runs last, alone on the GPU; BENCH=0 skips it, for the tier
# alone under a time limit (perf log, "Session 36 on the H200": the benchmark ran into one there).
# Each step has a time limit in seconds (STEP_TIMEOUT, default 600) so a hang cannot eat the machine.
# It builds for the GPU present (CUDA_PORTFOLIO_CUDA_ARCHS=native unless set).
# PYTHON names the interpreter (default python3).
set -uo pipefail
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  "") ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
LOG_DIR=${LOG_DIR:-results/local/gpu_check}
STEP_TIMEOUT=${STEP_TIMEOUT:-600}
PY=${PYTHON:-python3}
mkdir -p "$LOG_DIR"
export KERNEL_REQUIRE_GPU=1
# Build for the GPU that is here (CMake's "native"), not the whole default list: a faster build.
export CUDA_PORTFOLIO_CUDA_ARCHS=${CUDA_PORTFOLIO_CUDA_ARCHS:-native}

closing_line() {  # the runner's summary lines of a log, else its last line
  local lines
  lines=$(grep -E "[0-9]+ passed|[0-9]+ failed|^OK|^FAILED|^Ran [0-9]+ test|^results: " "$1" | tail -n 2 | tr '\n' ' ')
  [ -n "$lines" ] && echo "$lines" || tail -n 1 "$1"
}

run_logged() {  # run_logged LOG CMD...: run with the time limit, output to LOG, return its status
  local log=$1
  shift
  timeout "$STEP_TIMEOUT" "$@" > "$LOG_DIR/$log" 2>&1
}

echo "=== install"
if ! run_logged install.log $PY -m pip install --no-build-isolation -v -e .; then
  tail -n 40 "$LOG_DIR/install.log"
  echo "install (rc=1): see $LOG_DIR/install.log"
  exit 1
fi

declare -A pids
if [ "${SERIAL:-0}" = 1 ]; then
  modules=(test_gpu)
else
  modules=()
  for f in tests/gpu_*_cases.py; do modules+=("$(basename "$f" .py)"); done
fi
for m in "${modules[@]}"; do
  echo "=== $PY -m unittest tests.$m"
  run_logged "$m.log" $PY -m unittest "tests.$m" & pids[$m]=$!
done
echo "=== cuda_portfolio --test-only"
run_logged executable.log cuda_portfolio --test-only & pids[executable]=$!

summary=()
status=0
for name in "${!pids[@]}"; do
  wait "${pids[$name]}"
  rc=$?
  [ $rc -eq 0 ] || status=1
  log="$name.log"
  summary+=("$name (rc=$rc): $(closing_line "$LOG_DIR/$log")")
  [ $rc -eq 0 ] || grep -E "^(FAIL|ERROR):|Error|error" "$LOG_DIR/$log" | head -n 20
done

if [ "${BENCH:-1}" = 0 ]; then
  summary+=("benchmark: not run (BENCH=0)")
else
  echo "=== benchmark (quick)"
  run_logged benchmark.log $PY -m cuda_portfolio.bench --op all --shapes quick --json "$LOG_DIR/bench-quick.json"
  rc=$?
  [ $rc -eq 0 ] || status=1
  summary+=("benchmark (rc=$rc): $(closing_line "$LOG_DIR/benchmark.log")")
fi

echo
echo "=== summary (logs in $LOG_DIR)"
printf '%s\n' "${summary[@]}"
exit $status
