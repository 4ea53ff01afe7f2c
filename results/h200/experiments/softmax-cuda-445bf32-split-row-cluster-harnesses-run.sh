#!/usr/bin/env bash
# As run in session 37 (the patch was then docs/next/split-row-cluster-timed-choice.patch); OUT is the output folder.
# on the device: the timed-choice patch built, diag8 (choice protocol vs graphs), then the benchmark per forced size
git apply results/h200/experiments/softmax-cuda-445bf32-split-row-cluster-timed-choice.patch || exit 1
# (as run: offline wheels for nvtx and liger-kernel, then this build, labelled clean by mistake; the JSONs were relabelled)
CUDA_PORTFOLIO_CUDA_ARCHS=native CUDA_PORTFOLIO_GIT_COMMIT=445bf32+split-row-cluster-timed-choice CUDA_PORTFOLIO_GIT_DIRTY=1 \
  python3 -m pip install -q --no-build-isolation -e . > $OUT/install.log 2>&1 || exit 1
nvidia-smi --query-gpu=uuid --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 50 > $OUT/clocks.csv &
smi=$!
echo "diag start $(date +%s.%N)"
python3 results/h200/experiments/softmax-cuda-445bf32-split-row-cluster-harnesses-diag8.py > $OUT/diag8.txt 2>&1; echo "diag rc $?"
for m in 0 4 8 16 unset; do
  echo "bench $m start $(date +%s.%N)"
  if [ $m = unset ]; then unset CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER; else export CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER=$m; fi
  python3 -m cuda_portfolio.bench --op softmax --backend cuda --plans split_row --dtype fp32,bf16 --direction both \
    --shapes 1024x131072,256x262144 --json $OUT/bench-$m.json > $OUT/bench-$m.log 2>&1; echo "bench $m rc $?"
done
unset CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER
kill $smi
cat $OUT/diag8.txt
for m in 4 8 16 unset; do echo "--- clusters=$m vs tickets"; python3 -m cuda_portfolio.bench.compare $OUT/bench-0.json $OUT/bench-$m.json | grep -E "gain|faster"; done
