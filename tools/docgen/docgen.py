#!/usr/bin/env python3
"""docgen.py: keep the docs in step with the code.

  docgen.py [--check] SRCDIR BINDIR

Generated: docs/configuration.md's table of keys, between its BEGIN/END generated markers,
is `gpool-conf-example --markdown` (common/config_keys.c). Without --check the page is
rewritten; with it, a page that differs fails.

Checked (never generated: the pages say more than --help does): every option a command's
--help lists (its own option table, common/opt.c) is in the first column of exactly one row
of a table of its page in docs/commands/, and every option such a row names is one the
command has. gpool's subcommands are each in its page's synopsis."""
import re
import subprocess
import sys

BEGIN = "<!-- BEGIN generated: gpool-conf-example --markdown; edit common/config_keys.c -->"
END = "<!-- END generated -->"

# command, its page; extra: options the page may name though --help does not list them
COMMANDS = [
    ("gsub", "docs/commands/gsub.md"),
    ("grun", "docs/commands/grun.md"),
    ("gstat", "docs/commands/gstat.md"),
    ("gcancel", "docs/commands/gcancel.md"),
    ("gnodes", "docs/commands/gnodes.md"),
    ("glogs", "docs/commands/glogs.md"),
    ("gpool", "docs/commands/gpool.md"),
    ("gacct", "docs/commands/gacct.md"),
    ("gcheck", "docs/commands/gcheck.md"),
    ("ggated", "docs/commands/ggated.md"),
    ("gserve", "docs/commands/gserve.md"),
    ("gtrain", "docs/commands/gtrain.md"),
]

OPT_IN_HELP = re.compile(r"^\s+(?:-[A-Za-z0-9], )?--([a-z0-9][a-z0-9-]*)")
OPT_IN_CELL = re.compile(r"--([a-z0-9][a-z0-9-]*)")


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def config_table(src, bindir, check):
    gen = run([f"{bindir}/gpool-conf-example", "--markdown"])
    if gen.returncode != 0:
        return [f"gpool-conf-example --markdown failed: {gen.stderr.strip()}"]
    path = f"{src}/docs/configuration.md"
    text = open(path, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        return [f"{path}: no generated markers"]
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{gen.stdout}{END}{tail}"
    if new == text:
        return []
    if check:
        return [f"{path}: the table of keys is not common/config_keys.c's "
                f"(run tools/docgen/docgen.py {src} {bindir})"]
    open(path, "w", encoding="utf-8").write(new)
    print(f"docgen: wrote {path}")
    return []


def help_options(bindir, cmd):
    out = run([f"{bindir}/{cmd}", "--help"])
    opts = set()
    for line in (out.stdout + out.stderr).splitlines():
        m = OPT_IN_HELP.match(line)
        if m:
            opts.add(m.group(1))
    return opts


def page_rows(path):
    """first cells of the page's table rows that name options: {option: [line numbers]}"""
    rows = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.startswith("|"):
            continue
        first = line.split("|")[1].strip()
        if not first.startswith("`-"):
            continue
        for o in OPT_IN_CELL.findall(first):
            rows.setdefault(o, []).append(n)
    return rows


def options(src, bindir):
    errs = []
    for cmd, page in COMMANDS:
        have = help_options(bindir, cmd)
        if not have:
            errs.append(f"{cmd} --help lists no options (not built?)")
            continue
        rows = page_rows(f"{src}/{page}")
        for o in sorted(have - set(rows)):
            errs.append(f"{page}: --{o} of {cmd} is in no option table")
        for o in sorted(set(rows) - have):
            errs.append(f"{page}: --{o} (line {rows[o][0]}) is no option of {cmd}")
        for o, lines in sorted(rows.items()):
            if len(lines) > 1:
                errs.append(f"{page}: --{o} is listed {len(lines)} times (lines "
                            f"{', '.join(map(str, lines))})")
    return errs


def subcommands(src, bindir):
    out = run([f"{bindir}/gpool", "--help"])
    block = re.search(r"^subcommands:\n(.*?)\n\n", out.stdout, re.S | re.M)
    subs = re.findall(r"^  ([a-z-]+)", block.group(1), re.M) if block else []
    if not subs:
        return ["gpool --help names no subcommands"]
    page = open(f"{src}/docs/commands/gpool.md", encoding="utf-8").read()
    syn = re.search(r"^## SYNOPSIS\n(.*?)\n## ", page, re.S | re.M | re.I)
    if not syn:
        return ["docs/commands/gpool.md has no SYNOPSIS"]
    return [f"docs/commands/gpool.md: subcommand '{s}' is not in the synopsis"
            for s in subs if not re.search(rf"^gpool {s}\b", syn.group(1), re.M)]


def main():
    args = sys.argv[1:]
    check = bool(args) and args[0] == "--check"
    if check:
        args = args[1:]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src, bindir = args
    errs = config_table(src, bindir, check) + options(src, bindir) + subcommands(src, bindir)
    for e in errs:
        print(f"docgen: {e}", file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
