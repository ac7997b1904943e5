#!/bin/bash
# build-images.sh: build (or find) the container tests' images before the tests run (`make
# test` calls it), so that their minutes of debootstrap and apt are not spent inside a test's
# time limit: the minimal image (t1320-t1324), the python3-torch one (t1325), the Open MPI one
# (t1326); tests/system/lib-container.sh builds and caches each once per machine. Where one
# cannot be built (not root, no debootstrap, no mirror) it says why and the test that needs it
# skips; this script never fails the run.
# shellcheck source=tests/system/lib-container.sh
. "$(dirname "$0")/lib-container.sh"
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
	echo "build-images: not root or no debootstrap: the container tests will skip"
	exit 0
fi
for b in ctr_image_build ctr_torch_image_build ctr_mpi_image_build; do
	start=$(date +%s)
	if "$b"; then
		echo "build-images: $b: ready ($(($(date +%s) - start)) s)"
	else
		echo "build-images: $b: $CTR_WHY (the tests that need it will skip)"
	fi
done
exit 0
