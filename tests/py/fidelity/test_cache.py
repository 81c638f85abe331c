"""`lstmlm score --context document --cache-window W --cache-lambda L --cache-theta T`: the continuous cache
pointer against a numpy float64 port of awd-lstm-lm's pointer.py formula, run over the real word-language-model
of ../shared/data/torch-wlm-fairytales by a float64 LSTM written from the format's documentation
(lstmlm_dir_ref.py): ptr(w) = sum over the last W steps j whose next word is w of softmax(theta h_j . h_i),
p = lambda ptr + (1 - lambda) p_model, at each prediction i > W (0-based, pointer.py's start_idx + idx > window)."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

NAME = "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"


def pointer_reference(hs, lps, targets, window, lam, theta):
    """pointer.py's loss loop in float64: hs[i] the top layer's output the i-th prediction is made from."""
    out = []
    for i, (h, lp, t) in enumerate(zip(hs, lps, targets)):
        if i > window:
            keys, nxt = hs[i - window:i], targets[i - window:i]
            z = theta * (keys @ h)
            a = np.exp(z - z.max())
            a /= a.sum()
            ptr = a[nxt == t].sum()
            out.append(np.log(lam * ptr + (1 - lam) * np.exp(lp)))
        else:
            out.append(lp)
    return np.array(out)


class CacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pyutil.require_cli()
        d = pyutil.data("torch-wlm-fairytales")
        cls.tmp = pyutil.temp_root("lstmlm_cache_")
        cls.model = os.path.join(cls.tmp, "wlm100")
        r = pyutil.convert(os.path.join(d, NAME), cls.model)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(d, "test.txt"), encoding="utf-8") as f:
            cls.text = "".join(f.readlines()[:120])

    def score(self, *extra):
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--context", "document", "--output-format",
                            "jsonl", *extra], input=self.text, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        words = [w for rec in map(json.loads, r.stdout.splitlines()) if rec["type"] == "line" for w in rec["words"]]
        return words, r.stderr

    def test_each_token_is_pointer_pys_formula(self):
        W, lam, theta = 150, 0.3, 0.5
        plain, _ = self.score()
        cached, err = self.score("--cache-window", str(W), "--cache-lambda", str(lam), "--cache-theta", str(theta))
        ids = np.array([w["id"] for w in plain])
        ref = DirModel(self.model)
        eos = pyutil.read_vocab(self.model).index("<eos>")
        state, hs, lps = ref.initial_state(), [], []
        for inp, t in zip(np.concatenate([[eos], ids[:-1]]), ids):  # the stream starts after <eos>
            state, y = ref.step(state, int(inp))
            hs.append(y)
            lps.append(ref.output(y)[t])
        hs, lps = np.array(hs), np.array(lps)
        want = pointer_reference(hs, lps, ids, W, lam, theta)
        got = np.array([w["logprob"] for w in cached])
        base = np.array([w["logprob"] for w in plain])
        self.assertEqual(len(got), len(want))
        self.assertGreater(len(got), 3 * W)
        # The engine's float32 LSTM against float64 over a 2,000-token document: its own drift, which the
        # cache does not widen.
        drift = np.max(np.abs(base - lps))
        self.assertLess(drift, 1e-4)
        print(f"max |engine - float64| without the cache {drift:.2e}, with it {np.max(np.abs(got - want)):.2e}",
              file=sys.stderr)
        self.assertLess(np.max(np.abs(got - want)), max(2 * drift, 1e-5))
        np.testing.assert_array_equal(got[:W + 1], base[:W + 1])  # no cache before the (W+1)-th prediction
        self.assertGreater(np.max(np.abs(got - base)), 0.1)      # and a real change after it
        ppl = np.exp(-got.mean())
        self.assertIn(f"perplexity {ppl:.4f}", err)

    def test_the_cache_needs_a_document_and_sane_values(self):
        document = ["--context", "document"]
        for args, key in ((["--cache-window", "10"], "--context"),
                          (document + ["--cache-window", "-1"], "--cache-window"),
                          (document + ["--cache-window", "10", "--cache-lambda", "1.5"], "--cache-lambda"),
                          (document + ["--cache-window", "10", "--cache-theta", "nan"], "--cache-theta"),
                          (document + ["--cache-window", "10", "--entropy"], "--entropy")):
            r = subprocess.run([pyutil.CLI, "score", "-m", self.model, *args], input="a b\n", capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(key, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertEqual(r.stdout, "")

if __name__ == "__main__":
    unittest.main()
