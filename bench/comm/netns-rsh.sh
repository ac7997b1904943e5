#!/bin/bash
# netns-rsh.sh HOST COMMAND... — Open MPI's plm_rsh_agent for hosts that are network namespaces
# of this machine (mpirun --mca plm_rsh_agent .../netns-rsh.sh). Runs COMMAND (a shell command
# line, as ssh would) in HOST's namespace. HOST is a namespace name, or an IPv4 address found in
# GCB_NETNS_MAP ("IP=NS IP=NS ..."), or else the namespace that holds that address.
set -u
host=${1:?usage: netns-rsh.sh HOST COMMAND...}
shift
ns=""
if [ -e "/run/netns/$host" ]; then
	ns=$host
else
	for kv in ${GCB_NETNS_MAP:-}; do
		[ "${kv%%=*}" = "$host" ] && { ns=${kv#*=}; break; }
	done
	if [ -z "$ns" ]; then
		for cand in $(ip netns list 2>/dev/null | awk '{print $1}'); do
			if ip -n "$cand" -o -4 addr show 2>/dev/null | awk '{print $4}' | grep -qx "$host/[0-9]*"; then
				ns=$cand
				break
			fi
		done
	fi
fi
[ -n "$ns" ] || { echo "netns-rsh.sh: no network namespace for host '$host'" >&2; exit 255; }
exec ip netns exec "$ns" /bin/sh -c "$*"
