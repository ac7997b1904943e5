#!/usr/bin/env python3
"""funcsize-check.py SRC_DIR: no function of the tree's own code is over 120 lines, but those
tests/style/funcsize-exempt.txt names with a reason (CONTRIBUTING.md, "Code").

A function's lines are counted as clang-tidy's readability-function-size counts them: the line
of its closing brace less the line of its opening brace. The tree is clang-formatted with
Linux braces, so a function's body opens with a '{' alone at the start of a line and closes
with the next '}' alone there; its name is the last identifier before the first '(' of the
lines above the brace. Tests (tests/, every test/ folder) and benchmarks (bench/, files named
*bench*) are left out, as are build folders, test fixtures and fuzz corpora.

An exception that no longer applies (the function is gone or short enough) is named with a
note but does not fail the check: the line can go in the same change or the next one.
Exit 0 clean, 1 with each function over the limit.
"""
import os
import re
import sys

LIMIT = 120
src = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
exempt_file = os.path.join(src, "tests", "style", "funcsize-exempt.txt")


def sources():
    for d, dirs, files in os.walk(src):
        rel = os.path.relpath(d, src)
        top = rel == "."
        dirs[:] = sorted(x for x in dirs
                         if x not in (".git", "test", "corpus") and not x.endswith("-fixture")
                         and not (top and (x.startswith("build") or x in ("tests", "bench"))))
        for f in sorted(files):
            if f.endswith((".c", ".cu")) and "bench" not in f:
                yield os.path.normpath(os.path.join(rel, f))


NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(rel):
    """(name, the first line of its signature, lines) of each function defined in rel"""
    lines = open(os.path.join(src, rel), errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            sig = []
            j = i - 1
            while (j >= 0 and lines[j].strip() and not lines[j].startswith("#")
                   and not lines[j].rstrip().endswith((";", "}", "*/"))):
                sig.insert(0, lines[j])
                j -= 1
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            m = NAME.search(" ".join(sig))
            if m:
                yield m.group(1), j + 2, k - i
            i = k
        i += 1


exempt = {}
for line in open(exempt_file):
    if line.strip() and not line.startswith("#"):
        parts = line.split(None, 2)
        if len(parts) < 3:
            print(f"funcsize-check: {exempt_file}: '{line.strip()}' gives no reason")
            sys.exit(1)
        exempt[(parts[0], parts[1])] = parts[2].strip()

bad = 0
n = 0
used = set()
for rel in sources():
    for name, line, size in functions(rel):
        n += 1
        if size <= LIMIT:
            continue
        if (rel, name) in exempt:
            used.add((rel, name))
            continue
        print(f"funcsize-check: {rel}:{line}: {name} is {size} lines (at most {LIMIT}): "
              f"split it into named steps")
        bad = 1
for rel, name in sorted(set(exempt) - used):
    print(f"funcsize-check: note: {rel} {name} is no longer over {LIMIT} lines "
          f"(or gone): its line in tests/style/funcsize-exempt.txt can go")
if not bad:
    print(f"funcsize-check: {n} functions, none over {LIMIT} lines but the "
          f"{len(used)} exceptions")
sys.exit(bad)
