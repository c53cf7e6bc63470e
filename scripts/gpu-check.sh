#!/usr/bin/env bash
# On a machine with a real NVIDIA GPU and driver: run the GPU collector once (real NVML through
# nvidia-ml-py) and compare every reading with `nvidia-smi -q -x`. Prints PASS/FAIL/SKIP per GPU and field;
# exits 1 when a reading disagrees, 2 when nvidia-smi or NVML cannot be used. Needs the project venv
# (scripts/setup.sh); no Kubernetes, no root (MIG parent totals and some counters may need root: run it
# with sudo to compare those too).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found: this check needs an NVIDIA driver" >&2; exit 2; }
[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/python scripts/gpu_check.py "$@"
