#!/usr/bin/python3
"""llm_attack.py ADDR PORT KIND: talk to a gllm rank's data (stage) port as an intruder would
(t1420), and print what came back: "answered N bytes, closed|open". KIND:
  cred   a real MUNGE credential of the caller's uid (`munge -n`: run as another user, it is
         that user's), framed as a length and the text, then a stage frame's header
  nocred no credential at all: a 1 GiB length, then a stage frame's header and junk
A rank must close the connection without a byte of answer (docs/comm.md): "answered 0 bytes,
closed" is the only good outcome."""
import socket
import struct
import subprocess
import sys


def main():
    addr, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if kind == "cred":
        cred = subprocess.run(["munge", "-n"], capture_output=True, check=True).stdout.strip()
        payload = struct.pack("<Q", 0x3148545541434721) + struct.pack("<I", len(cred)) + cred
    else:
        payload = struct.pack("<Q", 0x3148545541434721) + struct.pack("<I", 1 << 30)
    payload += b"GLSTAGE1" + b"\xff" * 32 + b"junk" * 64
    got, closed = 0, False
    try:
        s = socket.create_connection((addr, port), timeout=3)
    except OSError as e:
        print("refused: %s" % e.strerror)
        return
    s.settimeout(8)
    try:
        s.sendall(payload)
        while True:
            b = s.recv(4096)
            if not b:
                closed = True
                break
            got += len(b)
    except socket.timeout:
        pass
    except OSError:
        closed = True  # reset: closed as well
    print("answered %d bytes, %s" % (got, "closed" if closed else "open"))


if __name__ == "__main__":
    main()
