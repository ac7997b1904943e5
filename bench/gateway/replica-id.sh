#!/bin/sh
# replica-id.sh: a service replica that is nginx answering its own name, "$GPOOL_NODENAME:$GPOOL_PORT",
# from memory on every address of its host (one worker, as the job's user, everything in the
# scratch directory), and 200 on /health. bench/gateway/hostcut.sh tells from each answer
# which replica served it.
set -e
d=$PWD/nginx-$GPOOL_PORT
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
    listen $GPOOL_PORT;
    location / { return 200 "$GPOOL_NODENAME:$GPOOL_PORT\n"; }
    location = /health { return 200 "ok\n"; }
  }
}
CONF
exec /usr/sbin/nginx -e stderr -c "$d/nginx.conf" -p "$d"
