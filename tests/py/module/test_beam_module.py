"""Model.generate's beam_size, logit_bias, allowed_words, regex and stop keywords, and Model.beam_search: the
texts and numbers of `lstmlm generate` with the same options; bad values raise UsageError naming the keyword."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")


def cli_jsonl(*args):
    r = subprocess.run([pyutil.require_cli(), "generate", "-m", MODEL, "--output-format", "jsonl", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines()]


class BeamModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lstmlm = pyutil.require_module()
        cls.model = cls.lstmlm.Model(MODEL, threads=1)

    def test_beam_search_is_the_cli_s(self):
        hyps = self.model.beam_search("the king", max_tokens=8, beam_size=4, n_best=3, length_penalty=0.5)
        want = cli_jsonl("-p", "the king", "-n", "8", "--beam-size", "4", "--n-best", "3", "--length-penalty", "0.5")
        self.assertEqual(len(hyps), 3)
        for h, w in zip(hyps, want):
            self.assertIsInstance(h, self.lstmlm.Hypothesis)
            self.assertEqual(h.ids, w["ids"])
            self.assertEqual(h.text, "the king " + w["text"])
            self.assertAlmostEqual(h.logprob, w["logprob"], places=6)
            self.assertAlmostEqual(h.score, w["score"], places=6)
            self.assertEqual([round(x, 6) for x in h.logprobs], [round(t["logprob"], 6) for t in w["tokens"]])
            self.assertEqual(h.stopped_at_eos, w["stopped_at_eos"])
        texts = self.model.generate("the king", max_tokens=8, beam_size=4, n_best=3, length_penalty=0.5)
        self.assertEqual(texts, [h.text for h in hyps])
        self.assertEqual(self.model.generate("the king", max_tokens=8, beam_size=4), hyps[0].text)

    def test_sampling_keywords_are_the_cli_s(self):
        d = tempfile.mkdtemp(prefix="lstmlm_beam_py_")
        words = ["the", "king", "princess", "and", "said"]
        with open(os.path.join(d, "w.txt"), "w") as f:
            f.write("\n".join(words) + "\n")
        got = self.model.generate("", max_tokens=8, seed=5, num_samples=2, allowed_words=words,
                                  logit_bias={"princess": 2, 3: -1.5}, regex="the (king|princess).*", stop="said")
        want = cli_jsonl("-n", "8", "--seed", "5", "--num-samples", "2", "--allowed-words", os.path.join(d, "w.txt"),
                         "--logit-bias", "princess=2", "--logit-bias", "3=-1.5", "--regex", "the (king|princess).*",
                         "--stop", "said")
        self.assertEqual(got, [w["text"] for w in want])
        for text in got:
            self.assertRegex(text, r"^the (king|princess)")
            self.assertTrue(set(text.split()) <= set(words), text)

    def test_refusals(self):
        U = self.lstmlm.UsageError
        cases = [(dict(beam_size=2, n_best=3), "n_best"), (dict(beam_size=1001), "beam_size"),
                 (dict(beam_size=2, length_penalty=float("nan")), "length_penalty"),
                 (dict(logit_bias={"the": float("inf")}), "logit_bias"), (dict(logit_bias={"zzqx": 1}), "logit_bias"),
                 (dict(allowed_words=["zzqx"]), "allowed_words"), (dict(regex="(the"), "regex")]
        for kw, name in cases:
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(U, re.escape(name)):
                    self.model.generate("the", max_tokens=3, **kw)


if __name__ == "__main__":
    unittest.main()
