"""`lstmlm states` and `Model.states`: the recurrent state after each fed token, per layer, against a float64
numpy evaluation of the model directory (tests/py/lstmlm_dir_ref.py, written from docs/model-format.md), and bit
for bit against the engine's own states (the Python module stepping a State word by word) and across
--batch-size and --threads."""
import json
import os
import shutil
import subprocess
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

TEXT = "once upon a time there was a king\nthe old man said\n\nand she went to the river\n"


def run_states(model, out, *args, text=TEXT):
    r = subprocess.run([pyutil.require_cli(), "states", "-m", model, "-o", out, *args], capture_output=True,
                       text=True, input=text)
    return r


def load(out):
    with open(os.path.join(out, "tokens.jsonl"), encoding="utf-8") as f:
        tokens = [json.loads(line) for line in f]
    h = sorted(n for n in os.listdir(out) if n.startswith("h_l"))
    c = sorted(n for n in os.listdir(out) if n.startswith("c_l"))
    return tokens, [np.load(os.path.join(out, n)) for n in h], {n: np.load(os.path.join(out, n)) for n in c}


def gru_model(path):
    """A random 2-layer GRU word model (no cell state) with fairytales-word's vocabulary."""
    import lstmlm.format as lf
    with open(os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word", "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    rng = np.random.default_rng(3)
    V, E, H = len(vocab), 16, 24
    t = {lf.names.embedding: rng.normal(0, 0.5, (V, E)).astype(np.float32)}
    for k in range(2):
        t[lf.names.weight_ih(k, cell="gru")] = rng.normal(0, 0.3, (3 * H, E if k == 0 else H)).astype(np.float32)
        t[lf.names.weight_hh(k, cell="gru")] = rng.normal(0, 0.3, (3 * H, H)).astype(np.float32)
        t[lf.names.bias_ih(k, cell="gru")] = rng.normal(0, 0.1, 3 * H).astype(np.float32)
        t[lf.names.bias_hh(k, cell="gru")] = rng.normal(0, 0.1, 3 * H).astype(np.float32)
    t[lf.names.decoder_weight] = rng.normal(0, 0.5, (V, H)).astype(np.float32)
    t[lf.names.decoder_bias] = np.zeros(V, np.float32)
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.gru_layer(H), lf.gru_layer(H)], tied=False,
                   tokenizer=lf.tokenizer(lowercase=True, unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "random", "exporter": "tests/py/cli/test_states.py"})
    return path


class States(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pyutil.temp_root("lstmlm_states_")
        cls.models = {"lstm": os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word"),
                      "lstm2": os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space"),
                      "gru": gru_model(os.path.join(cls.tmp, "gru"))}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_against_float64(self, name, context):
        out = os.path.join(self.tmp, f"{name}-{context}")
        r = run_states(self.models[name], out, "--context", context)
        self.assertEqual(r.returncode, 0, r.stderr)
        tokens, h, c = load(out)
        ref = DirModel(self.models[name])
        self.assertEqual(len(h), len(ref.layers))
        self.assertEqual([a.shape for a in h], [(len(tokens), l.get("proj_size") or l["hidden_size"])
                                               for _, l, _ in ref.layers])
        self.assertEqual(sorted(c), [f"c_l{k}.npy" for k, (cell, _, _) in enumerate(ref.layers) if cell == "lstm"])
        # Line 3 is empty: rows for its start token and line end where the model has them (no --skip-empty).
        self.assertLessEqual({1, 2, 4}, {t["line"] for t in tokens})
        state, worst = ref.initial_state(), 0.0
        for i, t in enumerate(tokens):
            if context == "sentence" and t["position"] == 0:
                state = ref.initial_state()
            state, _ = ref.step(state, t["id"])
            for k, (hk, ck) in enumerate(state):
                worst = max(worst, np.abs(h[k][i] - hk).max())
                if ck is not None:
                    worst = max(worst, np.abs(c[f"c_l{k}.npy"][i] - ck).max())
        # float32 kernels against float64: the difference grows along a stream (the char model's document, 90
        # steps through two layers, reaches 4.4e-5); |h| and |c| are about 1.
        self.assertLess(worst, 1e-4, (name, context))
        return tokens, h, c

    def test_states_equal_the_float64_reference(self):
        for name in self.models:
            sentence, _, _ = self.check_against_float64(name, "sentence")
            document, _, _ = self.check_against_float64(name, "document")
            # The start token opens each of the 4 lines in sentence mode, the stream once in document mode.
            if name != "lstm2":  # the char model has no start token
                self.assertEqual(len(document), len(sentence) - 3, name)

    def test_the_same_bits_whatever_the_batch_and_threads(self):
        outs = []
        for args in (["--batch-size", "1", "--threads", "1"], ["--batch-size", "64", "--threads", "2"]):
            out = os.path.join(self.tmp, "bits-" + args[1])
            r = run_states(self.models["lstm2"], out, *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            outs.append(out)
        for name in sorted(os.listdir(outs[0])):
            with open(os.path.join(outs[0], name), "rb") as a, open(os.path.join(outs[1], name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_python_states_are_the_engines_stepped_states(self):
        lstmlm = pyutil.require_module()
        m = lstmlm.Model(self.models["lstm"], threads=1)
        sentence = "once upon a time there was a king"
        tokens, h, c = m.states(sentence)
        self.assertEqual(tokens, ["<eos>"] + sentence.split() + ["<eos>"])
        # KenLM-style stepping: BeginSentenceWrite feeds the start token, BaseScore each word then eos.
        s, nxt = lstmlm.State(), lstmlm.State()
        m.BeginSentenceWrite(s)
        rows = [s]
        for w in sentence.split() + ["</s>"]:
            m.BaseScore(s, w, nxt)
            rows.append(nxt)
            s, nxt = nxt, lstmlm.State()
        for i, st in enumerate(rows):
            self.assertTrue(np.array_equal(h[0][i], st.h[0]), i)
            self.assertTrue(np.array_equal(c[0][i], st.c[0]), i)
        out = os.path.join(self.tmp, "py")
        self.assertEqual(run_states(self.models["lstm"], out, text=sentence + "\n").returncode, 0)
        _, hc, cc = load(out)
        self.assertTrue(np.array_equal(hc[0], h[0]))
        self.assertTrue(np.array_equal(cc["c_l0.npy"], c[0]))

    def test_bad_input_is_one_line(self):
        r = subprocess.run([pyutil.require_cli(), "states", "-m", self.models["lstm"]], capture_output=True,
                           text=True, input="a\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--output-dir", r.stderr)
        blocker = os.path.join(self.tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        r = run_states(self.models["lstm"], os.path.join(blocker, "sub"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("a-file", r.stderr)


if __name__ == "__main__":
    unittest.main()
