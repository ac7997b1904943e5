#!/bin/sh
# replica-nginx.sh [id]: a service replica that is nginx answering from memory on $GPOOL_PORT
# (one worker, as the job's user, everything in the scratch directory). Without an argument it
# answers "ok" on 127.0.0.1: the fastest replica gpool's bench can put behind a gateway, so
# what is measured is the gateway, not the replica. With `id` it answers its own name,
# "$GPOOL_NODENAME:$GPOOL_PORT", on every address of its host and 200 on /health:
# bench/gateway/hostcut.sh tells from each answer which replica served it.
set -e
d=$PWD/nginx-$GPOOL_PORT
if [ "${1:-}" = id ]; then
	listen=$GPOOL_PORT
	locs="location / { return 200 \"$GPOOL_NODENAME:$GPOOL_PORT\\n\"; }
    location = /health { return 200 \"ok\\n\"; }"
else
	listen=127.0.0.1:$GPOOL_PORT
	locs='location / { return 200 "ok\n"; }'
fi
mkdir -p "$d"
cat >"$d/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $d/body; proxy_temp_path $d/proxy; fastcgi_temp_path $d/fcgi;
  uwsgi_temp_path $d/uwsgi; scgi_temp_path $d/scgi;
  keepalive_requests 1000000;
  server {
    listen $listen;
    $locs
  }
}
CONF
exec /usr/sbin/nginx -e stderr -c "$d/nginx.conf" -p "$d"
