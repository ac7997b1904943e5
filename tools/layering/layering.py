#!/usr/bin/env python3
"""layering.py: fail when an include goes against the layers written in docs/architecture.md.

The table between the markers `<!-- layers -->` and `<!-- /layers -->` in docs/architecture.md
names each folder of the tree (a unit), the units it may include from, and which of its headers
are private. Every `#include "a/b.h"` in a .c, .h, .cu or .cc file is checked:

  * the header's unit must be the file's own, or one the file's unit may use;
  * a private header (the unit's `src/` folder, a name ending in `_int.h`, or one the table
    lists) is for its own unit alone;
  * a unit's tests (its test/ folder) may use what the unit may, and the unit itself;
  * a published header (`gpool/...`, installed) belongs to the unit that installs it.

Usage: layering.py SOURCE_DIR [--stamp FILE]. Exit 0 and no output when the tree keeps its
layers; otherwise one line per violation (file:line: what) and exit 1. The build runs it
(target `layering`, part of `all`) and so does ctest (style.layering).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = re.compile(r'\.(c|h|cu|cc|cpp)$')
SKIP_DIRS = {'.git', '.gl', 'shared'}


def parse_table(doc):
    """The layers table: {unit: (set of units it may use, list of private globs)}."""
    text = open(doc, encoding='utf-8').read()
    m = re.search(r'<!-- layers -->(.*?)<!-- /layers -->', text, re.S)
    if not m:
        sys.exit(f'{doc}: no <!-- layers --> table')
    units = {}
    published = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 4 or cells[0] in ('unit', '') or set(cells[0]) <= set('-: '):
            continue
        unit = cells[0].strip('`')
        uses = set()
        for u in re.findall(r'`([^`]+)`', cells[1]):
            uses.add(u)
        pub = re.findall(r'`(gpool/[^`]+)`', cells[2])
        for h in pub:
            published[h] = unit
        private = re.findall(r'`([^`]+)`', cells[3])
        units[unit] = (uses, private)
    return units, published


def unit_of(path, units):
    """The longest unit that path is under (a unit's test/ folder is the unit's own)."""
    best = None
    for u in units:
        if path == u or path.startswith(u + '/'):
            if best is None or len(u) > len(best):
                best = u
    return best


def is_private(inc, unit, private):
    rest = inc[len(unit) + 1:]
    if rest.startswith('src/') or inc.endswith('_int.h'):
        return True
    return any(re.fullmatch(p.replace('*', '[^/]*'), rest) for p in private)


def check(src_dir, units, published):
    bad = []
    for root, dirs, files in os.walk(src_dir):
        rel_root = os.path.relpath(root, src_dir)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith('build')
                         and not (d.endswith('-fixture') and root != src_dir))
        for f in sorted(files):
            if not SOURCES.search(f):
                continue
            rel = os.path.normpath(os.path.join(rel_root, f))
            mine = unit_of(rel, units)
            if mine is None:
                bad.append(f'{rel}: in no unit of the layers table (docs/architecture.md)')
                continue
            uses = units[mine][0]
            with open(os.path.join(src_dir, rel), encoding='utf-8', errors='replace') as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or '/' not in m.group(1):
                        continue
                    inc = m.group(1)
                    if inc.startswith('gpool/'):
                        theirs = published.get(inc)
                        if theirs is None:
                            bad.append(f'{rel}:{n}: {inc} is published by no unit')
                            continue
                    else:
                        theirs = unit_of(inc, units)
                        if theirs is None:
                            continue  # a generated header of the build tree, or a system one
                    if theirs == mine:
                        continue
                    if '*' not in uses and theirs not in uses:
                        bad.append(f'{rel}:{n}: {mine} may not include {inc} ({theirs} is not '
                                   f'among the units {mine} uses)')
                        continue
                    if not inc.startswith('gpool/') and is_private(inc, theirs, units[theirs][1]):
                        if '*' not in uses:
                            bad.append(f'{rel}:{n}: {inc} is private to {theirs}')
    return bad


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: layering.py SOURCE_DIR [--stamp FILE]')
    src = sys.argv[1]
    units, published = parse_table(os.path.join(src, 'docs', 'architecture.md'))
    bad = check(src, units, published)
    for b in bad:
        print(b)
    if bad:
        print(f'layering: {len(bad)} include(s) against the layers of docs/architecture.md')
        return 1
    if len(sys.argv) == 4 and sys.argv[2] == '--stamp':
        open(sys.argv[3], 'w').close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
