#!/bin/sh
# task.sh NAME SECS: one attempt of a soak job (tests/soak/workload.py). Appends its start, a
# tick every 0.5 s and its end to $SOAK_TASKS (one JSON line each, from this host: the hosts
# share the machine's /tmp, where the soak keeps it), and prints one line of output that the
# checker computes again from NAME alone.
name=$1
secs=${2:-1}
host=$(hostname)
rec() {
	printf '{"ev":"task","what":"%s","job":%s,"attempt":%s,"rank":%s,"host":"%s","name":"%s","t":%s}\n' \
		"$1" "${GPOOL_JOB_ID:-0}" "${GPOOL_ATTEMPT:-0}" "${GPOOL_RANK:-0}" "$host" "$name" \
		"$(date +%s.%N)" >>"$SOAK_TASKS"
}
rec start
n=$((secs * 2))
while [ "$n" -gt 0 ]; do
	sleep 0.5
	rec tick
	n=$((n - 1))
done
echo "soak-out $name $(printf '%s' "$name" | sha1sum | cut -c1-16)"
rec end
