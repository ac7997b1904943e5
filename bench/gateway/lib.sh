#!/bin/bash
# bench/gateway/lib.sh: sourced by bench/gateway.sh and the scripts in bench/gateway/.

# nginx_proxy_conf FILE DIR PORT REPLICA...: write to FILE the nginx the gateway is measured
# against: one worker, proxy_pass over HTTP/1.1 to an upstream of the replicas (host:port) with
# keep-alive connections, listening on 127.0.0.1:PORT; its pid file and temporary files in DIR.
# NGINX_SERVER_ARGS is added to each upstream server (e.g. max_fails=1 fail_timeout=10s),
# NGINX_PROXY_ARGS to the location (timeouts, proxy_next_upstream).
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
  upstream reps { $(printf "server %s ${NGINX_SERVER_ARGS:-}; " "$@") keepalive 64; }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://reps; proxy_http_version 1.1; proxy_set_header Connection "";
      ${NGINX_PROXY_ARGS:-}
    }
  }
}
CONF
}

# h2o_proxy_conf FILE PORT REPLICA: write to FILE an h2o (Debian's 2.2.5) reverse proxy, one
# thread, listening on 127.0.0.1:PORT, to one replica (host:port; h2o 2.2's proxy.reverse.url
# takes one upstream), with keep-alive connections to it. For comparison only (H2O=1).
h2o_proxy_conf() {
	cat >"$1" <<CONF
num-threads: 1
user: nobody
proxy.timeout.keepalive: 60000
listen:
  host: 127.0.0.1
  port: $2
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: http://$3/
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

# bench_two_replicas DIR HOSTS SPORT SVCPORT: a --loopback cluster of HOSTS hosts in DIR/cluster
# (gschedd on 127.0.0.1:SPORT, BIN's programs) running a 2-replica service of replica-nginx.sh
# (wished port SVCPORT) as gpool-user; exports GPOOL_SCHEDULER and GPOOL_CONF and sets the
# array R to the ready replicas' ADDR:PORT.
bench_two_replicas() {
	local dir=$1 hosts=$2 sport=$3 svcport=$4 ub _
	"$SRC/deploy/gpool-cluster" start --dir "$dir/cluster" -n "$hosts" --loopback --port "$sport" \
		--bin "$BIN" --heartbeat-interval 1s >"$dir/start.log" 2>&1 || { cat "$dir/start.log"; exit 1; }
	export GPOOL_SCHEDULER=tcp://127.0.0.1:$sport GPOOL_CONF=$dir/cluster/gpool.conf
	# shellcheck source=deploy/lib-users.sh
	. "$SRC/deploy/lib-users.sh"
	ub=$(gpool_users_bin "$BIN" "$dir/user")
	cp "$SRC/bench/gateway/replica-nginx.sh" "$dir/replica-nginx.sh"
	chmod 755 "$dir/replica-nginx.sh"
	runuser -u gpool-user -- env PATH="$ub:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" "$BIN/gsub" --parsable --service --replicas 2 --port "$svcport" \
		-J bench -- "$dir/replica-nginx.sh" >/dev/null
	for _ in $(seq 40); do [ "$(bench_ready_replicas | wc -l)" = 2 ] && break; sleep 1; done
	sleep 4
	mapfile -t R < <(bench_ready_replicas)
	echo "# replicas: ${R[*]}"
}

# bench_ready_replicas: ADDR:PORT of every ready replica gstat shows, one a line.
bench_ready_replicas() {
	"$BIN/gstat" --json | python3 -c 'import json,sys; [print("%s:%s" % (r["addr"], r["port"])) for j in json.load(sys.stdin)["jobs"] for r in j.get("replicas",[]) if r.get("ready")]'
}
