#!/usr/bin/env python3
"""container-meet.py: the ranks of a container job meet over RANK/WORLD_SIZE/MASTER_ADDR/
MASTER_PORT (t1321, t1323): each says its rank, host, image marker and uid to rank 0."""
import os, socket, time
r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
marker = open("/etc/gpool-test-image").read().strip()
me = "%d %s %s uid=%d" % (r, socket.gethostname(), marker.replace(" ", "_"), os.getuid())
if r == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    s.listen(8)
    got = []
    for _ in range(w - 1):
        c, _ = s.accept()
        got.append(c.recv(4096).decode())
        c.sendall(b"ack")
        c.close()
    for g in sorted(got):
        print("rank0 got", g, flush=True)
    print("rank0 is", me, flush=True)
else:
    for _ in range(300):
        try:
            c = socket.create_connection((addr, port), timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    c.sendall(me.encode())
    print("rank", r, "answer", c.recv(16).decode(), flush=True)
