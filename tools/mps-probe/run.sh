#!/bin/bash
# tools/mps-probe/run.sh: build and run the MPS probe on a machine with an NVIDIA card and the
# CUDA toolkit alone (no Debian libraries needed): gcc builds worker/node/mps.c with the probe,
# nvcc builds the CUDA client. Run from the repository root as root:
#   bash tools/mps-probe/run.sh [--card N] [--limit-mb MB]
# The log goes to $OUT/mps-probe.log when OUT is set, else to stdout only.
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CONTROL=${MPS_CONTROL:-$(command -v nvidia-cuda-mps-control || echo /usr/bin/nvidia-cuda-mps-control)}
B=$(mktemp -d /tmp/mps-probe.XXXXXX)
trap 'rm -rf "$B"' EXIT
log=${OUT:+$OUT/mps-probe.log}
{
	echo "== $(date -u) on $(hostname)"
	nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I. -o "$B/mps-probe" \
		tools/mps-probe/mps_probe.c worker/node/mps.c
	"$NVCC" -O2 -o "$B/alloc" tools/mps-probe/alloc.cu
	"$B/mps-probe" --control "$CONTROL" --client "$B/alloc" --dir "$B/mps" "$@"
} 2>&1 | tee ${log:+"$log"}
exit "${PIPESTATUS[0]}"
