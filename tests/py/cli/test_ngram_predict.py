"""`lstmlm predict -m FILE.arpa`: the next words by the n-gram model's probabilities, each candidate's ln p the
one `score -m FILE.arpa` gives that word after the context; KenLM's own test values (SOURCE.md of
../shared/data/kenlm-test-arpa) for the first; the options an n-gram model cannot take refused."""
import json
import math
import subprocess
import unittest

import pyutil


def cli(*args, input=""):
    return subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input=input)


class NgramPredict(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arpa = pyutil.data("kenlm-test-arpa", "test.arpa")

    def predict(self, *args):
        r = cli("predict", "-m", self.arpa, "--output-format", "jsonl", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(x) for x in r.stdout.splitlines()]

    def test_candidates_are_what_score_gives_each_word(self):
        for context in ("looking on a", "on a little", "", "not_found in"):
            top = self.predict("--top", "0", context)[0]["top"]
            self.assertNotIn("<s>", [c["token"] for c in top])
            self.assertEqual(len(top), 37 - 1)  # every unigram but <s>
            lps = [c["logprob"] for c in top]
            self.assertEqual(lps, sorted(lps, reverse=True))
            words = [c for c in top if c["token"] not in ("</s>", "<unk>")]
            text = "".join(f"{context} {c['token']}\n".lstrip() for c in words)
            r = cli("score", "-m", self.arpa, "--no-eos", "--output-format", "jsonl", input=text)
            self.assertEqual(r.returncode, 0, r.stderr)
            recs = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "line"]
            for c, rec in zip(words, recs, strict=True):
                want = rec["words"][-1]["logprob"]
                self.assertAlmostEqual(c["logprob"], want, delta=1e-6 * max(1, abs(want)), msg=(context, c["token"]))

    def test_kenlms_value(self):
        # KenLM's lm/model_test.cc: log10 p(little | <s> looking on a) = -0.00306122 (a 5-gram).
        top = self.predict("--top", "1", "looking on a")[0]
        self.assertEqual(top["top"][0]["token"], "little")
        self.assertAlmostEqual(top["top"][0]["logprob"], -0.00306122 * math.log(10), delta=1e-6)
        self.assertEqual(len(top["ids"]), 4)  # <s> and the three words

    def test_prefix_and_refusals(self):
        top = self.predict("--top", "0", "--prefix", "l", "a")[0]["top"]
        self.assertTrue(top)
        self.assertTrue(all(c["token"].startswith("l") for c in top))
        for args in (["--pad-to", "3"], ["--ids"], ["--mix", f"{self.arpa}:0.5"]):
            r = cli("predict", "-m", self.arpa, *args, "1 2")
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        r = cli("predict", "-m", self.arpa, "--oov", "error", "zzz")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("argument:1:", r.stderr)


if __name__ == "__main__":
    unittest.main()
