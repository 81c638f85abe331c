"""ml5 / deeplearn.js char-rnn dumps (manifest.json + one raw float32 file per TF1 variable) and the seed
user's TF1 graph (Embedding, rnn/basic_lstm_cell, Projection/Matrix|Bias). The reference is TF1's
BasicLSTMCell in float64 numpy, written here from TF's documented semantics (not from the converter):
    i, j, f, o = split([x, h] @ kernel + bias, 4);  c' = sigmoid(f + forget_bias) c + sigmoid(i) tanh(j)
    h' = sigmoid(o) tanh(c')   with forget_bias 1.0 (not stored), MultiRNNCell feeding h up,
    logits = h @ softmax_w + softmax_b."""
import json
import os
import shutil
import unittest

import numpy as np

import pyutil
from convert.test_import_keras1 import Keras1Case, contexts, log_softmax, sigmoid
from tf1_ckpt_writer import write_checkpoint


def tf1_next_logprobs(ids, emb, cells, sw, sb, forget_bias=1.0):
    """cells: [(kernel [in + H, 4H], bias [4H])] float64."""
    state = [(np.zeros(k.shape[1] // 4), np.zeros(k.shape[1] // 4)) for k, _ in cells]
    for t in ids:
        x = emb[t]
        for n, (k, b) in enumerate(cells):
            c, h = state[n]
            i, j, f, o = np.split(np.concatenate([x, h]) @ k + b, 4)
            c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
            h = sigmoid(o) * np.tanh(c)
            state[n] = (c, h)
            x = h
    return log_softmax(x @ sw + sb)


def read_ml5(d):
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    return {k: np.fromfile(os.path.join(d, v["filename"]), "<f4").astype(np.float64).reshape(v["shape"])
            for k, v in m.items()}


class Ml5RealTest(Keras1Case):
    def run_model(self, name, kernel, bias):
        d = pyutil.data("ml5-charrnn-tf1-basiclstm", "models", "charRNN", name)
        out = os.path.join(self.tmp, "ml5-" + name)
        r = pyutil.convert_ok(self, d, out)  # no flags: vocab.json is next to the manifest
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["tokenizer"]["type"], len(cfg["layers"]), cfg["source"]["forget_bias_folded"]),
                         ("char", 2, 1.0))
        v = read_ml5(d)
        cells = [(v[f"rnnlm/multi_rnn_cell/cell_{k}/basic_lstm_cell/{kernel}"],
                  v[f"rnnlm/multi_rnn_cell/cell_{k}/basic_lstm_cell/{bias}"]) for k in (0, 1)]
        ref = lambda ids: tf1_next_logprobs(ids, v["embedding"], cells, v["rnnlm/softmax_w"], v["rnnlm/softmax_b"])  # noqa: E731
        vocab = pyutil.read_vocab(out)
        idx = {t: i for i, t in enumerate(vocab)}
        return out, ref, idx, r

    def test_shakespeare_tf10_names(self):
        out, ref, idx, r = self.run_model("shakespeare", "weights", "biases")
        # vocab.json's keys "" (id 40) and "  " (id 13) cannot be one character: unreachable placeholders.
        vocab = pyutil.read_vocab(out)
        self.assertEqual((vocab[13], vocab[40]), ("<unused:13>", "<unused:40>"))
        self.assertIn("not one character", r.stderr)
        seq = [idx[c] for c in "ROMEO:\nWhat light is that at yonder window"]
        self.assertLess(np.mean([-ref(seq[:k])[seq[k]] for k in range(5, len(seq))]), 0.6 * np.log(65))
        self.compare(out, ref, [seq[:n] for n in range(1, len(seq), 5)] + contexts(np.random.RandomState(3), 65))

    def test_dubois_tf11_names(self):
        out, ref, idx, _ = self.run_model("dubois", "kernel", "bias")
        seq = [idx[c] for c in "The problem of the twentieth century is the problem of the color-line"]
        self.assertLess(np.mean([-ref(seq[:k])[seq[k]] for k in range(5, len(seq))]), 0.6 * np.log(90))
        self.compare(out, ref, [seq[:n] for n in range(1, len(seq), 7)] + contexts(np.random.RandomState(4), 90))


class Ml5HostileTest(Keras1Case):
    def copy(self, name):
        src = pyutil.data("ml5-charrnn-tf1-basiclstm", "models", "charRNN", "dubois")
        d = os.path.join(self.tmp, name)
        shutil.copytree(src, d)
        return d

    def refused(self, d, *want):
        r = pyutil.convert(d, os.path.join(self.tmp, os.path.basename(d) + "-out"))
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        for s in want:
            self.assertIn(s, lines[0])

    def test_truncated_variable_file(self):
        d = self.copy("trunc")
        p = os.path.join(d, "rnnlm_softmax_w")
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) - 4)
        self.refused(d, "rnnlm/softmax_w", "rnnlm_softmax_w", "bytes")

    def test_manifest_shape_mismatch(self):
        d = self.copy("shape")
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
        m["rnnlm/softmax_b"]["shape"] = [91]
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump(m, f)
        self.refused(d, "rnnlm/softmax_b")

    def test_missing_variable(self):
        d = self.copy("missing")
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
        del m["rnnlm/multi_rnn_cell/cell_1/basic_lstm_cell/bias"]
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump(m, f)
        self.refused(d, "cell 1", "bias")


class Tf1SeedGraphTest(Keras1Case):
    """The seed's graph: tf.get_variable('Embedding'), static_rnn over BasicLSTMCell (rnn/basic_lstm_cell/
    kernel|bias), Projection/Matrix [H, V] + Projection/Bias [V]; a word vocabulary with <unk> and <eos>."""

    def test_seed_graph(self):
        rng = np.random.RandomState(11)
        V, E, H = 9, 5, 6
        t = {"Embedding": rng.randn(V, E), "rnn/basic_lstm_cell/kernel": rng.randn(E + H, 4 * H) * 0.4,
             "rnn/basic_lstm_cell/bias": rng.randn(4 * H) * 0.1, "Projection/Matrix": rng.randn(H, V),
             "Projection/Bias": rng.randn(V), "global_step": np.array(7.0)}
        t = {k: v.astype(np.float32) for k, v in t.items()}
        prefix = os.path.join(self.tmp, "seed", "model.ckpt")
        os.makedirs(os.path.dirname(prefix))
        write_checkpoint(prefix, t)
        vocab = os.path.join(self.tmp, "seed-vocab.txt")
        with open(vocab, "w") as f:
            f.write("\n".join(["<unk>", "<eos>", "the", "cat", "sat", "on", "a", "mat", "."]) + "\n")
        out = os.path.join(self.tmp, "seed-out")
        r = pyutil.convert_ok(self, prefix, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["source"]["variables"]["embedding"], "Embedding")
        self.assertEqual((cfg["source"]["variables"]["softmax_w"], cfg["source"]["variables"]["softmax_b"]),
                         ("Projection/Matrix", "Projection/Bias"))
        # The vocabulary's <eos> and <unk> become eos / unk, each guess on its own stderr line and recorded.
        self.assertEqual((cfg["tokenizer"]["eos_token"], cfg["tokenizer"]["unk_token"]), ("<eos>", "<unk>"))
        self.assertEqual(cfg["source"]["guessed"], {"unk_token": "<unk>", "eos_token": "<eos>"})
        self.assertIn("note: eos_token '<eos>' (found in the vocabulary; --eos '' to turn off)", r.stderr)
        f64 = {k: v.astype(np.float64) for k, v in t.items()}
        ref = lambda ids: tf1_next_logprobs(ids, f64["Embedding"], [(f64["rnn/basic_lstm_cell/kernel"],  # noqa: E731
                                            f64["rnn/basic_lstm_cell/bias"])], f64["Projection/Matrix"],
                                            f64["Projection/Bias"])
        self.compare(out, ref, contexts(np.random.RandomState(5), V))
        # --eos '' turns the guess off; nothing is recorded for it.
        out2 = os.path.join(self.tmp, "seed-noeos")
        pyutil.convert_ok(self, prefix, out2, "--vocab", vocab, "--eos", "")
        cfg2 = pyutil.read_config(out2)
        self.assertIsNone(cfg2["tokenizer"]["eos_token"])
        self.assertEqual(cfg2["source"]["guessed"], {"unk_token": "<unk>"})


if __name__ == "__main__":
    unittest.main()
