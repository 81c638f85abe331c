"""`lstmlm score --units bits --entropy --rank` and `--aggregate words` on the bundled models, against an
independent float64 numpy evaluation of the model directory (lstmlm_dir_ref.DirModel): surprisal in bits,
the entropy of every predictive distribution and the rank of every token."""
import json
import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/py: the helpers
sys.path.insert(0, HERE)

import pyutil  # noqa: E402
from lstmlm_dir_ref import DirModel  # noqa: E402

MODELS = os.path.join(pyutil.SOURCE_DIR, "models")
TOL = 1e-4


def start_id(model_dir):
    """The token a sentence is predicted from (bos, else eos, else none), as docs/scoring.md says."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        tok = json.load(f)["tokenizer"]
    with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    name = tok.get("bos_token") or tok.get("eos_token")
    return (vocab.index(name) if name is not None else None), tok.get("eos_token"), vocab


def score_jsonl(*args, text):
    import subprocess
    r = subprocess.run([pyutil.require_cli(), "score", *args, "--output-format", "jsonl"], input=text,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"lstmlm score failed ({r.returncode}): {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines()]


class MeasuresAgainstFloat64(unittest.TestCase):
    def check_model(self, name, lines):
        d = os.path.join(MODELS, name)
        ref = DirModel(d)
        start, eos, vocab = start_id(d)
        text = "".join(" ".join(str(i) for i in ids) + "\n" for ids in lines)
        recs = score_jsonl("-m", d, "--ids", "--units", "bits", "--entropy", "--rank", text=text)
        for ids, rec in zip(lines, recs):
            stream = list(ids) + ([vocab.index(eos)] if eos is not None else [])
            for k, w in enumerate(rec["words"]):
                context = ([start] if start is not None else []) + stream[:k]
                if not context:  # the context-only first token
                    self.assertIsNone(w["surprisal"])
                    self.assertIsNone(w["entropy"])
                    self.assertIsNone(w["rank"])
                    continue
                lp = ref.next_logprobs(context)
                target = stream[k]
                self.assertAlmostEqual(w["surprisal"], -lp[target] / np.log(2), delta=TOL, msg=(name, k))
                h_bits = -np.sum(np.exp(lp) * lp) / np.log(2)
                self.assertAlmostEqual(w["entropy"], h_bits, delta=TOL, msg=(name, k))
                surely = int(np.sum(lp > lp[target] + TOL))
                maybe = int(np.sum(lp > lp[target] - TOL))  # counts the target itself
                self.assertGreaterEqual(w["rank"], 1 + surely, msg=(name, k))
                self.assertLessEqual(w["rank"], maybe, msg=(name, k))

    def test_word_model(self):
        self.check_model("fairytales-word", [[102, 158, 10, 61], [2, 78, 39, 7]])

    def test_char_model(self):
        self.check_model("charrnn-space", [[2, 4, 1, 0, 18, 3, 2]])

    def test_aggregate_words_sum_characters(self):
        d = os.path.join(MODELS, "charrnn-space")
        text = "the cat sat on the mat\n"
        chars = score_jsonl("-m", d, "--context", "document", text=text)[0]["words"]
        words = score_jsonl("-m", d, "--context", "document", "--aggregate", "words", text=text)[0]["words"]
        self.assertEqual([w["token"] for w in words], text.split())
        i = 0
        for w in words:
            n = len(w["token"]) + (1 if i + len(w["token"]) < len(chars) else 0)  # its characters + the space
            part = chars[i:i + n]
            i += n
            if any(c["logprob"] is None for c in part):
                self.assertIsNone(w["logprob"])
            else:
                self.assertAlmostEqual(w["logprob"], sum(c["logprob"] for c in part), delta=1e-5)
        self.assertEqual(i, len(chars))


if __name__ == "__main__":
    unittest.main()
