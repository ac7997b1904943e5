#!/usr/bin/env python3
"""pty-prompt.py CMD...: time from starting CMD on a real terminal to its shell's prompt.

CMD runs on a pseudo-terminal of its own (as a person's terminal would hold it) and is expected
to start `bash --norc --noprofile -i` with PS1 set to the marker below somewhere (gsub --pty,
srun --pty, or locally). Prints the seconds until the marker is read from the terminal, then
types `exit` and waits for CMD to end; exit status 1 if the marker did not come in 30 s."""
import os
import pty
import select
import sys
import time

MARK = b"gp-prompt-ready$ "


def main():
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    seen, t_prompt = b"", None
    deadline = t0 + 30
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if MARK in seen:
            t_prompt = time.monotonic() - t0
            break
    if t_prompt is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stderr.write("pty-prompt: no prompt in 30 s; the terminal showed %r\n" % seen[-300:])
        return 1
    os.write(fd, b"exit\n")
    end = time.monotonic() + 10
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                if not os.read(fd, 4096):
                    break
            except OSError:
                break
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        os.kill(pid, 9)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    print("%.4f" % t_prompt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
