#!/usr/bin/env python3
"""cutload.py: the steady load of bench/gateway/hostcut.sh.

For each NAME=URL target, CLIENTS threads, each on a keep-alive connection of its own, send a
GET every PACE ms (the next as soon as the previous is answered when that took longer), until
STOPFILE exists. The threads of a target start PACE/CLIENTS ms apart, so that its requests
are spread evenly in time. One line per request to stdout:
    TARGET THREAD SEND FINISH STATUS BODY
SEND and FINISH in seconds since the epoch; STATUS 0 when no answer came (BODY is then the
error's name). A connection that failed is made again for the next request.

    cutload.py [--clients N] [--pace MS] [--timeout S] STOPFILE NAME=URL...
"""
import argparse
import http.client
import os
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()


def emit(line):
    with LOCK:
        sys.stdout.write(line)
        sys.stdout.flush()  # hostcut.sh reads the log while the load runs


def client(name, idx, url, pace, timeout, stopfile, offset):
    u = urllib.parse.urlsplit(url)
    path = u.path or "/"
    conn = None
    time.sleep(offset)
    nxt = time.time()
    while not os.path.exists(stopfile):
        now = time.time()
        if nxt > now:
            time.sleep(nxt - now)
        if conn is None:
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        t0 = time.time()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read().decode(errors="replace").strip() or "-"
            status = r.status
            if r.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            status, body = 0, type(e).__name__
            conn.close()
            conn = None
        t1 = time.time()
        emit("%s %d %.6f %.6f %d %s\n" % (name, idx, t0, t1, status, body.split()[0]))
        nxt = t0 + pace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--pace", type=float, default=10.0, help="ms between one client's sends")
    ap.add_argument("--timeout", type=float, default=10.0, help="s, per request")
    ap.add_argument("stopfile")
    ap.add_argument("targets", nargs="+")
    a = ap.parse_args()
    pace = a.pace / 1000.0
    threads = []
    for t in a.targets:
        name, url = t.split("=", 1)
        for i in range(a.clients):
            th = threading.Thread(target=client, daemon=True,
                                  args=(name, i, url, pace, a.timeout, a.stopfile,
                                        pace * i / a.clients))
            th.start()
            threads.append(th)
    for th in threads:
        th.join(a.timeout + 5)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
