"""lstmlm::normalize (src/model/normalize.cpp) against Python, line by line: ccnet against cc_net's own code
(ccnet_reference.py), lower against str.lower(), nfkc against unicodedata.normalize("NFKC"), over the text of
../shared/data (French and English; skipped when absent) and over every code point. The C++ side is the
GoogleTest case NormalizeFile.*, which normalizes the file named by LSTMLM_NORMALIZE_IN into
LSTMLM_NORMALIZE_OUT."""
import os
import re
import subprocess
import unicodedata
import unittest

import ccnet_reference
import pyutil

REFERENCES = {
    "ccnet": ccnet_reference.normalize,
    "lower": str.lower,
    "nfkc": lambda line: unicodedata.normalize("NFKC", line),
}
TEXTS = [("corpora-french", "notre-dame-de-paris.txt"), ("corpora-french", "wiki-fr-extract.txt"),
         ("corpora-wikitext-2", "valid.txt"), ("corpora-wikitext-2", "test.txt")]
ROOT = pyutil.temp_root("lstmlm-normalize-")


def tests_binary():
    """build/tests/lstmlm_tests, beside the CLI ctest names; skips the calling test without it."""
    path = os.path.join(os.path.dirname(pyutil.require_cli()), "tests", "lstmlm_tests")
    if not os.path.exists(path):
        raise unittest.SkipTest(f"{path} not built")
    return path


def cpp_unicode_version():
    """The Unicode version the C++ side follows: that of Python's str.lower() tables it was generated from."""
    with open(os.path.join(pyutil.SOURCE_DIR, "src", "model", "lowercase_table.cpp"), encoding="utf-8") as f:
        return re.search(r"\(Unicode ([0-9.]+)\)", f.readline()).group(1)


def split_lines(text):
    """Lines as NormalizeFile reads them: split on '\\n' alone, a final '\\n' ending the last line."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


class NormalizeAgainstPython(unittest.TestCase):
    def compare(self, lines, mode, name):
        src = os.path.join(ROOT, f"{name}.{mode}.in")
        out = os.path.join(ROOT, f"{name}.{mode}.out")
        with open(src, "w", encoding="utf-8", newline="") as f:
            f.write("".join(line + "\n" for line in lines))
        env = dict(os.environ, LSTMLM_NORMALIZE_IN=src, LSTMLM_NORMALIZE_OUT=out, LSTMLM_NORMALIZE_MODE=mode)
        r = subprocess.run([tests_binary(), "--gtest_filter=NormalizeFile.*"], env=env, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr)
        self.assertTrue(os.path.exists(out), "NormalizeFile wrote nothing:\n" + r.stdout[-2000:])
        with open(out, encoding="utf-8", newline="") as f:
            got = split_lines(f.read())
        self.assertEqual(len(got), len(lines), f"{name} {mode}: line count")
        reference = REFERENCES[mode]
        bad = []
        for n, (line, g) in enumerate(zip(lines, got), 1):
            want = reference(line)
            if want != g:
                bad.append((n, line, want, g))
        report = "".join(f"\n  line {n}: {line!r}\n    python {want!r}\n    lstmlm {g!r}" for n, line, want, g in bad[:10])
        self.assertEqual(len(bad), 0, f"{name} {mode}: {len(bad)} of {len(lines)} lines differ{report}")

    def test_real_text(self):
        for folder, file in TEXTS:
            with open(pyutil.data(folder, file), encoding="utf-8", newline="") as f:
                lines = split_lines(f.read())
            for mode in REFERENCES:
                with self.subTest(file=file, mode=mode):
                    self.compare(lines, mode, f"{folder}-{file}")

    def test_every_code_point(self):
        want = cpp_unicode_version()
        if unicodedata.unidata_version != want:
            self.skipTest(f"this Python's unicodedata is Unicode {unicodedata.unidata_version}, lstmlm's {want}")
        # Each character at both ends (strip) and between them, lowercased and decomposed in context.
        lines = [chr(c) + "a" + chr(c) for c in range(0x110000) if c != 0x0A and not 0xD800 <= c < 0xE000]
        for mode in REFERENCES:
            with self.subTest(mode=mode):
                self.compare(lines, mode, "code-points")


if __name__ == "__main__":
    unittest.main()
