#!/bin/sh
# replica-nginx.sh: a service replica that is nginx answering "ok" from memory on $GPOOL_PORT
# (one worker, as the job's user, everything in the scratch directory). The fastest replica
# gpool's bench can put behind a gateway: what is measured is the gateway, not the replica.
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
    listen 127.0.0.1:$GPOOL_PORT;
    location / { return 200 "ok\n"; }
  }
}
CONF
exec /usr/sbin/nginx -c "$d/nginx.conf" -p "$d"
