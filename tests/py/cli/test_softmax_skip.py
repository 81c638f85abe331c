"""`score --softmax skip` and `predict --softmax skip`: each score is the target's logit, bias + W[target] . y,
and the candidates are ranked by their logits, checked against a float64 numpy evaluation of the model directory
(tests/py/lstmlm_dir_ref.py); every output format says the scores are unnormalised; the combinations that need a
normaliser are refused in one line."""
import json
import os
import subprocess
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

TEXT = "once upon a time there was a king\nthe old man said\n\nand she went to the river\n"


def run(*args, text=TEXT):
    return subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input=text)


def head_model(path):
    """A random tied-free GRU word model with a Dense head (the decoder reads the head's output) and a vocabulary
    of 300 (the output layer's last panel a narrow tail), fairytales-word's first 300 words."""
    import lstmlm.format as lf
    with open(os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word", "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)[:300]
    rng = np.random.default_rng(5)
    V, E, H, D = len(vocab), 12, 20, 16
    t = {lf.names.embedding: rng.normal(0, 0.5, (V, E)).astype(np.float32)}
    t[lf.names.weight_ih(0, cell="gru")] = rng.normal(0, 0.3, (3 * H, E)).astype(np.float32)
    t[lf.names.weight_hh(0, cell="gru")] = rng.normal(0, 0.3, (3 * H, H)).astype(np.float32)
    t[lf.names.bias_ih(0, cell="gru")] = rng.normal(0, 0.1, 3 * H).astype(np.float32)
    t[lf.names.bias_hh(0, cell="gru")] = rng.normal(0, 0.1, 3 * H).astype(np.float32)
    t[lf.names.head_weight(0)] = rng.normal(0, 0.4, (D, H)).astype(np.float32)
    t[lf.names.head_bias(0)] = rng.normal(0, 0.1, D).astype(np.float32)
    t[lf.names.decoder_weight] = rng.normal(0, 0.5, (V, D)).astype(np.float32)
    t[lf.names.decoder_bias] = rng.normal(0, 0.5, V).astype(np.float32)
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.gru_layer(H)], tied=False,
                   head=[lf.dense(D, "tanh")], tensors=t,
                   tokenizer=lf.tokenizer(lowercase=True, unk_token="<unk>", eos_token="<eos>"),
                   source={"framework": "random", "exporter": "tests/py/cli/test_softmax_skip.py"})
    return path


def jsonl(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


class SoftmaxSkip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pyutil.temp_root("lstmlm_softmax_")
        cls.models = {"lstm": os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word"),
                      "gru_head": head_model(os.path.join(cls.tmp, "gru_head"))}

    def eos(self, model):
        return pyutil.read_vocab(model).index("<eos>")

    def test_score_is_the_target_logit(self):
        for name, model in self.models.items():
            for context in ("sentence", "document"):
                with self.subTest(model=name, context=context):
                    ref = DirModel(model)
                    r = run("score", "-m", model, "--softmax", "skip", "--context", context, "--output-format",
                            "jsonl")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    recs = jsonl(r.stdout)
                    state, y = ref.initial_state(), None
                    state, y = ref.step(state, self.eos(model))
                    compared = 0
                    for rec in recs:
                        # Every record says its numbers are logits.
                        self.assertEqual(rec.get("softmax"), "skip", rec)
                        if rec["type"] != "line" or rec["skipped"]:
                            continue
                        if context == "sentence":
                            state, y = ref.initial_state(), None
                            state, y = ref.step(state, self.eos(model))
                        total = 0.0
                        for w in rec["words"]:
                            logits = ref.logits(y)
                            lp = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
                            # The logit, not the log-prob: they differ by the log-normaliser, far above 1e-4.
                            self.assertGreater(abs(lp), 1e-2)
                            self.assertAlmostEqual(w["logprob"], logits[w["id"]], delta=2e-4 * max(1, abs(w["logprob"])))
                            total += w["logprob"]
                            compared += 1
                            state, y = ref.step(state, w["id"])
                        self.assertAlmostEqual(rec["logprob"], total, delta=1e-4 * len(rec["words"]))
                    self.assertGreater(compared, 20)

    def test_skip_scores_differ_from_full_by_the_normaliser(self):
        # ln p = logit - log-sum-exp: the full run's log-probs and the skip run's logits agree up to each step's
        # normaliser, computed here in float64 from the reference.
        model = self.models["lstm"]
        full = jsonl(run("score", "-m", model, "--output-format", "jsonl").stdout)
        skip = jsonl(run("score", "-m", model, "--softmax", "skip", "--output-format", "jsonl").stdout)
        ref = DirModel(model)
        for f, s in zip(full, skip):
            if f["type"] != "line" or f["skipped"]:
                continue
            state, y = ref.step(ref.initial_state(), self.eos(model))
            for fw, sw in zip(f["words"], s["words"]):
                logits = ref.logits(y)
                norm = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
                self.assertAlmostEqual(sw["logprob"] - norm, fw["logprob"], delta=2e-4)
                state, y = ref.step(state, fw["id"])

    def test_rank_reads_every_logit(self):
        # With --rank the whole row is computed (the rank needs it): the same logits as the one-column path's
        # (to float rounding: the sums run in another order), and the ranks of the full softmax.
        model = self.models["gru_head"]
        alone = jsonl(run("score", "-m", model, "--softmax", "skip", "--output-format", "jsonl").stdout)
        ranked = jsonl(run("score", "-m", model, "--softmax", "skip", "--rank", "--output-format", "jsonl").stdout)
        full = jsonl(run("score", "-m", model, "--rank", "--output-format", "jsonl").stdout)
        n = 0
        for a, r, f in zip(alone, ranked, full):
            for aw, rw, fw in zip(a.get("words", []), r.get("words", []), f.get("words", [])):
                self.assertAlmostEqual(aw["logprob"], rw["logprob"], delta=1e-4 * max(1, abs(aw["logprob"])))
                self.assertEqual(rw["rank"], fw["rank"])
                n += 1
        self.assertGreater(n, 20)

    def test_every_format_says_so(self):
        model = self.models["lstm"]
        text = run("score", "-m", model, "--softmax", "skip").stdout
        lines = text.splitlines()
        self.assertTrue(all(line.endswith("softmax=skip") for line in lines if line.startswith("Total:")
                            or "\tTotal:" in line), text)
        self.assertIn("Softmax:\tskip", text)
        for fmt, verbosity in (("tsv", "word"), ("tsv", "sentence"), ("tsv", "summary")):
            out = run("score", "-m", model, "--softmax", "skip", "--output-format", fmt, "-v", verbosity).stdout
            rows = out.splitlines()
            sep = "\t" if fmt == "tsv" else ","
            header = rows[0].split(sep)
            self.assertEqual(header[-1], "softmax", rows[0])
            self.assertTrue(all(r.split(sep)[-1] == "skip" for r in rows[1:]), out)
        lmzoo = run("score", "-m", model, "--softmax", "skip", "--output-format", "lmzoo").stdout.splitlines()
        self.assertEqual(lmzoo[0].split("\t")[-1], "softmax")
        # Without the option nothing changes: no field, no column.
        self.assertNotIn("softmax", run("score", "-m", model, "--output-format", "jsonl").stdout)

    def test_predict_ranks_by_logits(self):
        for name, model in self.models.items():
            with self.subTest(model=name):
                ref = DirModel(model)
                r = run("predict", "-m", model, "--top", "10", "--softmax", "skip", "--output-format", "jsonl",
                        "the old man", "a", text="")
                self.assertEqual(r.returncode, 0, r.stderr)
                full = jsonl(run("predict", "-m", model, "--top", "10", "--output-format", "jsonl", "the old man",
                                 "a", text="").stdout)
                for rec, f in zip(jsonl(r.stdout), full):
                    self.assertEqual(rec["softmax"], "skip")
                    state, y = ref.initial_state(), None
                    for i in rec["ids"]:
                        state, y = ref.step(state, i)
                    logits = ref.logits(y)
                    want = sorted(range(len(logits)), key=lambda j: (-logits[j], j))[:10]
                    self.assertEqual([c["id"] for c in rec["top"]], want)
                    # The same ranking as the full softmax's (it is monotonic).
                    self.assertEqual([c["id"] for c in rec["top"]], [c["id"] for c in f["top"]])
                    for c in rec["top"]:
                        self.assertEqual(set(c), {"token", "id", "logit"})
                        self.assertAlmostEqual(c["logit"], logits[c["id"]], delta=2e-4 * max(1, abs(c["logit"])))
                text = run("predict", "-m", model, "--top", "3", "--softmax", "skip", "the", text="").stdout
                self.assertIn("# softmax skip", text)
                self.assertEqual(text.count("logit="), 3)

    def test_refusals(self):
        model = self.models["lstm"]
        arpa = os.path.join(pyutil.DATA, "kenlm-test-arpa", "test.arpa")
        cases = [
            (["score", "-m", model, "--softmax", "skip", "--entropy"], "--entropy"),
            (["score", "-m", model, "--softmax", "skip", "--output-format", "kenlm"], "kenlm"),
            (["score", "-m", model, "--softmax", "skip", "--output-format", "srilm"], "srilm"),
            (["score", "-m", model, "--softmax", "skip", "--pad-to", "5"], "window"),
            (["score", "-m", model, "--softmax", "skip", "--input-format", "jsonl"], "--softmax skip"),
            (["score", "-m", model, "--softmax", "sometimes"], "--softmax"),
            (["predict", "-m", model, "--softmax", "skip", "--prefix", "ki", "the"], "--prefix"),
            (["predict", "-m", model, "--softmax", "skip", "--window", "3", "the"], "window"),
        ]
        if os.path.exists(arpa):
            cases.append((["score", "-m", arpa, "--softmax", "skip"], "ARPA"))
        for argv, needle in cases:
            with self.subTest(argv=argv):
                r = run(*argv, text="the old man\n")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_double_precision_path_stays_exact(self):
        model = os.path.join(self.tmp, "model-class")
        pyutil.convert_ok(self, pyutil.data("rnnlm-mikolov-ptb", "model-class"), model)
        r = run("score", "-m", model, "--softmax", "skip", text="the cat\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("double-precision path", r.stderr)


if __name__ == "__main__":
    unittest.main()
