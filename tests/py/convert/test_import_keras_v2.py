"""Keras models that need lstmlm format v2: an LSTM with activation relu and Dense layers between the last LSTM
and the output Dense (the model's output.head). A Keras 2 model.save() .h5 is written here with h5py (the layout
of Keras 2's legacy HDF5 saving: model_config / keras_version attributes, model_weights/<layer>/<layer>/
<weight>:0 with a weight_names attribute); the converted model must give every next-token log-prob of
ref_numpy.KerasLM (float64, from Keras' documented semantics) within 1e-4."""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np

import pyutil
import ref_numpy

TOL = 1e-4


def write_keras2_h5(path, layers, weights, keras_version="2.9.0", model_config=None):
    """layers: Sequential layer configs (or a functional model_config's); weights: {layer name: [(weight
    name, array)]}."""
    import h5py
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = keras_version
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(model_config or {"class_name": "Sequential",
                                                              "config": {"name": "sequential", "layers": layers}})
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = [l["config"]["name"].encode() for l in layers]
        for l in layers:
            name = l["config"]["name"]
            g = mw.create_group(name)
            ws = weights.get(name, [])
            wn = [f"{name}/{'lstm_cell/' if l['class_name'] == 'LSTM' else ''}{k}:0" for k, _ in ws]
            g.attrs["weight_names"] = [n.encode() for n in wn]
            for n, (_, a) in zip(wn, ws):
                g[n] = a


def lstm_cfg(name, units, activation, **kw):
    return {"class_name": "LSTM", "config": dict({"name": name, "trainable": True, "units": units,
                                                  "activation": activation, "recurrent_activation": "sigmoid",
                                                  "use_bias": True, "return_sequences": False}, **kw)}


def dense_cfg(name, units, activation):
    return {"class_name": "Dense", "config": {"name": name, "trainable": True, "units": units,
                                              "activation": activation, "use_bias": True}}


class KerasV2Test(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_kv2_")
        self.rng = np.random.RandomState(7)
        self.V, self.E, self.H = 9, 4, 6

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def weights(self, head_units=(5,)):
        r, V, E, H = self.rng, self.V, self.E, self.H
        w = {"embedding": [("embeddings", r.randn(V, E).astype(np.float32))],
             "lstm": [("kernel", (r.randn(E, 4 * H) * 0.5).astype(np.float32)),
                      ("recurrent_kernel", (r.randn(H, 4 * H) * 0.5).astype(np.float32)),
                      ("bias", (r.randn(4 * H) * 0.3).astype(np.float32))]}
        prev = H
        for k, u in enumerate(head_units):
            w[f"dense_h{k}"] = [("kernel", r.randn(prev, u).astype(np.float32)), ("bias", r.randn(u).astype(np.float32))]
            prev = u
        w["dense_out"] = [("kernel", r.randn(prev, V).astype(np.float32)), ("bias", r.randn(V).astype(np.float32))]
        return w

    def vocab(self):
        p = os.path.join(self.tmp, "vocab.json")
        with open(p, "w") as f:
            json.dump([f"w{i}" for i in range(self.V)], f)
        return p

    def contexts(self, n=8, maxlen=10):
        return [list(self.rng.randint(0, self.V, size=self.rng.randint(1, maxlen))) for _ in range(n)]

    def check(self, layers, w, expect_head):
        src = os.path.join(self.tmp, "m.h5")
        write_keras2_h5(src, layers, w)
        out = os.path.join(self.tmp, "out")
        pyutil.convert_ok(self, src, out, "--vocab", self.vocab())
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["format_version"], 2)
        self.assertEqual(cfg["output"].get("head"), expect_head)
        ref = ref_numpy.keras_h5(src)
        ctxs = self.contexts()
        worst = 0.0
        for c, g in zip(ctxs, pyutil.predict_logprobs(out, ctxs)):
            worst = max(worst, float(np.abs(g - ref.next_logprobs(c)).max()))
        print(f"  max |d log-prob| {worst:.2e} over {len(ctxs)} contexts", flush=True)
        self.assertLess(worst, TOL)
        return cfg

    def test_relu_lstm_relu_dense_softmax(self):
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": self.V,
                                                         "output_dim": self.E, "mask_zero": False}},
                  lstm_cfg("lstm", self.H, "relu"), dense_cfg("dense_h0", 5, "relu"),
                  dense_cfg("dense_out", self.V, "softmax")]
        cfg = self.check(layers, self.weights(), [{"units": 5, "activation": "relu"}])
        self.assertEqual(cfg["layers"][0]["activation"], "relu")
        self.assertEqual(cfg["source"]["trainable"], {"embedding": True, "lstm_l0": True, "head_0": True,
                                                      "decoder": True})

    def test_two_head_layers_and_softmax_activation(self):
        # tanh / sigmoid head layers, a linear output Dense followed by Activation("softmax"), a sigmoid cell.
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": self.V,
                                                         "output_dim": self.E}},
                  lstm_cfg("lstm", self.H, "sigmoid"), dense_cfg("dense_h0", 5, "tanh"),
                  {"class_name": "Dropout", "config": {"name": "dropout", "rate": 0.5}},
                  dense_cfg("dense_h1", 3, "linear"), dense_cfg("dense_out", self.V, "linear"),
                  {"class_name": "Activation", "config": {"name": "act", "activation": "softmax"}}]
        self.check(layers, self.weights((5, 3)), [{"units": 5, "activation": "tanh"},
                                                   {"units": 3, "activation": "linear"}])

    def test_functional_model_with_two_outputs(self):
        # Keras' functional JSON: each layer names its inputs (inbound_nodes [[[layer, 0, 0, {}]]]); two Dense
        # heads read the LSTM. --output picks one; it must give the numbers of the same chain as a Sequential.
        def node(cfg, inbound):
            return dict(cfg, name=cfg["config"]["name"], inbound_nodes=[[[inbound, 0, 0, {}]]] if inbound else [])
        emb = {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": self.V, "output_dim": self.E}}
        lstm, out = lstm_cfg("lstm", self.H, "tanh"), dense_cfg("dense_out", self.V, "softmax")
        other = dense_cfg("other", 3, "softmax")
        inp = {"class_name": "InputLayer", "config": {"name": "ids", "batch_input_shape": [None, None],
                                                      "dtype": "int32"}}
        layers = [node(inp, None), node(emb, "ids"), node(lstm, "embedding"), node(out, "lstm"), node(other, "lstm")]
        functional = {"class_name": "Functional", "config": {"name": "two_heads", "layers": layers,
                                                             "input_layers": [["ids", 0, 0]],
                                                             "output_layers": [["dense_out", 0, 0], ["other", 0, 0]]}}
        w = self.weights(())
        w["other"] = [("kernel", self.rng.randn(self.H, 3).astype(np.float32)),
                      ("bias", self.rng.randn(3).astype(np.float32))]
        src, seq = os.path.join(self.tmp, "two.h5"), os.path.join(self.tmp, "seq.h5")
        write_keras2_h5(src, layers, w, model_config=functional)
        write_keras2_h5(seq, [emb, lstm, out], w)
        r = pyutil.convert(src, os.path.join(self.tmp, "two_none"), "--vocab", self.vocab())
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("2 outputs (dense_out, other); choose one with --output NAME", r.stderr)
        r = pyutil.convert(src, os.path.join(self.tmp, "two_other"), "--vocab", self.vocab(), "--output", "other")
        self.assertEqual(r.returncode, 1, r.stderr)  # 3 outputs for a 9-token vocabulary: not an LM head
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        a, b = os.path.join(self.tmp, "two_out"), os.path.join(self.tmp, "seq_out")
        pyutil.convert_ok(self, src, a, "--vocab", self.vocab(), "--output", "dense_out")
        pyutil.convert_ok(self, seq, b, "--vocab", self.vocab())
        ctxs = self.contexts()
        for g, h in zip(pyutil.predict_logprobs(a, ctxs), pyutil.predict_logprobs(b, ctxs)):
            np.testing.assert_array_equal(g, h)

    def refused(self, layers, w, *want):
        src = os.path.join(self.tmp, "bad.h5")
        write_keras2_h5(src, layers, w)
        r = pyutil.convert(src, os.path.join(self.tmp, "bad"), "--vocab", self.vocab())
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        for s in want:
            self.assertIn(s, r.stderr)

    def test_refusals(self):
        emb = {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": self.V, "output_dim": self.E}}
        w = self.weights()
        self.refused([emb, lstm_cfg("lstm", self.H, "elu"), dense_cfg("dense_h0", 5, "relu"),
                      dense_cfg("dense_out", self.V, "softmax")], w, "'lstm'", "activation='elu'")
        self.refused([emb, lstm_cfg("lstm", self.H, "tanh"), dense_cfg("dense_h0", 5, "softplus"),
                      dense_cfg("dense_out", self.V, "softmax")], w, "'dense_h0'", "softplus")
        self.refused([emb, lstm_cfg("lstm", self.H, "tanh"), dense_cfg("dense_h0", 5, "relu"),
                      dense_cfg("dense_out", self.V, "relu")], w, "'dense_out'", "output activation 'relu'")


if __name__ == "__main__":
    unittest.main()
