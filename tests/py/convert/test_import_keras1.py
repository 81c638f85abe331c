"""Keras 1.x HDF5 (per-gate W_i/U_i/b_i weights, output_dim, inner_activation) and weights-only files with
--architecture: the converted model computes what Keras 1 computes, from a float64 numpy implementation of
Keras' LSTM written here from its documented semantics (not from the converter):
    z_g = x W_g + h U_g + b_g for g in i, f, c, o;  i, f, o = act(z_i), act(z_f), act(z_o)
    c' = f c + i tanh(z_c);  h' = o tanh(c')   (act = inner_activation; Keras 1/2 hard_sigmoid = clip(0.2x + 0.5, 0, 1))
Compared with `lstmlm predict` (pyutil.predict_logprobs) within 1e-4 on every next-token log-prob."""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np

import pyutil

TOL = 1e-4


def hard_sigmoid(x):
    return np.clip(0.2 * x + 0.5, 0.0, 1.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def log_softmax(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


CELL_ACTS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "linear": lambda x: x,
             "sigmoid": lambda x: sigmoid(x)}


def keras_next_logprobs(ids, vocab_size, embeddings, lstms, dense_w, dense_b, cell_act="tanh", head=()):
    """Keras Sequential [Embedding] -> LSTM... -> [Dense(act)...] -> Dense softmax on one unpadded sequence from
    the zero state. lstms: [(gates {g: (W [in, H], U [H, H], b [H])} for g in "ifco", act)] (float64);
    cell_act: the LSTM `activation` (of z_c and in h = o act(c)); head: [(W [in, units], b, act name)]."""
    a = CELL_ACTS[cell_act]
    xs = [embeddings[i] if embeddings is not None else np.eye(vocab_size)[i] for i in ids]
    for gates, act in lstms:
        H = gates["i"][1].shape[0]
        h, c, out = np.zeros(H), np.zeros(H), []
        for x in xs:
            z = {g: x @ W + h @ U + b for g, (W, U, b) in gates.items()}
            i, f, o = act(z["i"]), act(z["f"]), act(z["o"])
            c = f * c + i * a(z["c"])
            h = o * a(c)
            out.append(h)
        xs = out
    y = xs[-1]
    for W, b, act in head:
        y = CELL_ACTS[act](y @ W + b)
    return log_softmax(y @ dense_w + dense_b)


def keras2_gates(kernel, rec, bias):
    """Keras 2 concatenated [in, 4H] kernels split into the gates i, f, c, o (Keras' documented order)."""
    H = rec.shape[0]
    return {g: (kernel[:, k * H:(k + 1) * H], rec[:, k * H:(k + 1) * H], bias[k * H:(k + 1) * H])
            for k, g in enumerate("ifco")}


def contexts(rng, V, n=6, maxlen=12):
    return [list(rng.randint(0, V, size=rng.randint(1, maxlen))) for _ in range(n)]


class Keras1Case(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_keras1_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def compare(self, outdir, ref, ctxs):
        """Every next-token log-prob within 1e-4 of the float64 reference. Beyond ln p < -50 (p < 2e-22)
        float32 itself cannot do that: tfjs-keras215-nietzsche-char's Dense kernel has entries near 96, a
        logit sum of 128 such products carries ~1e-4 of float32 rounding (ln p -96.43 is 1.1e-4 off); there
        the bound is relative, 1e-4 + 2e-6 |ln p|."""
        got = pyutil.predict_logprobs(outdir, ctxs)
        worst = worst_all = 0.0
        for c, g in zip(ctxs, got):
            r = ref(c)
            self.assertFalse(np.isnan(g).any())
            d = np.abs(g - r)
            worst = max(worst, float(d[r > -50].max()))
            worst_all = max(worst_all, float(d.max()))
            self.assertTrue(np.all(d < TOL + 2e-6 * np.abs(r)), f"context {c}: {d.max()}")
        print(f"  {os.path.basename(outdir)}: max |d log-prob| {worst:.2e} (ln p > -50), {worst_all:.2e} (all) "
              f"over {len(ctxs)} contexts", flush=True)
        self.assertLess(worst, TOL)
        return worst


class Keras1RealTest(Keras1Case):
    def setUp(self):
        self.d = pyutil.data("keras1-h5-hardsigmoid-music-char")
        self.vocab = os.path.join(self.d, "charset.json")

    def reference(self, path, model_weights):
        import h5py
        with h5py.File(path, "r") as f:
            g = f["model_weights"] if model_weights else f
            lstms = []
            for name in ("lstm_1", "lstm_2"):
                L = g[name]
                lstms.append(({k: tuple(np.asarray(L[f"{name}_{a}_{k}"], dtype=np.float64) for a in "WUb")
                               for k in "ifco"}, hard_sigmoid))
            W = np.asarray(g["dense_1"]["dense_1_W"], dtype=np.float64)
            b = np.asarray(g["dense_1"]["dense_1_b"], dtype=np.float64)
        return lambda ids: keras_next_logprobs(ids, 29, None, lstms, W, b)

    def test_full_file(self):
        src = os.path.join(self.d, "gym", "model_dump.h5py")
        out = os.path.join(self.tmp, "k1full")
        pyutil.convert_ok(self, src, out, "--vocab", self.vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual([l["recurrent_activation"] for l in cfg["layers"]], ["hard_sigmoid"] * 2)
        self.assertEqual((cfg["input_length"], cfg["embedding_dim"], cfg["tokenizer"]["type"]), (200, 0, "char"))
        self.compare(out, self.reference(src, True), contexts(np.random.RandomState(1), 29))

    def test_weights_only_with_architecture(self):
        src = os.path.join(self.d, "gym", "text_model_saved.h5py")
        out = os.path.join(self.tmp, "k1w")
        pyutil.convert_ok(self, src, out, "--vocab", self.vocab, "--architecture",
                          os.path.join(self.d, "gym", "model_dump.h5py"))
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["input_length"], cfg["source"]["keras_version"]), (200, "1.0.8"))
        idx = {c: i for i, c in enumerate(pyutil.read_vocab(out))}
        seq = [idx[c] for c in "E4hzG4pzF4pzC#5kzA4hz"]
        ref = self.reference(src, False)
        self.compare(out, ref, [seq[:n] for n in range(1, len(seq) + 1, 3)] + contexts(np.random.RandomState(2), 29))
        # The trained weights know the text format: after a note and a duration letter comes "z".
        self.assertEqual(int(np.argmax(ref([idx[c] for c in "zE4h"]))), idx["z"])

    def test_weights_only_with_json_architecture(self):
        import h5py
        with h5py.File(os.path.join(self.d, "gym", "model_dump.h5py"), "r") as f:
            arch = json.loads(f.attrs["model_config"])
        p = os.path.join(self.tmp, "arch.json")
        with open(p, "w") as f:
            json.dump(dict(arch, keras_version="1.0.8"), f)  # what model.to_json() writes
        out = os.path.join(self.tmp, "k1wj")
        pyutil.convert_ok(self, os.path.join(self.d, "gym", "text_model_saved.h5py"), out, "--vocab", self.vocab,
                          "--architecture", p)
        self.compare(out, self.reference(os.path.join(self.d, "gym", "text_model_saved.h5py"), False),
                     contexts(np.random.RandomState(3), 29, n=3))

    def test_weights_only_without_architecture_refused(self):
        r = pyutil.convert(os.path.join(self.d, "gym", "text_model_saved.h5py"), os.path.join(self.tmp, "no"),
                           "--vocab", self.vocab)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--architecture", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


def write_keras1_h5(path, layers_cfg, weights, keras_version="1.0.8"):
    """A Keras 1 model.save() file: model_config (bare-list Sequential), model_weights/<layer>/<weight>."""
    import h5py
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = keras_version
        f.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": layers_cfg})
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = [l["config"]["name"].encode() for l in layers_cfg]
        for l in layers_cfg:
            name = l["config"]["name"]
            g = mw.create_group(name)
            ws = weights.get(name, {})
            g.attrs["weight_names"] = [k.encode() for k in ws]
            for k, a in ws.items():
                g[k] = a


class Keras1SyntheticTest(Keras1Case):
    """A Keras 1 Embedding -> LSTM(sigmoid inner) -> Dense(softmax) file made here, and hostile variants."""

    def make(self, name, inner="sigmoid", extra_layer=None, drop=None, activation="tanh", extra_weights=None):
        rng = np.random.RandomState(5)
        V, E, H = 7, 4, 5
        w = {"embedding_1": {"embedding_1_W": rng.randn(V, E).astype(np.float32)},
             "lstm_1": {f"lstm_1_{a}_{g}": (rng.randn(*shape) * 0.5).astype(np.float32)
                        for g in "icfo" for a, shape in (("W", (E, H)), ("U", (H, H)), ("b", (H,)))},
             "dense_1": {"dense_1_W": rng.randn(H, V).astype(np.float32), "dense_1_b": rng.randn(V).astype(np.float32)}}
        if extra_weights:
            w.update(extra_weights)
        if drop:
            del w["lstm_1"][drop]
        cfg = [{"class_name": "Embedding", "config": {"name": "embedding_1", "input_dim": V, "output_dim": E,
                                                      "input_length": None, "mask_zero": False, "dropout": 0.0}},
               {"class_name": "LSTM", "config": {"name": "lstm_1", "output_dim": H, "activation": activation,
                                                 "inner_activation": inner, "return_sequences": False,
                                                 "consume_less": "gpu", "init": "glorot_uniform"}},
               {"class_name": "Dense", "config": {"name": "dense_1", "output_dim": V, "activation": "softmax",
                                                  "bias": True}}]
        if extra_layer:
            cfg.insert(2, extra_layer)
        path = os.path.join(self.tmp, name + ".h5")
        write_keras1_h5(path, cfg, w)
        vocab = os.path.join(self.tmp, "vocab7.json")
        with open(vocab, "w") as f:
            json.dump(["a", "b", "c", "d", "e", "f", "g"], f)
        return path, vocab, w

    def test_synthetic_sigmoid(self):
        path, vocab, w = self.make("syn")
        out = os.path.join(self.tmp, "syn")
        pyutil.convert_ok(self, path, out, "--vocab", vocab)
        f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        gates = {g: tuple(f64(w["lstm_1"][f"lstm_1_{a}_{g}"]) for a in "WUb") for g in "ifco"}
        ref = lambda ids: keras_next_logprobs(ids, 7, f64(w["embedding_1"]["embedding_1_W"]), [(gates, sigmoid)],  # noqa: E731
                                              f64(w["dense_1"]["dense_1_W"]), f64(w["dense_1"]["dense_1_b"]))
        self.compare(out, ref, contexts(np.random.RandomState(0), 7))

    def refused(self, path, vocab, *want):
        r = pyutil.convert(path, os.path.join(self.tmp, "refused"), "--vocab", vocab)
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        for s in want:
            self.assertIn(s, lines[0])

    def test_unsupported_layer_refused(self):
        path, vocab, _ = self.make("conv", extra_layer={"class_name": "Convolution1D",
                                                        "config": {"name": "conv_1", "nb_filter": 5}})
        self.refused(path, vocab, "conv_1", "Convolution1D", "not supported")

    def reference(self, w, cell_act="tanh", head=()):
        f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        gates = {g: tuple(f64(w["lstm_1"][f"lstm_1_{a}_{g}"]) for a in "WUb") for g in "ifco"}
        return lambda ids: keras_next_logprobs(ids, 7, f64(w["embedding_1"]["embedding_1_W"]), [(gates, sigmoid)],  # noqa: E731
                                               f64(w["dense_1"]["dense_1_W"]), f64(w["dense_1"]["dense_1_b"]),
                                               cell_act, [(f64(W), f64(b), act) for W, b, act in head])

    def test_dense_head_is_format_v2(self):
        # LSTM(5) -> Dense(3, relu) -> Dense(7, softmax): the hidden Dense is the model's output.head.
        rng = np.random.RandomState(11)
        hw = {"dense_0_W": rng.randn(5, 3).astype(np.float32), "dense_0_b": rng.randn(3).astype(np.float32)}
        path, vocab, w = self.make("head", extra_layer={"class_name": "Dense", "config": {
            "name": "dense_0", "output_dim": 3, "activation": "relu"}}, extra_weights={"dense_0": hw})
        w["dense_1"]["dense_1_W"] = rng.randn(3, 7).astype(np.float32)
        write_keras1_h5(path, [{"class_name": "Embedding", "config": {"name": "embedding_1", "input_dim": 7,
                                                                      "output_dim": 4}},
                               {"class_name": "LSTM", "config": {"name": "lstm_1", "output_dim": 5,
                                                                 "activation": "tanh", "inner_activation": "sigmoid"}},
                               {"class_name": "Dense", "config": {"name": "dense_0", "output_dim": 3,
                                                                  "activation": "relu"}},
                               {"class_name": "Dense", "config": {"name": "dense_1", "output_dim": 7,
                                                                  "activation": "softmax"}}], w)
        out = os.path.join(self.tmp, "head")
        pyutil.convert_ok(self, path, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["format_version"], cfg["output"]["head"]), (2, [{"units": 3, "activation": "relu"}]))
        self.compare(out, self.reference(w, head=[(hw["dense_0_W"], hw["dense_0_b"], "relu")]),
                     contexts(np.random.RandomState(4), 7))

    def test_relu_cell_is_format_v2(self):
        path, vocab, w = self.make("relu", activation="relu")
        out = os.path.join(self.tmp, "relu")
        pyutil.convert_ok(self, path, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["format_version"], cfg["layers"][0]["activation"]), (2, "relu"))
        self.compare(out, self.reference(w, "relu"), contexts(np.random.RandomState(6), 7))

    def test_other_activations_refused(self):
        path, vocab, _ = self.make("softsign", activation="softsign")
        self.refused(path, vocab, "lstm_1", "softsign")
        path, vocab, _ = self.make("eluhead", extra_layer={"class_name": "Dense", "config": {
            "name": "dense_0", "output_dim": 5, "activation": "elu"}})
        self.refused(path, vocab, "dense_0", "elu")

    def test_missing_gate_weight(self):
        path, vocab, _ = self.make("missing", drop="lstm_1_U_f")
        self.refused(path, vocab, "lstm_1", "U_f")


if __name__ == "__main__":
    unittest.main()
