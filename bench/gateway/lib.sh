#!/bin/bash
# bench/gateway/lib.sh: sourced by bench/gateway.sh and bench/gateway/probe-stall.sh.

# nginx_proxy_conf FILE DIR PORT REPLICA...: write to FILE the nginx the gateway is measured
# against: one worker, proxy_pass over HTTP/1.1 to an upstream of the replicas (host:port) with
# keep-alive connections, listening on 127.0.0.1:PORT; its pid file and temporary files in DIR.
nginx_proxy_conf() {
	local file=$1 dir=$2 port=$3 name
	shift 3
	name=$(basename "$file" .conf)
	cat >"$file" <<CONF
worker_processes 1;
daemon off;
pid $dir/$name.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/pbody; proxy_temp_path $dir/pproxy; fastcgi_temp_path $dir/pf;
  uwsgi_temp_path $dir/pu; scgi_temp_path $dir/ps;
  upstream reps { $(printf 'server %s; ' "$@") keepalive 64; }
  server {
    listen 127.0.0.1:$port;
    location / { proxy_pass http://reps; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
}

# bench_cleanup DIR PID...: at a benchmark's exit, kill the PIDs that are set (empty ones are
# skipped), stop the gpool cluster in DIR/cluster and remove DIR.
bench_cleanup() {
	local dir=$1 p
	shift
	for p in "$@"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	"$SRC/deploy/gpool-cluster" stop --dir "$dir/cluster" >/dev/null 2>&1
	rm -rf "$dir"
}
