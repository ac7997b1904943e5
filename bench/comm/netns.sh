#!/bin/bash
# netns.sh — test hosts for the side-by-side benchmark: network namespaces gcb-h1..gcb-hN
# on one bridge gcbr0 (no address in the root namespace), host i at 198.18.0.(200+i)/24.
#
#   netns.sh up N      create (or complete) gcb-h1..gcb-hN; idempotent; N <= 9
#   netns.sh down      remove every gcb-hN namespace, their veths and the bridge; idempotent
#   netns.sh hosts N   print the driver's --hosts argument: gcb-h1:198.18.0.201,...
#   netns.sh status    list the namespaces and addresses
#
# Only these names and addresses are touched: the gpool cluster's gp-hN / gpbr0 are left alone.
set -euo pipefail

BRIDGE=gcbr0
PREFIX=198.18.0
NSPFX=gcb-h
VETHPFX=gcbv-h

ip_of() { echo "$PREFIX.$((200 + $1))"; }

need_root() { [ "$(id -u)" = 0 ] || { echo "netns.sh: must run as root" >&2; exit 1; }; }

ns_exists() { [ -e "/run/netns/$1" ]; }

up() {
	local n=$1 i ns veth
	[[ $n =~ ^[1-9]$ ]] || { echo "netns.sh: N must be 1..9" >&2; exit 2; }
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link add "$BRIDGE" type bridge
	fi
	ip link set "$BRIDGE" up
	for i in $(seq 1 "$n"); do
		ns=$NSPFX$i veth=$VETHPFX$i
		ns_exists "$ns" || ip netns add "$ns"
		if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
			ip link del "$veth" 2>/dev/null || true
			ip link add "$veth" type veth peer name eth0 netns "$ns"
		fi
		ip link set "$veth" master "$BRIDGE" up
		ip -n "$ns" addr replace "$(ip_of "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" link set lo up
	done
	status
}

down() {
	local ns pids v
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NSPFX}[0-9]+\$" || true); do
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		if [ -n "$pids" ]; then
			echo "netns.sh: killing processes left in $ns: $pids" >&2
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done
	for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
		grep -E "^${VETHPFX}[0-9]+\$" || true); do
		ip link del "$v" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
}

hosts() {
	local n=$1 i out=""
	for i in $(seq 1 "$n"); do out="${out:+$out,}$NSPFX$i:$(ip_of "$i")"; done
	echo "$out"
}

status() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NSPFX}[0-9]+\$" | sort || true); do
		printf '%s %s\n' "$ns" "$(ip -n "$ns" -o -4 addr show dev eth0 2>/dev/null | awk '{print $4}')"
	done
}

case ${1:-} in
up) need_root; up "${2:?usage: netns.sh up N}" ;;
down) need_root; down ;;
hosts) hosts "${2:?usage: netns.sh hosts N}" ;;
status) status ;;
*) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
esac
