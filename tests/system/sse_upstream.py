#!/usr/bin/python3
"""sse_upstream.py PORT: a replica that streams server-sent events as a language model's API
does, slowly, and can break mid-stream (t0830-gateway-stream). Answers, chunked (HTTP/1.1):
  /sse?n=N&gap=S&silence=S&break=1  N events `data: {"n": i}` S seconds apart, then silence
                                    for `silence` seconds, then either `data: [DONE]` and the
                                    body's end, or (break=1) half an event and a cut
                                    connection (no last chunk)
  /text-break                       a chunked text/plain body cut the same way
  /health                           200
Stdlib only (python3's http.server)."""
import http.server
import socket
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def cut(self):
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def head(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.flush()

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        if u.path == "/text-break":
            self.head("text/plain")
            self.chunk(b"part one\n")
            time.sleep(0.2)
            self.chunk(b"part tw")
            self.cut()
            return
        if u.path != "/sse":
            self.send_error(404)
            return
        n, gap = int(q.get("n", "3")), float(q.get("gap", "0.2"))
        self.head("text/event-stream")
        for i in range(n):
            self.chunk(b'data: {"n": %d}\n\n' % i)
            time.sleep(gap)
        time.sleep(float(q.get("silence", "0")))
        if q.get("break") == "1":
            self.chunk(b'data: {"n": 9')
            time.sleep(0.1)
            self.cut()
            return
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET
    daemon_threads = True


Server(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
