#!/usr/bin/env python3
"""ws_client.py HOST:PORT PATH MODE [ARGS]: a WebSocket client from the standard library only
(RFC 6455: masked frames, the handshake's Sec-WebSocket-Accept checked), for the gateway's
tests and benchmark. Headers to send: WS_HEADERS="Name: value|Name: value". WS_CAFILE=PEM: over TLS (wss), the
server's certificate checked against that CA.
  handshake            print the handshake's status line ("HTTP/1.1 101 ..."), then close
  echo SIZE...         each SIZE bytes sent as one binary message and read back: "echo SIZE ok"
  whoami               print the server's host name
  stream N             ask for N bytes from the server, read them: "stream N ok SECONDS"
  rtt COUNT SIZE       COUNT round trips of SIZE bytes, one at a time: "rtt p50_us p99_us"
  tput SECONDS SIZE    messages of SIZE bytes sent while reading the echoes, 8 in flight:
                       "tput MB_per_s" (bytes one way)
  hold SECONDS         send nothing for SECONDS, then an echo: "hold ok" or "hold closed"
Every mode but handshake ends with the close handshake and prints "closed clean" when the
server's close came and the connection ended after it."""
import base64, hashlib, os, socket, struct, sys, time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
ZERO = b"\0\0\0\0"


class WS:
    def __init__(self, hostport, path):
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=60)
        if os.environ.get("WS_CAFILE"):
            # wss: TLS to the gateway, its certificate checked against this CA
            import ssl
            ctx = ssl.create_default_context(cafile=os.environ["WS_CAFILE"])
            self.s = ctx.wrap_socket(self.s, server_hostname=host)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # WS_ZERO_MASK=1 (the benchmark): frames masked with a key of zeros, as RFC 6455
        # allows, so that Python's XOR does not dominate what a proxy is measured by
        self.zero = os.environ.get("WS_ZERO_MASK") == "1"
        key = base64.b64encode(os.urandom(16))
        extra = "".join(h.strip() + "\r\n" for h in os.environ.get("WS_HEADERS", "").split("|") if h.strip())
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n" % (path, hostport, key.decode(), extra))
        self.s.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            c = self.s.recv(65536)
            if not c:
                break
            self.buf += c
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = lines[0]
        self.hdrs = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            self.hdrs[k.strip().lower()] = v.strip()
        self.ok = self.status.split()[1:2] == ["101"]
        if self.ok:
            want = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
            if self.hdrs.get("sec-websocket-accept") != want:
                raise SystemExit("bad Sec-WebSocket-Accept: %r" % self.hdrs)

    def recv_exact(self, n):
        while len(self.buf) < n:
            c = self.s.recv(max(n - len(self.buf), 1 << 20))
            if not c:
                raise EOFError
            self.buf += c
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def send(self, op, data):
        n = len(data)
        if n < 126:
            h = struct.pack("!BB", 0x80 | op, 0x80 | n)
        elif n < 65536:
            h = struct.pack("!BBH", 0x80 | op, 0x80 | 126, n)
        else:
            h = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, n)
        mask = ZERO if self.zero else os.urandom(4)
        if n and mask != ZERO:
            k = (mask * (n // 4 + 1))[:n]
            data = (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")
        self.s.sendall(h + mask + data)

    def recv(self):
        h = self.recv_exact(2)
        op, n = h[0] & 0x0F, h[1] & 0x7F
        if h[1] & 0x80:
            raise SystemExit("a server's frame must not be masked")
        if n == 126:
            n = struct.unpack("!H", self.recv_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.recv_exact(8))[0]
        return op, self.recv_exact(n)

    def close(self):
        self.send(8, struct.pack("!H", 1000))
        try:
            while True:
                op, _ = self.recv()
                if op == 8:
                    break
            self.s.settimeout(5)
            end = self.s.recv(1)
            print("closed clean" if end == b"" and not self.buf else "closed unclean")
        except (EOFError, OSError):
            print("closed unclean")


def main():
    hostport, path, mode = sys.argv[1:4]
    args = sys.argv[4:]
    ws = WS(hostport, path)
    if mode == "handshake" or not ws.ok:
        print(ws.status)
        return 0 if ws.ok or mode == "handshake" else 1
    if mode == "echo":
        for a in args:
            n = int(a)
            data = os.urandom(n)
            ws.send(2, data)
            op, got = ws.recv()
            print("echo %d %s" % (n, "ok" if got == data and op == 2 else "BAD"))
    elif mode == "whoami":
        ws.send(1, b"whoami")
        print(ws.recv()[1].decode())
    elif mode == "stream":
        n = int(args[0])
        t0 = time.monotonic()
        ws.send(1, b"stream %d" % n)
        got = 0
        while True:
            op, d = ws.recv()
            if op == 1:
                break
            got += len(d)
        print("stream %d %s %.3f" % (n, "ok" if got == n and d == b"end" else "BAD %d" % got, time.monotonic() - t0))
    elif mode == "rtt":
        count, size = int(args[0]), int(args[1])
        data = os.urandom(size)
        lat = []
        for _ in range(count):
            t0 = time.perf_counter()
            ws.send(2, data)
            ws.recv()
            lat.append((time.perf_counter() - t0) * 1e6)
        lat.sort()
        print("rtt %.0f %.0f" % (lat[len(lat) // 2], lat[int(len(lat) * 0.99)]))
    elif mode == "tput":
        secs, size = float(args[0]), int(args[1])
        data = os.urandom(size)
        sent = recvd = 0
        t0 = time.monotonic()
        inflight = 0
        while True:
            while inflight < 8 and time.monotonic() - t0 < secs:
                ws.send(2, data)
                inflight += 1
                sent += size
            if inflight == 0:
                break
            ws.recv()
            inflight -= 1
            recvd += size
        dt = time.monotonic() - t0
        print("tput %.1f" % (recvd / dt / 1e6))
    elif mode == "hold":
        time.sleep(float(args[0]))
        try:
            ws.send(1, b"whoami")
            ws.recv()
            print("hold ok")
        except (EOFError, OSError):
            print("hold closed")
            return 0
    ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
