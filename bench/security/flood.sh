#!/bin/bash
# bench/security/flood.sh [SECS]: the attack of tests/system/t1101-attack-flood.sh held for SECS
# seconds (default 600): three hosts with no credential (and one with a user's) send gschedd
# envelopes of max_request and of millions of empty messages, and 80 MiB frames, while gstat
# and gnodes are timed, gschedd's RSS sampled and jobs submitted. The figures go to
# bench/results/security/flood-results.txt (one line a run) and the test's whole output to
# bench/results/security/security-flood-DATE.log. Root; it takes the cluster lock.
set -eu
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-600}
BUILD=${GPOOL_BUILD:-$HERE/build}
log=$HERE/bench/results/security/security-flood-$(date -u +%Y%m%d-%H%M).log
export GPOOL_BIN_DIR=${GPOOL_BIN_DIR:-$BUILD/bin} GPOOL_SRC_DIR=$HERE
export T1101_SECS=$SECS T1101_OUT=$HERE/bench/results/security/flood-results.txt
export GPOOL_TEST_LIMIT=$((SECS + 400))
mkdir -p "$(dirname "$log")"
flock /tmp/gpool-netns.lock "$HERE/tests/system/t1101-attack-flood.sh" 2>&1 | tee "$log"
echo "log: $log"
