"""`generate` on a class-factored model draws the class, then the word within it (C + |class| output rows a step,
not V), from the same distribution as the full softmax: each generated token's logprob is the one `predict
--top 0` gives it after the same context, and 4,000 one-token samples follow predict's probabilities (every word
within 5 standard deviations of its expected count, the total chi-square far below its 0.1% point)."""
import json
import math
import os
import subprocess
import unittest

import numpy as np

import pyutil


def class_model(path):
    """A random sigmoid RNN (rnnlm's kind) of 40 words in 6 classes of contiguous words."""
    import lstmlm.format as lf
    rng = np.random.default_rng(21)
    V, H, C = 40, 8, 6
    vocab = ["</s>", "<unk>"] + [f"w{i}" for i in range(V - 2)]
    t = {lf.names.weight_ih(0, cell="rnn"): rng.normal(0, 1.0, (H, V)).astype(np.float32),
         lf.names.weight_hh(0, cell="rnn"): rng.normal(0, 0.5, (H, H)).astype(np.float32),
         lf.names.bias_ih(0, cell="rnn"): np.zeros(H, np.float32),
         lf.names.decoder_weight: rng.normal(0, 1.0, (V, H)).astype(np.float32),
         lf.names.decoder_bias: np.zeros(V, np.float32),
         lf.names.class_weight: rng.normal(0, 1.0, (C, H)).astype(np.float32),
         lf.names.class_bias: np.zeros(C, np.float32),
         lf.names.word_class: np.sort(rng.integers(0, C, V)).astype(np.float32)}
    t[lf.names.word_class][:C] = np.arange(C)  # every class has a word
    t[lf.names.word_class] = np.sort(t[lf.names.word_class])
    lf.write_model(path, vocab=vocab, embedding_dim=0, layers=[lf.rnn_layer(H, activation="sigmoid")], tied=False,
                   tensors=t, classes=C, tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="</s>"),
                   source={"framework": "random", "exporter": "tests/py/cli/test_generate_by_class.py"})
    return path


def run(*args):
    r = subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input="")
    if r.returncode != 0:
        raise AssertionError(f"{args}: {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


class GenerateByClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pyutil.temp_root("lstmlm_byclass_")
        cls.model = class_model(os.path.join(cls.tmp, "class"))

    def distribution(self, context):
        rec = run("predict", "-m", self.model, "--top", "0", "--output-format", "jsonl", context)[0]
        return {c["id"]: c for c in rec["top"]}

    def test_one_token_samples_follow_the_distribution(self):
        n = 4000
        samples = run("generate", "-m", self.model, "-p", "w3 w7", "-n", "1", "--num-samples", str(n),
                      "--seed", "5", "--no-stop-at-eos", "--output-format", "jsonl")
        self.assertEqual(len(samples), n)
        p = self.distribution("w3 w7")
        counts = {}
        for s in samples:
            (tok,) = s["tokens"]
            counts[tok["id"]] = counts.get(tok["id"], 0) + 1
            self.assertAlmostEqual(tok["logprob"], p[tok["id"]]["logprob"], delta=1e-6)
        chi2 = 0.0
        for i, c in p.items():
            expect = n * c["prob"]
            got = counts.get(i, 0)
            self.assertLessEqual(abs(got - expect), 5 * math.sqrt(expect * (1 - c["prob"])) + 1, (i, got, expect))
            if expect > 0:
                chi2 += (got - expect) ** 2 / expect
        self.assertLess(chi2, 80)  # 39 degrees of freedom: the 0.1% point is 72.1; 80 leaves room for rounding

    def test_each_token_has_the_models_logprob(self):
        samples = run("generate", "-m", self.model, "-p", "w1", "-n", "6", "--num-samples", "3", "--seed", "9",
                      "--no-stop-at-eos", "--output-format", "jsonl")
        for s in samples:
            context = ["w1"]
            for tok in s["tokens"]:
                p = self.distribution(" ".join(context))
                self.assertAlmostEqual(tok["logprob"], p[tok["id"]]["logprob"], delta=1e-6)
                context.append(tok["token"])

    def test_seeded_runs_repeat(self):
        a = run("generate", "-m", self.model, "-n", "8", "--num-samples", "4", "--seed", "3", "--output-format",
                "jsonl")
        b = run("generate", "-m", self.model, "-n", "8", "--num-samples", "4", "--seed", "3", "--output-format",
                "jsonl")
        self.assertEqual(a, b)


if __name__ == "__main__":
    unittest.main()
