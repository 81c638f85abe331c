"""`lstmlm predict -m FILE.arpa` and `generate -m FILE.arpa`: the next words by the n-gram model's
probabilities, each candidate's ln p the one `score -m FILE.arpa` gives that word after the context (KenLM's own
test values, SOURCE.md of ../shared/data/kenlm-test-arpa, for the first); each generated token's ln p predict's
for it, greedy decoding predict's first candidate; the options an n-gram model cannot take refused."""
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
        # The commands that need a neural model say so, serve before it listens.
        for args in (["serve", "--port", "0"], ["rescore", "--input-format", "jsonl"], ["fidelity", "--precision", "int8"]):
            r = subprocess.run([pyutil.require_cli(), args[0], "-m", self.arpa, *args[1:]], capture_output=True,
                               text=True, input="", timeout=60)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("needs a neural model directory", r.stderr)
            self.assertNotIn("listening", r.stderr)
        r = cli("predict", "-m", self.arpa, "--oov", "error", "zzz")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("argument:1:", r.stderr)


class NgramGenerate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arpa = pyutil.data("kenlm-test-arpa", "test.arpa")

    def samples(self, *args):
        r = cli("generate", "-m", self.arpa, "--output-format", "jsonl", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(x) for x in r.stdout.splitlines()]

    def test_tokens_are_predicts_numbers(self):
        for extra in (["--temperature", "0"], ["--seed", "5"], ["--seed", "9", "--top-k", "3"]):
            sample = self.samples("-p", "looking on", "--max-tokens", "6", "--no-stop-at-eos", *extra)[0]
            self.assertEqual(len(sample["tokens"]), 6)
            context = "looking on"
            for t in sample["tokens"]:
                if t["token"] == "</s>":
                    break  # predict reads a context as one line: </s> cannot be in it
                r = cli("predict", "-m", self.arpa, "--top", "0", "--output-format", "jsonl", context)
                top = json.loads(r.stdout)["top"]
                got = [c for c in top if c["id"] == t["id"]][0]
                self.assertAlmostEqual(t["logprob"], got["logprob"], delta=1e-6 * max(1, abs(got["logprob"])))
                if extra[0] == "--temperature":
                    self.assertEqual(t["id"], top[0]["id"])
                context += " " + t["token"]

    def test_seeds_and_samples_are_stable_and_text_joins_the_words(self):
        one = self.samples("-p", "a", "--seed", "17", "--max-tokens", "12", "--no-stop-at-eos")[0]
        three = self.samples("-p", "a", "--seed", "17", "--max-tokens", "12", "--no-stop-at-eos", "--num-samples", "3")
        self.assertEqual(three[0]["tokens"], one["tokens"])
        words = [t["token"] for t in one["tokens"] if t["token"] != "</s>"]
        self.assertEqual(one["text"], " ".join(words))
        self.assertEqual(len(one["tokens"]), 12)
        self.assertFalse(one["stopped_at_eos"])
        stopped = self.samples("-p", "a", "--seed", "17", "--max-tokens", "40")[0]
        if stopped["stopped_at_eos"]:
            self.assertEqual([t["token"] for t in stopped["tokens"]].index("</s>"), len(stopped["tokens"]) - 1)
        r = cli("generate", "-m", self.arpa, "-p", "a", "--seed", "17", "--max-tokens", "12", "--no-stop-at-eos")
        self.assertEqual(r.stdout, "a" + (" " + one["text"] if one["text"] else "") + "\n")
        for args in (["--pad-to", "3"], ["--mix", f"{self.arpa}:0.5"]):
            r = cli("generate", "-m", self.arpa, *args, "-p", "a")
            self.assertEqual(r.returncode, 2, (args, r.stderr))


if __name__ == "__main__":
    unittest.main()
