#!/usr/bin/python3
"""doctest.py: the shell examples of README.md and docs/, run as written (docs/testing.md
"Docs that are tested").

  doctest.py check SRCDIR          every shell example is marked; prints the counts
  doctest.py list SRCDIR           each example: page, line, mark, reason
  doctest.py run SRCDIR WORK USER  runs the runnable ones as USER, each in a directory of its
                                   own under WORK, and compares what they print with what the
                                   page shows (TAP on stdout)

A shell example is a fenced block whose language is sh, bash, shell or console, or one without
a language whose lines are commands: a `$ ` prompt or a gpool command at a line's start. The
line before its fence marks it, in an HTML comment the reader does not see:

  <!-- doctest: run -->            run as the test user; `$ ` lines are commands (a trailing
                                   `\\` continues one), the lines under one are what it prints
  <!-- doctest: run as=root -->    the same as root (an administrator's command)
  <!-- doctest: skip REASON -->    not runnable here, and why (a card, a LAN of PCs, minutes)

or, once on a page, `<!-- doctest: skip-page REASON -->` for every unmarked example of it (the
benchmark pages: their commands load the machine for minutes). What a page shows is compared
line by line, in order, against what the commands print: each shown line must be found after
the one before, once job ids, times, sizes and host names are read alike (digits are one, pc3
and h1 are one); a shown line `...` stands for anything. A block without prompts must exit 0.
"""
import glob
import os
import re
import subprocess
import sys

SHELL_LANGS = {"sh", "bash", "shell", "console"}
COMMANDS = (r"^\s*(\$ |gsub |gstat|grun |gcancel |glogs |gnodes|gpool[ -]|gacct|ggated |gserve |"
            r"gtrain |gcheck|gllm |gworkerd |gschedd |gcomm-bench|bench/|deploy/|tests/|tools/|"
            r"build[-\w]*/|make |cmake |ctest |flock |sudo |apt-get |apt |curl |export |cd |"
            r"mkdir |echo |python3 |podman |skopeo |debootstrap |umoci |systemctl |munge|ssh |"
            r"env |[A-Z_]+=\S* )")
MARK = re.compile(r"<!--\s*doctest:\s*(skip-page|run|skip)\b\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")


def pages(src):
    return ["README.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(f"{src}/docs/**/*.md", recursive=True))


def blocks(src, page):
    """(line, lang, body lines, mark, argument) of each shell example of a page"""
    lines = open(os.path.join(src, page), encoding="utf-8").read().split("\n")
    page_skip = None
    for ln in lines:
        m = MARK.match(ln.strip())
        if m and m.group(1) == "skip-page":
            page_skip = m.group(2) or "(no reason given)"
    out, i = [], 0
    while i < len(lines):
        f = FENCE.match(lines[i])
        if not f:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        lang, body = f.group(1), lines[i + 1:j]
        shell = lang in SHELL_LANGS or (not lang and any(re.match(COMMANDS, b) for b in body))
        if shell:
            m = MARK.match(lines[i - 1].strip()) if i > 0 else None
            if m and m.group(1) in ("run", "skip"):
                out.append((i + 1, lang, body, m.group(1), m.group(2)))
            elif page_skip:
                out.append((i + 1, lang, body, "skip", page_skip))
            else:
                out.append((i + 1, lang, body, None, ""))
        i = j + 1
    return out


def all_blocks(src):
    return [(p,) + b for p in pages(src) for b in blocks(src, p)]


def cmd_check(src, verbose):
    bl = all_blocks(src)
    unmarked = [b for b in bl if b[4] is None]
    bad_skip = [b for b in bl if b[4] == "skip" and not b[5]]
    run = sum(1 for b in bl if b[4] == "run")
    skip = sum(1 for b in bl if b[4] == "skip")
    for b in bl if verbose else unmarked + bad_skip:
        print(f"{b[0]}:{b[1]}: {b[4] or 'UNMARKED'} {b[5]}")
    print(f"{len(bl)} shell examples: {run} run, {skip} marked not runnable, "
          f"{len(unmarked)} unmarked, {len(bad_skip)} skipped without a reason")
    return 1 if unmarked or bad_skip else 0


def commands(body):
    """[(command, [shown output lines])] of a block; one entry for a block without prompts"""
    if not any(b.startswith("$ ") for b in body):
        return [("\n".join(body), None)]
    out, cur = [], None
    for b in body:
        if b.startswith("$ "):
            cur = [b[2:], []]
            out.append(cur)
        elif cur is not None and cur[0].endswith("\\"):
            cur[0] += "\n" + b
        elif cur is not None:
            cur[1].append(b)
    return [(c, shown) for c, shown in out]


def norm(s):
    s = re.sub(r"\b(pc|h)\d+\b", "HOST", s)
    s = re.sub(r"\d+(\.\d+)?", "N", s)
    return re.sub(r"\s+", " ", s).strip()


def compare(shown, got):
    """None when every shown line is found in order, else the first that is not"""
    got_n = [norm(g) for g in got]
    k = 0
    for s in shown:
        if s.strip() in ("...", ""):
            continue
        want = norm(s)
        while k < len(got_n) and got_n[k] != want:
            k += 1
        if k == len(got_n):
            return s
        k += 1
    return None


def cmd_run(src, work, user):
    n, failed = 0, 0
    bl = [b for b in all_blocks(src) if b[4] == "run"]
    print(f"1..{len(bl)}")
    for page, line, _lang, body, _mark, arg in bl:
        n += 1
        as_root = "as=root" in arg
        d = os.path.join(work, f"b{n}")
        os.makedirs(d, exist_ok=True)
        cmds = commands(body)
        script = ["set -o pipefail"] if cmds[0][1] is None else []
        for k, (c, _) in enumerate(cmds):
            script.append(f"echo '@@doctest {k}@@'")
            script.append(c if cmds[0][1] is None else f"{{\n{c}\n}} 2>&1")
        path = os.path.join(d, "doctest.sh")
        with open(path, "w") as f:
            f.write("\n".join(script) + "\n")
        if not as_root:
            subprocess.run(["chown", "-R", f"{user}:", d], check=False)
        argv = ["bash", path] if as_root else ["runuser", "-u", user, "--", "env",
                                                f"PATH={os.environ['PATH']}", "bash", path]
        env = dict(os.environ, HOME=d if as_root else os.environ.get("DOCTEST_HOME", d))
        try:
            p = subprocess.run(argv, cwd=d, capture_output=True, text=True, timeout=300,
                               env=env)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else "", 124
        parts = re.split(r"^@@doctest (\d+)@@\n", out, flags=re.M)
        got = {int(parts[i]): parts[i + 1].split("\n") for i in range(1, len(parts) - 1, 2)}
        why = None
        if cmds[0][1] is None:
            if rc != 0:
                why = f"exit status {rc}"
        else:
            for k, (c, shown) in enumerate(cmds):
                miss = compare(shown, got.get(k, []))
                if miss is not None:
                    why = f"'{c.splitlines()[0]}' did not print '{miss}'"
                    break
        desc = f"{page}:{line}"
        if why:
            failed += 1
            print(f"not ok {n} - {desc}: {why}")
            for ln in out.splitlines()[-30:]:
                print(f"#   {ln}")
        else:
            print(f"ok {n} - {desc}")
    return 1 if failed else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in ("check", "list"):
        sys.exit(cmd_check(sys.argv[2], sys.argv[1] == "list"))
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        sys.exit(cmd_run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
