#!/usr/bin/env bash
# gpunex-gpubench against PyTorch on the same GPU in the same run (issue 5): runs PyTorch's
# matrix product and device copy (bench/gpubench_vs_torch.py), then gpunex-gpubench, then
# PyTorch again, all on CUDA device 0, and prints our figures, PyTorch's (its best of the
# two runs) and the ratios. Targets: BF16 GEMM and device copy at least 95% of PyTorch's.
# Needs a GPU, python3 with a CUDA build of torch, and (without a binary) cmake, g++ and
# nvcc; takes about 2 to 4 minutes, most of it building.
#
#   bench/gpubench_vs_torch.sh [GPUBENCH_BINARY]
#
# Without a binary it builds gpunex-gpubench into BUILD_DIR (default
# build/gpubench-vs-torch) for this GPU only: through the whole project when its libraries
# are installed, otherwise as src/gpubench alone (then without NVML: the sustained
# phase's clocks, power and temperature are 0). Environment: SUSTAIN_S (default 15),
# CUDA_ARCH (default native), PYTHON (default python3), KEEP_DIR (keep the raw outputs
# there).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
bin=${1:-}
py=${PYTHON:-python3}
sustain=${SUSTAIN_S:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || {
  echo "gpubench_vs_torch: needs $py with a CUDA build of torch, and a GPU" >&2
  exit 1
}

if [ -z "$bin" ]; then
  build=${BUILD_DIR:-build/gpubench-vs-torch}
  arch=${CUDA_ARCH:-native}
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  jobs=$(nproc 2>/dev/null || echo 4)
  echo "building gpunex-gpubench (CUDA architectures: $arch) ..." >&2
  if cmake -S . -B "$build/project" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$work/build.log" 2>&1 &&
    cmake --build "$build/project" -j "$jobs" --target gpunex-gpubench >>"$work/build.log" 2>&1; then
    bin=$build/project/src/gpubench/gpunex-gpubench
  else
    echo "the whole project does not build here (missing libraries?); building src/gpubench alone," \
      "without NVML" >&2
    cmake -S src/gpubench -B "$build/alone" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
    cmake --build "$build/alone" -j "$jobs" --target gpunex-gpubench >>"$work/build.log" 2>&1 ||
      { cat "$work/build.log" >&2; exit 1; }
    bin=$build/alone/gpunex-gpubench
  fi
  echo "built $bin in $((SECONDS - started)) s" >&2
fi
[ -x "$bin" ] || { echo "gpubench_vs_torch: $bin is not an executable" >&2; exit 1; }

echo "PyTorch, first run ..." >&2
"$py" bench/gpubench_vs_torch.py torch --device 0 >"$work/torch1.json"
echo "gpunex-gpubench --device 0 --sustain-s $sustain ..." >&2
rc=0
"$bin" --device 0 --sustain-s "$sustain" >"$work/ours.json" 2>"$work/ours.log" || rc=$?
cat "$work/ours.log" >&2
if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
  echo "gpunex-gpubench failed (exit $rc):" >&2
  cat "$work/ours.json" >&2
  exit 1
fi
echo "PyTorch, second run ..." >&2
"$py" bench/gpubench_vs_torch.py torch --device 0 >"$work/torch2.json"

echo
echo "gpunex-gpubench vs PyTorch ($(date -u +%Y-%m-%dT%H:%MZ), gpunex-gpubench exit $rc)"
"$py" bench/gpubench_vs_torch.py report "$work/ours.json" "$work/torch1.json" "$work/torch2.json"
echo "total $((SECONDS - started)) s"
if [ -n "${KEEP_DIR:-}" ]; then
  mkdir -p "$KEEP_DIR"
  cp "$work"/*.json "$work"/*.log "$KEEP_DIR"/
fi
