"""--normalize where score's plain-text path is not the one taken: the JSONL filter (CLI and the Python
module's score_jsonl) and fidelity. Fullwidth letters (U+FF41..) are out of the word model's vocabulary;
NFKC folds them to ASCII, so each normalized input must give exactly what the ASCII text gives, and the
raw input something else (the normalization did run)."""
import json
import os
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
ASCII = ["the old king said", "once upon a time there was a princess"]


def fullwidth(s):
    return "".join(chr(ord(c) - ord("a") + 0xFF41) if "a" <= c <= "z" else c for c in s)


def added_fields(line):
    """The fields the filter adds to a document (its own fields, the text among them, left out)."""
    rec = json.loads(line)
    return {k: rec[k] for k in ("logprob", "tokens", "oovs", "perplexity") if k in rec}


class NormalizePaths(unittest.TestCase):
    def setUp(self):
        pyutil.require_cli()
        self.tmp = pyutil.temp_root("lstmlm_normalize_paths_")
        self.wide = [fullwidth(s) for s in ASCII]

    def write(self, name, lines):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def jsonl(self, name, texts):
        return self.write(name, [json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in enumerate(texts)])

    def run_ok(self, *args):
        r = pyutil.run_lstmlm(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_the_jsonl_filter_normalizes_the_text_field(self):
        wide, ascii_ = self.jsonl("wide.jsonl", self.wide), self.jsonl("ascii.jsonl", ASCII)
        score = ("score", "-m", MODEL, "--input-format", "jsonl")
        got = [added_fields(x) for x in self.run_ok(*score, "--normalize", "nfkc", wide).splitlines()]
        want = [added_fields(x) for x in self.run_ok(*score, ascii_).splitlines()]
        self.assertEqual(got, want)
        raw = [added_fields(x) for x in self.run_ok(*score, wide).splitlines()]
        self.assertNotEqual(raw, want)
        self.assertGreater(raw[0]["oovs"], 0)
        # The documents keep their own text: normalization is for the model only.
        first = json.loads(self.run_ok(*score, "--normalize", "nfkc", wide).splitlines()[0])
        self.assertEqual(first["text"], self.wide[0])

    def test_fidelity_normalizes_its_lines(self):
        wide, ascii_ = self.write("wide.txt", self.wide), self.write("ascii.txt", ASCII)
        fid = ("fidelity", "-m", MODEL, "--precision", "int8")
        got = self.run_ok(*fid, "--normalize", "nfkc", wide)
        self.assertEqual(got, self.run_ok(*fid, ascii_))
        self.assertNotEqual(got, self.run_ok(*fid, wide))

    def test_the_python_modules_score_jsonl_normalizes_like_the_cli(self):
        lstmlm = pyutil.require_module()
        m = lstmlm.Model(MODEL, threads=1)
        lines = [json.dumps({"text": t}, ensure_ascii=False) for t in self.wide]
        got = m.score_jsonl(lines, normalize="nfkc")
        self.assertEqual([g[0] for g in got], ["kept"] * len(lines))
        want = m.score_jsonl([json.dumps({"text": t}) for t in ASCII])
        self.assertEqual([added_fields(g[1]) for g in got], [added_fields(w[1]) for w in want])
        self.assertNotEqual([added_fields(g[1]) for g in m.score_jsonl(lines)], [added_fields(g[1]) for g in got])
        # The CLI's filter prints the same lines.
        cli = self.run_ok("score", "-m", MODEL, "--input-format", "jsonl", "--normalize", "nfkc",
                          self.write("wide.jsonl", lines))
        self.assertEqual(cli.splitlines(), [g[1] for g in got])
        with self.assertRaises(ValueError):
            m.score_jsonl(lines, normalize="nfd")


if __name__ == "__main__":
    unittest.main()
