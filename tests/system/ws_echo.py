#!/usr/bin/env python3
"""ws_echo.py PORT: a WebSocket echo server (RFC 6455) from the standard library only, for the
gateway's tests and benchmark. GET / answers "NODE PORT". On a WebSocket: a text or binary
message comes back unchanged (unmasked, one frame); "whoami" is answered with this host's
name; "stream N" is answered with N bytes of binary (in 1 MiB frames), sent without waiting;
a ping gets its pong; a close gets its close, then the server closes the connection."""
import base64, hashlib, os, socket, struct, sys, threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(min(n - len(b), 1 << 20))
        if not c:
            raise EOFError
        b += c
    return bytes(b)


def read_frame(s):
    h = recv_exact(s, 2)
    fin, op = h[0] & 0x80, h[0] & 0x0F
    masked, n = h[1] & 0x80, h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(s, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", recv_exact(s, 8))[0]
    if not masked:
        raise ValueError("a client's frame must be masked")
    mask = recv_exact(s, 4)
    data = recv_exact(s, n)
    if n and mask != b"\0\0\0\0":
        k = (mask * (n // 4 + 1))[:n]
        data = (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")
    return fin, op, data


def frame(op, data):
    n = len(data)
    if n < 126:
        h = struct.pack("!BB", 0x80 | op, n)
    elif n < 65536:
        h = struct.pack("!BBH", 0x80 | op, 126, n)
    else:
        h = struct.pack("!BBQ", 0x80 | op, 127, n)
    return h + data


def serve(c):
    f = c.makefile("rb")
    line = f.readline()
    hdrs = {}
    while True:
        l = f.readline()
        if l in (b"\r\n", b"\n", b""):
            break
        k, _, v = l.decode("latin-1").partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("upgrade", "").lower() != "websocket":
        body = ("%s %s\n" % (socket.gethostname(), sys.argv[1])).encode()
        if line.split()[1:2] == [b"/headers"]:
            body = repr(sorted(hdrs.items())).encode() + b"\n"
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        c.close()
        return
    if line.split()[1:2] == [b"/refuse"]:
        c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 8\r\n\r\nrefused\n")
        c.close()
        return
    acc = base64.b64encode(hashlib.sha1(hdrs["sec-websocket-key"].encode() + GUID).digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: " + acc + b"\r\n\r\n")
    s = c
    # what the makefile buffered is part of the stream: read from it from now on
    s = _Buffered(f, c)
    msg, mop = b"", 0
    while True:
        try:
            fin, op, data = read_frame(s)
        except EOFError:
            break
        if op == 8:
            c.sendall(frame(8, data[:2]))
            break
        if op == 9:
            c.sendall(frame(10, data))
            continue
        if op == 10:
            continue
        if op in (1, 2):
            msg, mop = data, op
        else:
            msg += data
        if not fin:
            continue
        if mop == 1 and msg == b"whoami":
            c.sendall(frame(1, socket.gethostname().encode()))
        elif mop == 1 and msg.startswith(b"stream "):
            n = int(msg.split()[1])
            chunk = os.urandom(1 << 20)
            while n > 0:
                k = min(n, len(chunk))
                c.sendall(frame(2, chunk[:k]))
                n -= k
            c.sendall(frame(1, b"end"))
        else:
            c.sendall(frame(mop, msg))
    try:
        c.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    c.close()


class _Buffered:
    def __init__(self, f, c):
        self.f, self.c = f, c

    def recv(self, n):
        return self.f.read1(n)


def main():
    ls = socket.socket(socket.AF_INET6 if ":" in os.environ.get("WS_BIND", "") else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((os.environ.get("WS_BIND", "0.0.0.0"), int(sys.argv[1])))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
