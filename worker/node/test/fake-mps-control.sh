#!/bin/bash
# fake-mps-control.sh: stands in for nvidia-cuda-mps-control where no NVIDIA card is (unit and
# system tests with fake cards). "-d": a daemon (a sleep) whose pid file and control pipe go in
# CUDA_MPS_PIPE_DIRECTORY; a log line in CUDA_MPS_LOG_DIRECTORY/control.log with the uid and the
# card it serves. Without arguments it reads commands on stdin: quit, get_server_list.
set -u
pipe=${CUDA_MPS_PIPE_DIRECTORY:?}
log=${CUDA_MPS_LOG_DIRECTORY:-$pipe}/control.log
if [ "${1:-}" = -d ]; then
	[ -w "$pipe" ] || { echo "fake-mps-control: cannot write $pipe" >&2; exit 1; }
	sleep 1000 >/dev/null 2>&1 &
	echo $! >"$pipe/nvidia-cuda-mps-control.pid"
	mkfifo "$pipe/control"
	echo "start uid=$(id -u) visible=${CUDA_VISIBLE_DEVICES:-}" >>"$log"
	exit 0
fi
while read -r c; do
	case $c in
	quit)
		kill "$(cat "$pipe/nvidia-cuda-mps-control.pid")" 2>/dev/null
		rm -f "$pipe/control" "$pipe/nvidia-cuda-mps-control.pid"
		echo "stop uid=$(id -u)" >>"$log"
		;;
	get_server_list) echo "Server 1" ;;
	esac
done
