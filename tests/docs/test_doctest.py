#!/usr/bin/python3
"""test_doctest.py: the docs harness itself (doctest.py): what it reads as an example and its
mark, how commands and shown output are split, and that a changed message fails the compare
while another job id or host does not."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doctest as dt  # noqa: E402  (the harness beside this file, not the stdlib module)

PAGE = """# a page
<!-- doctest: run -->
```
$ gsub --parsable -- hostname
43
$ gcancel 7 \\
    8
gcancel: job 7: not found
```
<!-- doctest: skip needs a card -->
```sh
gcheck --card 0
```
```
gstat -l JOB
```
```ini
scheduler = tcp://x:7820
```
"""


class Harness(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(f"{self.dir}/docs")
        with open(f"{self.dir}/README.md", "w") as f:
            f.write("# r\n")
        with open(f"{self.dir}/docs/p.md", "w") as f:
            f.write(PAGE)

    def test_blocks_and_marks(self):
        b = dt.blocks(self.dir, "docs/p.md")
        self.assertEqual([(x[3], x[4]) for x in b],
                         [("run", ""), ("skip", "needs a card"), (None, "")])
        self.assertEqual(dt.cmd_check(self.dir, False), 1)  # the unmarked gstat block

    def test_commands_and_output(self):
        body = dt.blocks(self.dir, "docs/p.md")[0][2]
        c = dt.commands(body)
        self.assertEqual(c[0], ("gsub --parsable -- hostname", ["43"]))
        self.assertEqual(c[1][0], "gcancel 7 \\\n    8")
        self.assertEqual(c[1][1], ["gcancel: job 7: not found"])

    def test_compare(self):
        shown = ["Submitted job 61", "...", "pc1"]
        self.assertIsNone(dt.compare(shown, ["Submitted job 3", "noise", "h2", ""]))
        self.assertEqual(dt.compare(["gsub: job 61 submitted"], ["Submitted job 3"]),
                         "gsub: job 61 submitted")
        self.assertEqual(dt.compare(["a", "b"], ["b", "a"]), "b")  # in order


if __name__ == "__main__":
    unittest.main()
