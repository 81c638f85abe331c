"""scripts/check-docs, the runner of the documentation's examples: its page grammar (sessions, `...`, `<- stderr`,
[N], the docs-run directives), its matching, and a run end to end on scratch pages with a stand-in lstmlm."""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

import pyutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "scripts", "check-docs")
PYTHON = sys.executable


def load():
    return pyutil.load_script("check_docs", SCRIPT)


cd = load()

PAGE = """# A page

Prose with `$ not a command` in it.

```sh
scripts/test   # a block that is not a session: left alone
```

```
$ echo one
one
$ printf 'a\\nb\\nc\\n' \\
    | cat
a
...
$ echo err >&2; exit 3
err      <- stderr
[3]
```

<!-- docs-run: skip-output the figures depend on the machine -->
```
$ date
Thu Jan  1 00:00:00 UTC 1970
```

<!-- docs-run: skip needs a cluster -->
   ```
   $ dask scheduler
   ```
"""


class Grammar(unittest.TestCase):
    def parse(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(text)
        try:
            return cd.parse_page(f.name, "page.md")
        finally:
            os.unlink(f.name)

    def test_sessions_and_directives(self):
        ex = self.parse(PAGE)
        self.assertEqual([e.line for e in ex], [10, 12, 16, 23, 29])
        self.assertEqual(ex[0].command, "echo one")
        self.assertEqual(ex[0].stdout, ["one"])
        self.assertEqual(ex[1].command, "printf 'a\\nb\\nc\\n' \\\n    | cat")
        self.assertEqual(ex[1].stdout, ["a", "..."])
        self.assertEqual((ex[2].stdout, ex[2].stderr, ex[2].status), ([], ["err"], 3))
        self.assertEqual((ex[3].mode, ex[3].reason), ("skip-output", "the figures depend on the machine"))
        self.assertEqual((ex[4].mode, ex[4].command), ("skip", "dask scheduler"))

    def test_malformed_directives(self):
        for text in ("<!-- docs-run: skip -->\n```\n$ ls\n```\n",                 # no reason
                     "<!-- docs-run: skpi x -->\n```\n$ ls\n```\n",               # unknown word
                     "<!-- docs-run: skip x -->\nprose\n```\n$ ls\n```\n",       # not before its block
                     "<!-- docs-run: skip x -->\n```\nnot a session\n```\n",     # a block that is no session
                     "<!-- docs-run: skip x -->\n"):                              # no block at all
            with self.assertRaises(cd.PageError, msg=text):
                self.parse(text)

    def test_output_outside_a_session_is_malformed(self):
        # Output is checked only in a session: a block that shows it in another form is refused, so no
        # example that shows output escapes the check.
        for text in ("```\n{\"type\": \"fidelity\", \"tokens\": 16}\n```\n",         # no language
                     "```\nlstmlm generate -m DIR [-p TEXT]\n```\n",                     # a synopsis, no language
                     "```json\n{\"type\": \"sample\", \"text\": \"x\"}\n```\n",    # a record
                     "```text\nlstmlm: note: config.json input_length 8\n```\n",        # a message
                     "```text\nLSTMLM_ERR_MODEL  lstmlm_model_load: x\n```\n"):          # a C API status
            with self.assertRaises(cd.PageError, msg=text):
                self.parse(text)
        for text in ("```text\nlstmlm generate -m DIR [-p TEXT]\n```\n",
                     "```json\n{\"format\": \"lstmlm\"}\n```\n",
                     "```python\nimport lstmlm  # lstmlm: a comment\n```\n"):
            self.assertEqual(self.parse(text), [], text)

    def test_a_python_session_is_one_doctest_example(self):
        ex = self.parse("Text.\n\n```python\n>>> x = 1\n>>> x + 1  # shown\n2\n```\n")
        self.assertEqual(len(ex), 1)
        self.assertTrue(ex[0].doctest)
        self.assertEqual((ex[0].line, ex[0].stdout, ex[0].status), (4, [], 0))
        self.assertIn("PYTHONPATH=build/python python3 -c", ex[0].command)
        self.assertIn(">>> x + 1  # shown\n2\n__DOCTEST__", ex[0].command)

    def test_every_page_of_the_repository_is_well_formed(self):
        pages = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
        for rel in pages:
            cd.parse_page(os.path.join(ROOT, rel), rel)

    def test_matching(self):
        m = cd.lines_match
        self.assertTrue(m(["a", "...", "d"], ["a", "b", "c", "d"]))
        self.assertTrue(m(["a", "...", "d"], ["a", "d"]))
        self.assertFalse(m(["a", "...", "d"], ["a", "b"]))
        self.assertTrue(m(["took ... s (...)"], ["took 0.004 s (218 lines/s)"]))
        self.assertFalse(m(["took ... s"], ["took 0.004 ms"]))
        self.assertFalse(m(["a"], ["a", "b"]))
        self.assertTrue(m(["x"] * 3000, ["x"] * 3000))


class EndToEnd(unittest.TestCase):
    def run_pages(self, pages, *args, module=False):
        """Writes the pages into a scratch folder and runs the script on them with a stand-in lstmlm that
        echoes its arguments (module: and a stand-in compiled module, so that Python sessions run)."""
        with tempfile.TemporaryDirectory(prefix="check-docs-test-") as tmp:
            build = os.path.join(tmp, "build")
            os.mkdir(build)
            if module:
                os.makedirs(os.path.join(build, "python", "lstmlm"))
                open(os.path.join(build, "python", "lstmlm", "_lstmlm.stand-in.so"), "w").close()
            fake = os.path.join(build, "lstmlm")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho \"lstmlm $*\"\n")
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
            paths = []
            for i, text in enumerate(pages):
                p = os.path.join(tmp, "page%d.md" % i)
                with open(p, "w") as f:
                    f.write(text)
                paths.append(p)
            r = subprocess.run([PYTHON, SCRIPT, "--build", build, "--timeout", "10", *args, *paths],
                               capture_output=True, text=True)
            texts = []
            for p in paths:
                with open(p) as f:
                    texts.append(f.read())
            return r, texts

    def test_ok_fail_skip_and_summary(self):
        page = ("```\n$ lstmlm score -m m\nlstmlm score -m m\n$ printf 'x\\n' > f.txt\n$ cat f.txt\nx\n"
                "$ V=7\n$ echo $V\n7\n$ ls build/lstmlm\nbuild/lstmlm\n```\n\n"
                "```\n$ echo wrong\nright\n```\n\n"
                "<!-- docs-run: skip-output it changes -->\n```\n$ echo $RANDOM\n0\n```\n")
        r, _ = self.run_pages([page])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].endswith("page0.md:2 ok"), lines)
        self.assertIn("FAIL", r.stdout)
        self.assertIn("-right", r.stdout)
        self.assertIn("+wrong", r.stdout)
        self.assertIn("skip (output not compared: it changes)", r.stdout)
        self.assertIn("8 examples in 1 pages: 6 ok, 1 skipped, 1 failed", lines[-1])

    def test_python_sessions_run_as_doctests(self):
        page = "```python\n>>> import os\n>>> 6 * 7\n42\n>>> 'abc'.upper()\n'A...'\n```\n\n```\n>>> 1 + 1\n3\n```\n"
        r, texts = self.run_pages([page], "--update", module=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("page0.md:2 ok", r.stdout)
        self.assertIn("page0.md:10 FAIL: >>> (a Python session)", r.stdout)
        self.assertIn('File "', r.stdout)
        self.assertIn(", line 10, in ", r.stdout)  # the failing statement's line in the page
        self.assertIn("+Expected:", r.stdout)
        self.assertEqual(texts[0], page)  # --update leaves a Python session alone

    def test_home_is_a_scratch_folder(self):
        # An example that installs into ~/.local (the README's) must not write into the user's home.
        page = "```\n$ mkdir -p ~/.local/bin && cd ~ && pwd && ls -A\n.../home\n.local\n```\n"
        r, _ = self.run_pages([page])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn(os.path.expanduser("~"), r.stdout)

    def test_update_writes_the_actual_output(self):
        page = "```\n$ echo new\nold\n$ echo abridged; echo more\nabr...\n...\n```\n"
        r, texts = self.run_pages([page], "--update")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertEqual(texts[0], "```\n$ echo new\nnew\n$ echo abridged; echo more\nabr...\n...\n```\n")

    def test_malformed_page_is_status_2(self):
        r, _ = self.run_pages(["<!-- docs-run: skip -->\n```\n$ ls\n```\n"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("needs a reason", r.stderr)


if __name__ == "__main__":
    unittest.main()
