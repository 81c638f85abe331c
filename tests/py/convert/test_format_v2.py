"""Format v2 end to end: a model written by lstmlm.format with a cell activation other than tanh and
an output head of Dense layers (LSTM -> Dense(relu) -> Dense(V, softmax), common in Keras next-token
models) loads in the CLI and gives the log-probabilities of a float64 numpy model written here from
Keras' documented semantics (keras.layers.LSTM with `activation`: g = act(z_c), h = o act(c); Dense:
act(x W + b); relu = max(x, 0)), not from lstmlm's code; v1 models stay v1; v1 builds' readers refuse v2."""
import json
import os
import tempfile
import unittest

import numpy as np

import pyutil
from lstmlm.format import dense, layer, names, tokenizer, write_model

ACT = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "linear": lambda x: x,
       "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}
TMP = pyutil.temp_root("lstmlm_v2_")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(w, layers, head, ids):
    """ln p(next | ids) from the zero state, float64. Weights in the format's PyTorch layout: rows of
    W_ih/W_hh are the gate blocks i, f, g, o."""
    hs = [np.zeros(l["hidden_size"]) for l in layers]
    cs = [np.zeros_like(h) for h in hs]
    for t in ids:
        x = w[names.embedding][t].astype(np.float64)
        for k, l in enumerate(layers):
            H = l["hidden_size"]
            z = (w[names.weight_ih(k)] @ x + w[names.weight_hh(k)] @ hs[k] + w[names.bias_ih(k)] +
                 w[names.bias_hh(k)]).astype(np.float64)
            a = ACT[l["activation"]]
            i, f, g, o = sigmoid(z[:H]), sigmoid(z[H:2 * H]), a(z[2 * H:3 * H]), sigmoid(z[3 * H:])
            cs[k] = f * cs[k] + i * g
            hs[k] = o * a(cs[k])
            x = hs[k]
    for j, d in enumerate(head):
        x = ACT[d["activation"]](w[names.head_weight(j)] @ x + w[names.head_bias(j)])
    z = w[names.decoder_weight] @ x + w[names.decoder_bias]
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


class FormatV2(unittest.TestCase):
    def write(self, activation, head, seed=3):
        rng = np.random.default_rng(seed)
        V, E, H = 23, 6, 9
        layers = [layer(H, activation=activation), layer(7, activation=activation)]
        w = {names.embedding: rng.normal(size=(V, E))}
        ins = [E, H]
        for k, l in enumerate(layers):
            h = l["hidden_size"]
            w[names.weight_ih(k)] = rng.uniform(-0.5, 0.5, (4 * h, ins[k]))
            w[names.weight_hh(k)] = rng.uniform(-0.5, 0.5, (4 * h, h))
            w[names.bias_ih(k)] = rng.uniform(-0.5, 0.5, 4 * h)
            w[names.bias_hh(k)] = rng.uniform(-0.5, 0.5, 4 * h)
        width = layers[-1]["hidden_size"]
        for j, d in enumerate(head):
            w[names.head_weight(j)] = rng.uniform(-0.5, 0.5, (d["units"], width))
            w[names.head_bias(j)] = rng.uniform(-0.5, 0.5, d["units"])
            width = d["units"]
        w[names.decoder_weight] = rng.uniform(-0.5, 0.5, (V, width))
        w[names.decoder_bias] = rng.uniform(-0.5, 0.5, V)
        w = {k: v.astype(np.float32) for k, v in w.items()}
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "m")
        write_model(out, vocab=[f"w{i}" for i in range(V)], embedding_dim=E, layers=layers, tied=False,
                    tokenizer=tokenizer("word"), tensors=w, source={"framework": "test"}, head=head)
        return out, w, layers

    def check(self, activation, head):
        out, w, layers = self.write(activation, head)
        contexts = [[1], [4, 2, 9], [0, 22, 5, 5, 17, 3, 11]]
        got = pyutil.predict_logprobs(out, contexts)
        worst = max(float(np.max(np.abs(g - reference(w, layers, head, c)))) for g, c in zip(got, contexts))
        self.assertLess(worst, 1e-5, f"max |Δ ln p| {worst}")
        return out

    def test_relu_cell_and_relu_head(self):
        out = self.check("relu", [dense(5, "relu")])
        self.assertEqual(pyutil.read_config(out)["format_version"], 2)

    def test_linear_cell_two_head_layers(self):
        self.check("linear", [dense(8, "tanh"), dense(4, "sigmoid")])

    def test_tanh_head_only_and_info(self):
        out = self.check("tanh", [dense(6, "linear")])
        r = pyutil.run_lstmlm("info", "-m", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lstmlm format v2", r.stdout)
        self.assertIn("head_0 (Dense)", r.stdout)

    def test_a_v1_model_stays_v1(self):
        out, _, _ = self.write("tanh", [])
        self.assertEqual(pyutil.read_config(out)["format_version"], 1)

    def test_v2_fields_in_a_v1_file_are_refused(self):
        out, _, _ = self.write("relu", [dense(5, "relu")])
        cfg = pyutil.read_config(out)
        cfg["format_version"] = 1
        with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        r = pyutil.run_lstmlm("info", "-m", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("needs format_version 2", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_writer_refuses_unknown_activations_and_head_tensors(self):
        with self.assertRaisesRegex(ValueError, "activation 'elu'"):
            self.write("elu", [])
        with self.assertRaisesRegex(ValueError, "head.0.weight"):
            write_model(tempfile.mkdtemp(dir=TMP), vocab=["a"], embedding_dim=0, layers=[layer(2)], tied=False,
                        tokenizer=tokenizer("word"), source={}, tensors={names.head_weight(0): np.zeros((1, 2))})


if __name__ == "__main__":
    unittest.main()
