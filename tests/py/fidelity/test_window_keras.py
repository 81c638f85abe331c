"""The same numbers as the user's own script for a Keras next-word app with a fixed input window.

keras3-ml-wordpred's app pre-pads the context with id 0 to the model's input length (8404) before every
model.predict (pad_sequences(..., maxlen=8404, padding='pre')), so the LSTM runs from the zero state over
that window. The converter records input_length 8404, and lstmlm then does the same by default. The
reference is an independent float64 numpy Keras loop over the .h5's own weights (pad, argmax, append).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import numpy as np

import pyutil
import ref_numpy

N = 8404
PROMPT = "machine learning is a"
WORDS = 6


class KerasWindowLoop:
    """Float64 Keras loop: next-word log-probs after pad_sequences([ids], maxlen=N, padding='pre',
    truncating='pre', value=0), the LSTM run from the zero state over those N ids. The pad prefix is the
    same for every call, so the states after j pads (j = 0..N) are computed once; each call then feeds its
    k real ids from the state after N - k pads (the same arithmetic as the naive N-step loop)."""

    def __init__(self, h5):
        m = ref_numpy.keras_h5(h5)
        assert len(m.lstms) == 1 and m.lstms[0]["recurrent_activation"] == "sigmoid"
        l = m.lstms[0]
        self.m, self.k, self.r, self.b = m, l["kernel"], l["recurrent_kernel"], l["bias"]
        self.H = self.r.shape[0]
        self.pad_states = [(np.zeros(self.H), np.zeros(self.H))]
        for _ in range(N):
            self.pad_states.append(self.step(*self.pad_states[-1], 0))

    def step(self, h, c, t):
        H = self.H
        z = self.m.emb[t] @ self.k + h @ self.r + self.b
        i, f, g, o = ref_numpy.sigmoid(z[:H]), ref_numpy.sigmoid(z[H:2 * H]), np.tanh(z[2 * H:3 * H]), \
            ref_numpy.sigmoid(z[3 * H:])
        c = f * c + i * g
        return o * np.tanh(c), c

    def next_logprobs(self, ids):
        ids = list(ids)[-N:]
        h, c = self.pad_states[N - len(ids)]
        for t in ids:
            h, c = self.step(h, c, t)
        return ref_numpy.log_softmax(h @ self.m.wk + self.m.wb)

    def greedy(self, ids, n):
        """[(id, p)] of n greedy steps (argmax, append), as the app's generation loop."""
        ids, out = list(ids), []
        for _ in range(n):
            lp = self.next_logprobs(ids)
            j = int(np.argmax(lp))
            out.append((j, float(np.exp(lp[j]))))
            ids.append(j)
        return out


class WindowKerasTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = pyutil.data("keras3-ml-wordpred")
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_window_")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.out = os.path.join(cls.tmp, "wordpred")
        r = pyutil.convert(os.path.join(d, "word_prediction_model.h5"), cls.out, "--vocab",
                           os.path.join(d, "word_index.json"))
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        cls.vocab = pyutil.read_vocab(cls.out)
        cls.idx = {w: i for i, w in enumerate(cls.vocab)}
        cls.ref = KerasWindowLoop(os.path.join(d, "word_prediction_model.h5"))
        cls.prompt_ids = [cls.idx[w] for w in PROMPT.split()]
        cls.want = cls.ref.greedy(cls.prompt_ids, WORDS)

    def generate(self, *opts, n=WORDS):
        r = pyutil.run_lstmlm("generate", "-m", self.out, "-p", PROMPT, "--temperature", "0", "-n", str(n),
                              "--seed", "1", "--output-format", "jsonl", *opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout.splitlines()[0])["tokens"], r.stderr

    def test_config_records_the_input_length(self):
        self.assertEqual(pyutil.read_config(self.out)["input_length"], N)
        r = pyutil.run_lstmlm("info", "-m", self.out, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["input_length"], N)

    def test_the_keras_loop_says_learning(self):
        # The numbers: the app's first word is "learning" with p 0.142.
        self.assertEqual(self.vocab[self.want[0][0]], "learning")
        self.assertAlmostEqual(self.want[0][1], 0.142, delta=0.0005)

    def test_generate_default_and_pad_to_match_the_keras_loop(self):
        for opts in ((), ("--pad-to", str(N))):
            toks, err = self.generate(*opts)
            self.assertEqual([t["token"] for t in toks], [self.vocab[j] for j, _ in self.want], opts)
            for t, (_, p) in zip(toks, self.want):
                self.assertLess(abs(t["prob"] - p), 1e-4, opts)
            # The default says once on stderr what it does and how to turn it off; --pad-to says nothing.
            notes = [l for l in err.splitlines() if l.startswith("lstmlm: note:")]
            self.assertEqual(len(notes), 0 if opts else 1, err)
            if not opts:
                self.assertIn("--pad-to 8404", notes[0])
                self.assertIn("--stateful", notes[0])

    def test_stateful_continuation_is_what_differed(self):
        # --stateful is the old behaviour: the prompt from the zero state without pads.
        toks, _ = self.generate("--stateful", n=1)
        lp = self.ref.m.next_logprobs(self.prompt_ids)
        j = int(np.argmax(lp))
        self.assertEqual(toks[0]["token"], self.vocab[j])
        self.assertNotEqual(toks[0]["token"], "learning")
        self.assertLess(abs(toks[0]["prob"] - float(np.exp(lp[j]))), 1e-4)

    def test_predict_top1_matches_the_keras_loop(self):
        ids = list(self.prompt_ids)
        contexts, want = [], []
        for j, _ in self.want:
            contexts.append(" ".join(self.vocab[i] for i in ids))
            lp = self.ref.next_logprobs(ids)
            want.append((int(np.argmax(lp)), float(np.exp(lp.max()))))
            ids.append(j)
        r = pyutil.run_lstmlm("predict", "-m", self.out, "--top", "1", "--output-format", "jsonl", *contexts)
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual(len(recs), len(contexts))
        for rec, (j, p) in zip(recs, want):
            self.assertEqual(rec["top"][0]["id"], j, rec["context"])
            self.assertLess(abs(rec["top"][0]["prob"] - p), 1e-4, rec["context"])
            self.assertEqual(rec["pads"] + len(rec["ids"]), N)

    def test_score_uses_the_window(self):
        # Each word after the first is predicted from the padded window of the words before it.
        ids = self.prompt_ids
        r = subprocess.run([pyutil.require_cli(), "score", "-m", self.out, "--output-format", "jsonl"],
                           input=PROMPT + "\n", capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        words = json.loads(r.stdout.splitlines()[0])["words"]
        self.assertIsNone(words[0]["logprob"])  # no bos/eos: the first word is context only, as before
        for k in range(1, len(ids)):
            self.assertLess(abs(words[k]["logprob"] - self.ref.next_logprobs(ids[:k])[ids[k]]), 1e-4)

    def test_generate_is_fast(self):
        t0 = time.monotonic()
        self.generate("--pad-to", str(N), n=10)
        self.assertLess(time.monotonic() - t0, 5.0)

    def test_oov_context_words_are_skipped_with_a_warning_or_refused(self):
        # No unk_token: an OOV word is skipped with one warning line naming it, or refused by --oov error.
        r = pyutil.run_lstmlm("predict", "-m", self.out, "--top", "1", "--output-format", "jsonl", "zqxj learning")
        self.assertEqual(r.returncode, 0, r.stderr)
        warn = [l for l in r.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warn), 1, r.stderr)
        self.assertIn("'zqxj'", warn[0])
        self.assertNotIn("lowercase-only", warn[0])
        self.assertEqual(json.loads(r.stdout)["ids"], [self.idx["learning"]])
        for cmd in (["predict", "zqxj learning"], ["generate", "-p", "zqxj learning", "-n", "1", "--seed", "1"]):
            r = pyutil.run_lstmlm(cmd[0], "-m", self.out, "--oov", "error", *cmd[1:])
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("'zqxj'", r.stderr)
            self.assertEqual(r.stdout, "")
        r = pyutil.run_lstmlm("generate", "-m", self.out, "-p", "zqxj learning", "--temperature", "0", "-n", "1",
                              "--seed", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("'zqxj'", r.stderr)

    def test_oov_hint_for_a_cased_word_against_a_lowercase_vocabulary(self):
        # Converted without lowercasing: "Machine" is not in the lowercase-only vocabulary.
        d = pyutil.data("keras3-ml-wordpred")
        out = os.path.join(self.tmp, "wordpred-cased")
        r = pyutil.convert(os.path.join(d, "word_prediction_model.h5"), out, "--vocab",
                           os.path.join(d, "word_index.json"), "--no-lowercase")
        self.assertEqual(r.returncode, 0, r.stderr)
        hint = "the vocabulary is lowercase-only: reconvert with lstmlm-convert --lowercase"
        r = pyutil.run_lstmlm("predict", "-m", out, "--top", "1", "Machine learning")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("'Machine'", r.stderr)
        self.assertIn(hint, r.stderr)
        for cmd in (["predict", "Machine learning"], ["generate", "-p", "Machine learning", "-n", "1", "--seed", "1"]):
            r = pyutil.run_lstmlm(cmd[0], "-m", out, "--oov", "error", *cmd[1:])
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("'Machine'", r.stderr)
            self.assertIn(hint, r.stderr)

if __name__ == "__main__":
    unittest.main()
