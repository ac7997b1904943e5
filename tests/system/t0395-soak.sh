#!/bin/bash
# t0395-soak: faults together under load, judged from the recorded history alone (issue 39,
# docs/reliability.md "The soak"). A short fixed schedule of tests/soak/soak.sh: seed 9, 60 s,
# 8 faults of every kind the soak makes (a host's link cut with its owner back meanwhile, the
# leader's link cut, an agent killed, the leader killed twice, a host's scratch filled) on 4
# hosts and 3 schedulers, under 2 clients submitting, cancelling and depending; then
# tests/soak/checker.py must find no violation: no acknowledged job lost, none run twice,
# no attempts overlapping, every output as the task wrote it, nothing alive after an
# acknowledged cancel or on a cut host past its lease, no state going back in what a client
# saw. The run replays with `tests/soak/soak.sh --seed 9 --seconds 60`.
# timeout: 240
SOAK=$(cd "$(dirname "$0")/../soak" && pwd)/soak.sh
exec "$SOAK" --seed 9 --seconds 60
