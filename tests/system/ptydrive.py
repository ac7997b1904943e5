"""ptydrive.py: play a user at a terminal, for the system tests of gsub --pty (t1300, t1301).

Term(argv) runs argv on a new pseudo-terminal (python3's pty module): expect() reads until a
pattern shows, send() types, winsize() resizes the window, close() hangs the terminal up,
wait() gives the exit status as a shell would (128+N for signal N). check() prints the
"check NAME ok|bad" lines the tests grep for.
"""
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time


def check(name, okay):
    print("check %s %s" % (name, "ok" if okay else "bad"), flush=True)


class Term:
    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp(argv[0], argv)
        self.buf = b""

    def winsize(self, rows, cols):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, data):
        os.write(self.fd, data)

    def expect(self, pat, timeout=20):
        """The match of pat in what the terminal showed (consumed up to its end), or None
        (said on stderr) when it did not show within timeout seconds."""
        end = time.time() + timeout
        while time.time() < end:
            m = re.search(pat, self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    break
                if not d:
                    break
                self.buf += d
        sys.stderr.write("# no %r in %r\n" % (pat, self.buf[-400:]))
        return None

    def close(self):
        os.close(self.fd)

    def wait(self):
        _, st = os.waitpid(self.pid, 0)
        return os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
