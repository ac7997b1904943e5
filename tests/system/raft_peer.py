#!/usr/bin/env python3
"""raft_peer.py HOST PORT CLAIMED_ID MODE: connect to a standby group's Raft port as libraft's
TCP transport does (its handshake: protocol 1, the id claimed, the address), then:
  junk    a frame that is no credential, then bytes as Raft messages would come
  cred    a MUNGE credential of whoever runs this, bound to "gpool-raft CLAIMED_ID", then bytes
  silent  nothing
Prints "closed" when the scheduler closed the connection, else what happened
(tests/system/t0372-attack-raft.sh)."""
import socket, struct, sys, subprocess, time
host, port, claim, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
addr = ("%s:%d" % (host, port)).encode() + b"\0"
addr += b"\0" * ((8 - len(addr) % 8) % 8)
s = socket.create_connection((host, port), timeout=10)
s.sendall(struct.pack("<QQQ", 1, claim, len(addr)) + addr)
if mode == "junk":
    s.sendall(struct.pack(">I", 16) + b"x" * 16 + b"\1" * 64)
elif mode == "cred":
    cred = subprocess.run(["munge", "-n", "-s", "gpool-raft %d" % claim], capture_output=True).stdout.strip()
    s.sendall(struct.pack(">I", len(cred)) + cred + b"\1" * 64)
elif mode == "silent":
    pass
try:
    s.settimeout(8)
    d = s.recv(100)
    print("closed" if d == b"" else "got %d bytes" % len(d))
except ConnectionResetError:
    print("closed")
except Exception as e:
    print("error", e)
