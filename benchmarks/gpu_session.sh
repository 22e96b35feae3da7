#!/usr/bin/env bash
# The checks and timings that need a GPU, as one prepared run for a lent GPU machine (the device
# tool runs it in the repository root; its image has Python, PyTorch with CUDA, NumPy and pytest,
# and no network). About 9 minutes: the CUDA-graph and GPU tests, bench_gpu.py's rows, then
# bench_gluon.py's Gluon steps on the GPU.
#
#   bash benchmarks/gpu_session.sh [ROW ...]      (results under $OUT, else /tmp/gpu_session)
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/gpu_session}"
mkdir -p "$OUT"
ROWS=("$@")
[ ${#ROWS[@]} -eq 0 ] && ROWS=(mlp lenet resnet20 lstm lstm_fused resnet50_b1 resnet50_b32)

{ nvidia-smi -L; python3 -c "import sys, torch, mxtorch; print(sys.version.split()[0], 'torch',
torch.__version__, torch.cuda.get_device_name(0), 'mxtorch', mxtorch.__mxtorch_version__)"; } \
    2>&1 | tee "$OUT/device.txt"
# the tests that run only with a GPU, and the ones around the captured step
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_graphs.py tests/test_joint.py \
    tests/test_executor_placement.py tests/test_optimizer.py -k "gpu or cuda or capture or traced" \
    2>&1 | tee "$OUT/tests.txt"
timeout 300 python3 benchmarks/bench_gpu.py "${ROWS[@]}" --rounds 7 --seconds 0.5 2>&1 \
    | tee "$OUT/bench_gpu.txt"
timeout 90 python3 benchmarks/bench_gluon.py --ctx gpu --rounds 5 --seconds 0.3 2>&1 \
    | tee "$OUT/bench_gluon_gpu.txt"
