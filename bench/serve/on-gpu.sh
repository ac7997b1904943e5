#!/bin/bash
# bench/serve/on-gpu.sh - on a GPU machine (only the CUDA toolkit and libc there): build
# kernels/ standalone and gserve's forward pass on the kernels backend (model/infer.c over
# model/forward.c, the model library's libc-only part) with its test (model/test/test_infer.c),
# then run the test on the cuda backend and on the kernels' cpu backend: the
# probabilities of a random 64-256-256-10 MLP against a plain C forward pass (within 1e-5),
# and what a batch of 1, 32 and 64 rows costs on each. Output on stdout.
#   bench/serve/on-gpu.sh [ARCHS]
set -u
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-/tmp/gs-gk-build}
ARCHS=${1:-90}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -rf "$BUILD"
(cmake -S "$ROOT/kernels" -B "$BUILD" -DGK_CUDA_ARCHS="$ARCHS" -DGK_WITH_HIP=OFF &&
	cmake --build "$BUILD" -j"$(nproc)") >"$BUILD.log" 2>&1 || { tail -30 "$BUILD.log"; exit 1; }
lib=$(find "$BUILD" -name libgpool-kernels.a | head -1)
mod=$(find "$BUILD" -name 'libgpool-kernels-cuda.so' | head -1)
if [ -z "$lib" ] || [ -z "$mod" ]; then
	echo "kernels built without the cuda module"
	exit 1
fi
# the cpu backend's sgemm is OpenBLAS's where the kernels' build found it
blas=$(sed -n 's/^GK_OPENBLAS_LIB:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
case $blas in *NOTFOUND* | "") blas="" ;; esac
gcc -O2 -std=gnu11 -Wall -Werror -I"$ROOT" -I"$ROOT/kernels/include" \
	"$ROOT/model/test/test_infer.c" "$ROOT/model/infer.c" "$ROOT/model/forward.c" \
	"$ROOT/model/model.c" "$ROOT/model/softmax.c" "$ROOT/common/error.c" \
	"$lib" ${blas:+"$blas"} -ldl -lm -lpthread -o "$BUILD/test_infer" || exit 1
GPOOL_KERNELS_DIR=$(dirname "$mod")
export GPOOL_KERNELS_DIR
for b in cuda cpu; do
	echo "## GS_TEST_BACKEND=$b"
	GS_TEST_BACKEND=$b "$BUILD/test_infer"
	echo "rc=$?"
done
