"""Keras GRU (both reset conventions, Keras 2.0's hard_sigmoid one included) and SimpleRNN layers: Keras 1, 2
model.save() .h5 files written with h5py (test_import_keras1's and test_import_keras_v2's layouts, CuDNNGRU too),
a Keras 3 .keras zip and a TF.js layers model, converted to format v3. Every next-token log-prob of the directory evaluated in float64
(lstmlm_dir_ref) within 1e-6 of a float64 numpy model written here from Keras' documented cells on Keras' own
tensors (kernel [in, 3H] in column blocks z, r, h; a reset_after GRU's bias [2, 3H]: input then recurrent), and
lstmlm's (predict, score) within 1e-4. The real Keras 2.0.4 GRU of ../shared/data (a classifier, no LM) gives
its GRU weights to an LM built around them, and is itself refused."""
import io
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import zipfile

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel
from convert.test_import_keras1 import write_keras1_h5
from convert.test_import_keras_v2 import dense_cfg, write_keras2_h5

TOL = 1e-4
TOL_F64 = 1e-6


def check_converted(test, out, ref, V, rng, n=10):
    """The directory `out` against ref(ids) -> ln p(next | ids) (float64, from the framework's tensors): its
    float64 evaluation within TOL_F64, `lstmlm predict` within TOL, `lstmlm score --ids` within TOL of the
    float64 evaluation (the CLI checks skip without LSTMLM_CLI). Returns the worst float64 difference."""
    ctxs = [[int(i) for i in rng.randint(0, V, size=rng.randint(1, 12))] for _ in range(n)]
    dm = DirModel(out)
    worst64 = max(float(np.abs(dm.next_logprobs(c) - ref(c)).max()) for c in ctxs)
    print(f"  float64 directory vs framework reference: max |d log-prob| {worst64:.2e}", flush=True)
    test.assertLess(worst64, TOL_F64)
    if not pyutil.CLI or not os.path.exists(pyutil.CLI):
        print("  (lstmlm CLI checks skipped: LSTMLM_CLI not set)", flush=True)
        return worst64
    worst = 0.0
    for c, got in zip(ctxs, pyutil.predict_logprobs(out, ctxs)):
        worst = max(worst, float(np.abs(got - ref(c)).max()))
    print(f"  lstmlm predict: max |d log-prob| {worst:.2e} over {len(ctxs)} contexts", flush=True)
    test.assertLess(worst, TOL)
    ids = [int(i) for i in rng.randint(0, V, size=20)]
    r = subprocess.run([pyutil.CLI, "score", "-m", out, "--ids", "--output-format", "jsonl"],
                       input=" ".join(map(str, ids)) + "\n", capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr)
    rec = json.loads(r.stdout.splitlines()[0])
    test.assertEqual([w["id"] for w in rec["words"]], ids)
    got = np.array([w["logprob"] for w in rec["words"][1:]], dtype=np.float64)
    want = dm.token_logprobs(ids)
    test.assertLess(float(np.abs(got - want).max()), TOL, "lstmlm score vs the float64 evaluation")
    return worst64


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def hard_sigmoid(x):  # Keras 2: clip(0.2 x + 0.5, 0, 1)
    return np.clip(0.2 * x + 0.5, 0.0, 1.0)


ACT = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid}


def gru_step(x, h, kernel, rec, bias, reset_after, act, ract):
    """Keras' GRUCell: z, r, hh from column blocks z, r, h; h' = z h + (1 - z) hh."""
    H = rec.shape[0]
    if reset_after:
        mx = x @ kernel + bias[0]
        mh = h @ rec + bias[1]
        z = ract(mx[:H] + mh[:H])
        r = ract(mx[H:2 * H] + mh[H:2 * H])
        hh = act(mx[2 * H:] + r * mh[2 * H:])
    else:
        mx = x @ kernel + bias
        z = ract(mx[:H] + h @ rec[:, :H])
        r = ract(mx[H:2 * H] + h @ rec[:, H:2 * H])
        hh = act(mx[2 * H:] + (r * h) @ rec[:, 2 * H:])
    return z * h + (1 - z) * hh


def rnn_step(x, h, kernel, rec, bias, act):
    return act(x @ kernel + bias + h @ rec)


def reference(ids, emb, cells, dense_k, dense_b):
    """ln softmax of the output Dense after the ids, float64; cells: [(step function, hidden size)]."""
    hs = [np.zeros(n) for _, n in cells]
    for t in ids:
        x = emb[t]
        for i, (step, _) in enumerate(cells):
            hs[i] = step(x, hs[i])
            x = hs[i]
    z = x @ dense_k + dense_b
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def keras3_weights_h5(layers, rnn=()):
    """The bytes of a Keras 3 weights file (model.weights.h5 of a .keras zip, or save_weights' .weights.h5):
    layers [(name, [arrays])]; a recurrent layer's (named in rnn) variables in layers/<name>/cell/vars."""
    import h5py
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        for name, arrays in layers:
            v = f.create_group(f"layers/{name}/cell/vars" if name in rnn else f"layers/{name}/vars")
            v.attrs["name"] = name + "_cell" if name in rnn else name
            for i, a in enumerate(arrays):
                v[str(i)] = a
            if name in rnn:
                f.create_group(f"layers/{name}/vars").attrs["name"] = name
    return buf.getvalue()


def rnn_cfg(cls, name, units, **kw):
    return {"class_name": cls, "config": dict({"name": name, "trainable": True, "units": units, "use_bias": True,
                                               "return_sequences": False}, **kw)}


class KerasCellsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_kcells_")
        self.rng = np.random.RandomState(11)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_model(self, layers, weights, ref, V, keras_version="2.9.0", expect_cells=None, write=None,
                  name="m.h5"):
        """write(path): the source file; default a Keras 2 model.save() .h5 of layers and weights."""
        src = os.path.join(self.tmp, name)
        if write:
            write(src)
        else:
            write_keras2_h5(src, layers, weights, keras_version=keras_version)
        vocab = os.path.join(self.tmp, "vocab.json")
        with open(vocab, "w") as f:
            json.dump([f"w{i}" for i in range(V)], f)
        out = os.path.join(self.tmp, "out")
        pyutil.convert_ok(self, src, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["format_version"], 3)
        if expect_cells:
            self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], expect_cells)
        check_converted(self, out, ref, V, self.rng)
        return cfg

    def arrays(self, *shapes, scale=0.5):
        return [(self.rng.randn(*s) * scale).astype(np.float32) for s in shapes]

    def test_gru_reset_after_then_simple_rnn_relu(self):
        V, E, H1, H2 = 13, 5, 7, 6
        emb, k1, r1, b1, k2, r2, b2, dk, db = self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (2, 3 * H1),
                                                          (H1, H2), (H2, H2), (H2,), (H2, V), (V,))
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V, "output_dim": E}},
                  rnn_cfg("GRU", "gru", H1, activation="tanh", recurrent_activation="sigmoid", reset_after=True,
                          return_sequences=True),
                  rnn_cfg("SimpleRNN", "rnn", H2, activation="relu"), dense_cfg("dense", V, "softmax")]
        weights = {"embedding": [("embeddings", emb)],
                   "gru": [("kernel", k1), ("recurrent_kernel", r1), ("bias", b1)],
                   "rnn": [("kernel", k2), ("recurrent_kernel", r2), ("bias", b2)],
                   "dense": [("kernel", dk), ("bias", db)]}
        f64 = lambda a: a.astype(np.float64)
        cells = [(lambda x, h: gru_step(x, h, f64(k1), f64(r1), f64(b1), True, np.tanh, sigmoid), H1),
                 (lambda x, h: rnn_step(x, h, f64(k2), f64(r2), f64(b2), ACT["relu"]), H2)]
        cfg = self.run_model(layers, weights, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V,
                             expect_cells=["gru", "rnn"])
        self.assertTrue(cfg["layers"][0]["reset_after"])
        self.assertEqual(cfg["source"]["trainable"], {"embedding": True, "gru_l0": True, "rnn_l1": True,
                                                      "decoder": True})

    def test_gru_reset_before_hard_sigmoid_keras2(self):
        # Keras 2.2's GRU: no reset_after key (false), one bias [3H], hard_sigmoid gates; under an LSTM.
        V, E, H1, H2 = 11, 4, 6, 5
        emb, k1, r1, b1, k2, r2, b2, dk, db = self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (3 * H1,),
                                                          (H1, 4 * H2), (H2, 4 * H2), (4 * H2,), (H2, V), (V,))
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V, "output_dim": E}},
                  rnn_cfg("GRU", "gru", H1, activation="tanh", recurrent_activation="hard_sigmoid",
                          return_sequences=True),
                  rnn_cfg("LSTM", "lstm", H2, activation="tanh", recurrent_activation="sigmoid"),
                  dense_cfg("dense", V, "softmax")]
        weights = {"embedding": [("embeddings", emb)],
                   "gru": [("kernel", k1), ("recurrent_kernel", r1), ("bias", b1)],
                   "lstm": [("kernel", k2), ("recurrent_kernel", r2), ("bias", b2)],
                   "dense": [("kernel", dk), ("bias", db)]}
        f64 = lambda a: a.astype(np.float64)

        def lstm_step(x, state):  # Keras' LSTMCell, columns i f c o; the state is (h, c)
            h, c = state if isinstance(state, tuple) else (state, np.zeros(H2))
            z = x @ f64(k2) + h @ f64(r2) + f64(b2)
            i, f, g, o = (z[j * H2:(j + 1) * H2] for j in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            return sigmoid(o) * np.tanh(c), c

        def ref(ids):
            h1, h2, c2 = np.zeros(H1), np.zeros(H2), np.zeros(H2)
            for t in ids:
                h1 = gru_step(f64(emb)[t], h1, f64(k1), f64(r1), f64(b1), False, np.tanh, hard_sigmoid)
                h2, c2 = lstm_step(h1, (h2, c2))
            z = h2 @ f64(dk) + f64(db)
            z = z - z.max()
            return z - np.log(np.exp(z).sum())

        cfg = self.run_model(layers, weights, ref, V, keras_version="2.2.4", expect_cells=["gru", "lstm"])
        self.assertFalse(cfg["layers"][0]["reset_after"])
        self.assertEqual(cfg["layers"][0]["recurrent_activation"], "hard_sigmoid")

    def test_real_keras204_gru_weights(self):
        # The GRU of a real Keras 2.0.4 file (reset before, hard_sigmoid, bias [3H]) in an LM around it: its
        # embedding and GRU, a softmax Dense made here; the file itself is a classifier and is refused.
        import h5py
        path = pyutil.data("keras204-h5-gru-hardsigmoid-imdb-classifier", "gru.h5")
        r = pyutil.convert(path, os.path.join(self.tmp, "refused"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("a 2-unit sigmoid classifier head, not a next-token softmax", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        with h5py.File(path, "r") as f:
            g = f["model_weights"]
            emb = np.array(g["embedding_2/embedding_2/embeddings:0"])
            k, rk, b = (np.array(g[f"gru_2/gru_2/{n}:0"]) for n in ("kernel", "recurrent_kernel", "bias"))
        V, H = 300, k.shape[1] // 3  # the first 300 words: enough ids, a small decoder
        emb = emb[:V]
        dk, db = self.arrays((H, V), (V,))
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V,
                                                         "output_dim": emb.shape[1]}},
                  rnn_cfg("GRU", "gru", H, activation="tanh", recurrent_activation="hard_sigmoid"),
                  dense_cfg("dense", V, "softmax")]
        weights = {"embedding": [("embeddings", emb)],
                   "gru": [("kernel", k), ("recurrent_kernel", rk), ("bias", b)],
                   "dense": [("kernel", dk), ("bias", db)]}
        f64 = lambda a: a.astype(np.float64)
        cells = [(lambda x, h: gru_step(x, h, f64(k), f64(rk), f64(b), False, np.tanh, hard_sigmoid), H)]
        self.run_model(layers, weights, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V,
                       keras_version="2.0.4", expect_cells=["gru"])

    def test_keras1_gru_per_gate_then_simple_rnn(self):
        # Keras 1.2: the GRU's nine per-gate arrays (W_z, U_z, b_z, W_r, ...; consume_less 'cpu'), inner_activation
        # hard_sigmoid (Keras 1's clip(0.2x + 0.5)), reset before W_h; a SimpleRNN's W, U, b.
        V, E, H1, H2 = 9, 4, 5, 6
        emb, k1, r1, b1, k2, r2, b2, dk, db = self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (3 * H1,),
                                                          (H1, H2), (H2, H2), (H2,), (H2, V), (V,))
        gates = {g: slice(j * H1, (j + 1) * H1) for j, g in enumerate("zrh")}
        w = {"embedding_1": {"embedding_1_W": emb},
             "gru_1": {f"gru_1_{a}_{g}": (k1[:, gates[g]] if a == "W" else r1[:, gates[g]] if a == "U"
                                          else b1[gates[g]]) for g in "zrh" for a in "WUb"},
             "simplernn_1": {"simplernn_1_W": k2, "simplernn_1_U": r2, "simplernn_1_b": b2},
             "dense_1": {"dense_1_W": dk, "dense_1_b": db}}
        cfg = [{"class_name": "Embedding", "config": {"name": "embedding_1", "input_dim": V, "output_dim": E,
                                                      "input_length": None, "mask_zero": False, "dropout": 0.0}},
               {"class_name": "GRU", "config": {"name": "gru_1", "output_dim": H1, "activation": "tanh",
                                                "inner_activation": "hard_sigmoid", "return_sequences": True,
                                                "consume_less": "cpu", "init": "glorot_uniform"}},
               {"class_name": "SimpleRNN", "config": {"name": "simplernn_1", "output_dim": H2,
                                                      "activation": "tanh", "return_sequences": False}},
               {"class_name": "Dense", "config": {"name": "dense_1", "output_dim": V, "activation": "softmax",
                                                  "bias": True}}]
        f64 = lambda a: a.astype(np.float64)
        cells = [(lambda x, h: gru_step(x, h, f64(k1), f64(r1), f64(b1), False, np.tanh, hard_sigmoid), H1),
                 (lambda x, h: rnn_step(x, h, f64(k2), f64(r2), f64(b2), np.tanh), H2)]
        out = self.run_model(None, None, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V,
                             expect_cells=["gru", "rnn"], write=lambda p: write_keras1_h5(p, cfg, w, "1.2.2"))
        self.assertEqual(out["layers"][0]["recurrent_activation"], "hard_sigmoid")
        self.assertFalse(out["layers"][0]["reset_after"])

    def test_keras3_zip_gru_hard_sigmoid_then_simple_rnn(self):
        # A Keras 3 .keras zip: GRU(reset_after=True, recurrent_activation hard_sigmoid = clip(x/6 + 0.5)) under
        # a SimpleRNN(tanh); the RNN layers' variables in layers/<name>/cell/vars.
        V, E, H1, H2 = 10, 4, 6, 5
        emb, k1, r1, b1, k2, r2, b2, dk, db = self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (2, 3 * H1),
                                                          (H1, H2), (H2, H2), (H2,), (H2, V), (V,), scale=1.5)

        def layer(cls, name, **c):
            return {"module": "keras.layers", "class_name": cls, "config": dict(name=name, trainable=True, **c),
                    "registered_name": None}
        config = {"module": "keras", "class_name": "Sequential", "config": {"name": "sequential", "layers": [
            layer("InputLayer", "input", batch_shape=[None, None]),
            layer("Embedding", "embedding", input_dim=V, output_dim=E, mask_zero=False),
            layer("GRU", "gru", units=H1, activation="tanh", recurrent_activation="hard_sigmoid", use_bias=True,
                  reset_after=True, return_sequences=True, return_state=False, go_backwards=False,
                  stateful=False, unroll=False, seed=None, dropout=0.0, recurrent_dropout=0.0),
            layer("SimpleRNN", "simple_rnn", units=H2, activation="tanh", use_bias=True, return_sequences=False,
                  return_state=False, go_backwards=False, stateful=False, unroll=False, seed=None),
            layer("Dense", "dense", units=V, activation="softmax", use_bias=True)]}}

        def write(path):
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("metadata.json", json.dumps({"keras_version": "3.3.3"}))
                z.writestr("config.json", json.dumps(config))
                z.writestr("model.weights.h5", keras3_weights_h5([
                    ("embedding", [emb]), ("gru", [k1, r1, b1]), ("simple_rnn", [k2, r2, b2]), ("dense", [dk, db])],
                    rnn=("gru", "simple_rnn")))

        hs3 = lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)  # noqa: E731
        f64 = lambda a: a.astype(np.float64)
        cells = [(lambda x, h: gru_step(x, h, f64(k1), f64(r1), f64(b1), True, np.tanh, hs3), H1),
                 (lambda x, h: rnn_step(x, h, f64(k2), f64(r2), f64(b2), np.tanh), H2)]
        out = self.run_model(None, None, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V,
                             expect_cells=["gru", "rnn"], write=write, name="m.keras")
        self.assertEqual(out["layers"][0]["recurrent_activation"], "hard_sigmoid_keras3")
        self.assertTrue(out["layers"][0]["reset_after"])

    def test_tfjs_gru_then_simple_rnn(self):
        # A TF.js layers model (tensorflowjs_converter of a Keras 2.3 model: weights named layer/weight, one
        # float32 shard): GRU(reset_after=True, sigmoid) -> SimpleRNN(relu) -> Dense(softmax), through the
        # Keras mapping.
        V, E, H1, H2 = 8, 3, 5, 4
        arrays = dict(zip(("emb/embeddings", "gru/kernel", "gru/recurrent_kernel", "gru/bias", "rnn/kernel",
                           "rnn/recurrent_kernel", "rnn/bias", "out/kernel", "out/bias"),
                          self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (2, 3 * H1), (H1, H2), (H2, H2), (H2,),
                                      (H2, V), (V,), scale=1.0)))
        layers = [{"class_name": "Embedding", "config": {"name": "emb", "input_dim": V, "output_dim": E,
                                                         "batch_input_shape": [None, None], "mask_zero": False}},
                  rnn_cfg("GRU", "gru", H1, activation="tanh", recurrent_activation="sigmoid", reset_after=True,
                          return_sequences=True, implementation=2),
                  rnn_cfg("SimpleRNN", "rnn", H2, activation="relu"), dense_cfg("out", V, "softmax")]

        def write(path):
            d = os.path.dirname(path)
            with open(os.path.join(d, "group1-shard1of1.bin"), "wb") as f:
                f.write(b"".join(a.astype("<f4").tobytes() for a in arrays.values()))
            mj = {"format": "layers-model", "generatedBy": "keras v2.3.1", "convertedBy": "hand-made",
                  "modelTopology": {"keras_version": "2.3.1", "backend": "tensorflow", "model_config": {
                      "class_name": "Sequential", "config": {"name": "s", "layers": layers}}},
                  "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": [
                      {"name": n, "shape": list(a.shape), "dtype": "float32"} for n, a in arrays.items()]}]}
            with open(path, "w") as f:
                json.dump(mj, f)

        f64 = {k: v.astype(np.float64) for k, v in arrays.items()}
        cells = [(lambda x, h: gru_step(x, h, f64["gru/kernel"], f64["gru/recurrent_kernel"], f64["gru/bias"], True,
                                        np.tanh, sigmoid), H1),
                 (lambda x, h: rnn_step(x, h, f64["rnn/kernel"], f64["rnn/recurrent_kernel"], f64["rnn/bias"],
                                        ACT["relu"]), H2)]
        self.run_model(None, None, lambda c: reference(c, f64["emb/embeddings"], cells, f64["out/kernel"],
                                                       f64["out/bias"]), V,
                       expect_cells=["gru", "rnn"], write=write, name="model.json")

    def test_cudnn_gru(self):
        # Keras 2's CuDNNGRU: fixed tanh / sigmoid, reset after, bias [6H] = input then recurrent biases.
        V, E, H = 9, 4, 5
        emb, k, rk, b, dk, db = self.arrays((V, E), (E, 3 * H), (H, 3 * H), (6 * H,), (H, V), (V,))
        layers = [{"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V, "output_dim": E}},
                  {"class_name": "CuDNNGRU", "config": {"name": "gru", "trainable": True, "units": H,
                                                        "return_sequences": False}},
                  dense_cfg("dense", V, "softmax")]
        weights = {"embedding": [("embeddings", emb)],
                   "gru": [("kernel", k), ("recurrent_kernel", rk), ("bias", b)],
                   "dense": [("kernel", dk), ("bias", db)]}
        f64 = lambda a: a.astype(np.float64)  # noqa: E731
        b2 = f64(b).reshape(2, 3 * H)
        cells = [(lambda x, h: gru_step(x, h, f64(k), f64(rk), b2, True, np.tanh, sigmoid), H)]
        cfg = self.run_model(layers, weights, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V,
                             keras_version="2.2.4", expect_cells=["gru"])
        self.assertTrue(cfg["layers"][0]["reset_after"])

    def test_keras3_weights_only_gru(self):
        # save_weights' .weights.h5 of Embedding -> GRU(reset_after) -> LSTM -> Dense: the cells from the shapes
        # (recurrent_kernel [H, 3H] with bias [2, 3H]; [H, 4H]), the recurrent activation from the command line.
        V, E, H1, H2 = 9, 4, 5, 6
        emb, k1, r1, b1, k2, r2, b2, dk, db = self.arrays((V, E), (E, 3 * H1), (H1, 3 * H1), (2, 3 * H1),
                                                          (H1, 4 * H2), (H2, 4 * H2), (4 * H2,), (H2, V), (V,))

        def write(path):
            with open(path, "wb") as f:
                f.write(keras3_weights_h5([("dense", [dk, db]), ("embedding", [emb]), ("gru", [k1, r1, b1]),
                                           ("lstm", [k2, r2, b2])], rnn=("gru", "lstm")))
        f64 = lambda a: a.astype(np.float64)  # noqa: E731
        hs3 = lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)  # noqa: E731

        def ref(ids):
            h1, h2, c2 = np.zeros(H1), np.zeros(H2), np.zeros(H2)
            for t in ids:
                h1 = gru_step(f64(emb)[t], h1, f64(k1), f64(r1), f64(b1), True, np.tanh, hs3)
                z = h1 @ f64(k2) + h2 @ f64(r2) + f64(b2)
                i, f, g, o = (z[j * H2:(j + 1) * H2] for j in range(4))
                c2 = hs3(f) * c2 + hs3(i) * np.tanh(g)
                h2 = hs3(o) * np.tanh(c2)
            z = h2 @ f64(dk) + f64(db)
            return z - z.max() - np.log(np.exp(z - z.max()).sum())
        src = os.path.join(self.tmp, "m.weights.h5")
        write(src)
        vocab = os.path.join(self.tmp, "vocab.json")
        with open(vocab, "w") as f:
            json.dump([f"w{i}" for i in range(V)], f)
        out = os.path.join(self.tmp, "out")
        pyutil.convert_ok(self, src, out, "--vocab", vocab, "--recurrent-activation", "hard_sigmoid")
        cfg = pyutil.read_config(out)
        self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], ["gru", "lstm"])
        self.assertTrue(cfg["layers"][0]["reset_after"])
        check_converted(self, out, ref, V, self.rng)
        # A SimpleRNN's activation is in no weight.
        with open(src, "wb") as f:
            f.write(keras3_weights_h5([("dense", [self.arrays((H1, V))[0], db]), ("embedding", [emb]),
                                       ("rnn", self.arrays((E, H1), (H1, H1), (H1,)))], rnn=("rnn",)))
        r = pyutil.convert(src, out + "2", "--vocab", vocab, "--recurrent-activation", "sigmoid")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("is a SimpleRNN: its activation (tanh or relu) is in no weight", r.stderr)

    def test_refusals(self):
        V, E, H = 7, 3, 4
        emb, k, rk, b, dk, db = self.arrays((V, E), (E, 3 * H), (H, 3 * H), (3 * H,), (H, V), (V,))
        weights = {"embedding": [("embeddings", emb)], "gru": [("kernel", k), ("recurrent_kernel", rk), ("bias", b)],
                   "dense": [("kernel", dk), ("bias", db)]}
        emb_cfg = {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V, "output_dim": E}}

        def refused(gru, keras_version="2.9.0", w=weights):
            src = os.path.join(self.tmp, "bad.h5")
            write_keras2_h5(src, [emb_cfg, gru, dense_cfg("dense", V, "softmax")], w, keras_version=keras_version)
            r = pyutil.convert(src, os.path.join(self.tmp, "bad_out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertNotIn("Traceback", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            return r.stderr

        # Keras >= 2.3 always writes reset_after: a config without it is not guessed.
        self.assertIn("has no reset_after", refused(rnn_cfg("GRU", "gru", H, activation="tanh",
                                                            recurrent_activation="sigmoid")))
        # A reset_after GRU needs its two biases.
        self.assertIn("bias [2, 3H]", refused(rnn_cfg("GRU", "gru", H, activation="tanh",
                                                      recurrent_activation="sigmoid", reset_after=True)))
        self.assertIn("activation='sigmoid'", refused(rnn_cfg("SimpleRNN", "gru", H, activation="sigmoid")))
        self.assertIn("reset_after", refused(rnn_cfg("LSTM", "gru", H, activation="tanh",
                                                     recurrent_activation="sigmoid", reset_after=True)))


if __name__ == "__main__":
    unittest.main()
