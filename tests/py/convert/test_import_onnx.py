"""The ONNX reader (python/lstmlm/convert/onnx_model.py).

1. The official ONNX LSTM node tests (../shared/data/onnx-backend-node-lstm): the reader turns each LSTM node
   into canonical i, f, g, o weights, a float64 numpy LSTM written here from PyTorch's documented semantics
   runs them, and the node test's expected Y / Y_h / Y_c must come out within 1e-5.
2. The tf2onnx export of a Keras model (onnx-keras-nextword-pkrupee) against a numpy Keras LSTM reading the
   .h5 with h5py, through `lstmlm predict`; and the .onnx against the .h5 conversion.
3. The torch.onnx files (onnx-pytorch-lstm-patterns, not language models: refused) through the constant
   folder, and a torch.onnx export of a small two-layer LM made here.
4. Refusals of what format v1 cannot run, on tiny graphs built with onnx.helper, and of damaged files.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

import pyutil
from fidelity.test_real_models_keras_torch import keras_words

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError as e:
    onnx = None
    print(f"SKIP: test_import_onnx needs python3-onnx ({e})", file=sys.stderr)

if onnx is not None:
    from lstmlm.convert import onnx_model
    from lstmlm.convert.common import ConvertError

NODE = "onnx-backend-node-lstm"


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def torch_lstm(x, w_ih, w_hh, b, ract=sigmoid, h=None, c=None, act=np.tanh):
    """PyTorch nn.LSTM (docs), one layer, float64: x [T, B, in]; rows of w_ih / w_hh / b are i, f, g, o.
    `act`: the cell activation (ONNX's g and h; tanh in PyTorch). Returns (Y [T, B, H], h_T, c_T)."""
    H = w_hh.shape[1]
    h = np.zeros((x.shape[1], H)) if h is None else h
    c = np.zeros((x.shape[1], H)) if c is None else c
    ys = []
    for xt in x:
        z = xt @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = ract(z[:, :H]), ract(z[:, H:2 * H]), act(z[:, 2 * H:3 * H]), ract(z[:, 3 * H:])
        c = f * c + i * g
        h = o * act(c)
        ys.append(h)
    return np.stack(ys), h, c


RACT = {"sigmoid": sigmoid, "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0)}


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def node_test(name):
    """(model, {input name: array}, {output name: array}) of one backend node test."""
    d = pyutil.data(NODE, name)
    m = onnx.load(os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    ins = {i.name: read_pb(os.path.join(ds, f"input_{k}.pb")) for k, i in enumerate(m.graph.input)}
    outs = {o.name: read_pb(os.path.join(ds, f"output_{k}.pb")) for k, o in enumerate(m.graph.output)}
    return m, ins, outs


def read_node(node, values):
    return onnx_model.lstm_node(node, values.get, lambda n: n in values and not np.any(values[n]), "test")


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class BackendNodeTests(unittest.TestCase):
    def check_node(self, name):
        m, ins, outs = node_test(name)
        node = m.graph.node[0]
        lstm = read_node(node, ins)
        x = ins[node.input[0]].astype(np.float64)
        if lstm["layout"] == 1:
            x = x.transpose(1, 0, 2)  # [batch, seq, in] -> [seq, batch, in]
        y, h, c = torch_lstm(x, lstm["weight_ih"], lstm["weight_hh"], lstm["bias"], RACT[lstm["recurrent_activation"]])
        if lstm["layout"] == 0:
            got = {"Y": y[:, None], "Y_h": h[None], "Y_c": c[None]}  # [seq, dir, batch, H], [dir, batch, H]
        else:
            got = {"Y": y.transpose(1, 0, 2)[:, :, None], "Y_h": h[:, None], "Y_c": c[:, None]}
        names = dict(zip(node.output, ("Y", "Y_h", "Y_c")))
        self.assertTrue(outs)
        for out, want in outs.items():
            self.assertEqual(got[names[out]].shape, want.shape, out)
            self.assertLess(np.abs(got[names[out]] - want).max(), 1e-5, f"{name}: {out}")

    def test_lstm_defaults(self):
        self.check_node("test_lstm_defaults")

    def test_lstm_with_initial_bias(self):
        self.check_node("test_lstm_with_initial_bias")

    def test_lstm_batchwise(self):
        self.check_node("test_lstm_batchwise")

    def test_lstm_with_peepholes_and_sequence_lens_refused(self):
        # The node gives sequence_lens, which an LM never needs (its peepholes are format v3:
        # test_import_onnx_cells checks them against this test's expected output).
        m, ins, _ = node_test("test_lstm_with_peepholes")
        with self.assertRaisesRegex(ConvertError, "sequence_lens is given"):
            read_node(m.graph.node[0], ins)

    def test_hardsigmoid_default(self):
        # The HardSigmoid op's defaults are what the LSTM reader assumes when activation_alpha/beta are absent.
        m, ins, outs = node_test("test_hardsigmoid_default")
        self.assertFalse(m.graph.node[0].attribute)
        alpha, beta = onnx_model.HARD_SIGMOID_DEFAULTS
        x, want = ins["x"], outs["y"]
        self.assertLess(np.abs(np.clip(alpha * x + beta, 0, 1) - want).max(), 1e-6)
        self.assertEqual(onnx_model._activations({"activations": ["HardSigmoid", "Tanh", "Tanh"]}, "t")[0],
                         ("hardsigmoid", 0.2, 0.5))


# ----------------------------------------------------------------------------------------- tiny graphs
def tiny_lm(V=7, E=4, H=5, seed=0, lstm_attrs=None, extra_inputs=(), activations=None, W_dirs=1):
    """An LM graph as tf2onnx writes one: ids [1, T] -> Cast -> Gather(emb) -> Transpose -> LSTM -> Squeeze
    -> MatMul -> Add -> Softmax; returns (ModelProto, canonical weights dict for a numpy reference)."""
    rng = np.random.RandomState(seed)
    emb, w, r, b = (rng.randn(*s).astype(np.float32) * 0.5 for s in
                    ((V, E), (W_dirs, 4 * H, E), (W_dirs, 4 * H, H), (W_dirs, 8 * H)))
    dec, dec_b = rng.randn(H, V).astype(np.float32), rng.randn(V).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((emb, "emb"), (w, "W"), (r, "R"), (b, "B"), (dec, "dec"), (dec_b, "dec_b"),
              (np.array([0], dtype=np.int64), "ax0"), (np.array([1], dtype=np.int64), "ax1"))]
    inputs = ["xt", "W", "R", "B"] + list(extra_inputs)
    for name, arr in getattr(extra_inputs, "arrays", {}).items():
        inits.append(numpy_helper.from_array(arr, name))
    attrs = dict(hidden_size=H, **(lstm_attrs or {}))
    if activations:
        attrs["activations"] = activations
    nodes = [
        helper.make_node("Cast", ["ids"], ["ids64"], to=TensorProto.INT64),
        helper.make_node("Gather", ["emb", "ids64"], ["e"], axis=0),
        helper.make_node("Transpose", ["e"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("LSTM", inputs, ["Y", "Y_h"], name="lstm1", **attrs),
        helper.make_node("Squeeze", ["Y", "ax1"], ["y"]),
        helper.make_node("MatMul", ["y", "dec"], ["logits0"]),
        helper.make_node("Add", ["logits0", "dec_b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, None])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [None, 1, V])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="test")
    perm = [0, 2, 3, 1]  # iofc -> ifgo block indices
    blocks = lambda a: np.concatenate([a[k * H:(k + 1) * H] for k in perm]).astype(np.float64)  # noqa: E731
    ref = {"emb": emb.astype(np.float64), "w_ih": blocks(w[0]), "w_hh": blocks(r[0]),
           "b": blocks(b[0, :4 * H] + b[0, 4 * H:]), "dec": dec.astype(np.float64), "dec_b": dec_b.astype(np.float64)}
    return m, ref


class Inputs(list):
    """Extra LSTM inputs (names, in order) with the constant arrays to add as initializers."""

    def __init__(self, names, arrays):
        super().__init__(names)
        self.arrays = arrays


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class TinyGraphTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_onnx_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def save(self, m, name):
        path = os.path.join(self.tmp, name + ".onnx")
        onnx.save(m, path)
        return path

    def vocab(self, V):
        path = os.path.join(self.tmp, f"vocab{V}.json")
        with open(path, "w") as f:
            f.write("[" + ",".join(f'"w{i}"' for i in range(V)) + "]")
        return path

    def refused(self, m, name, pattern):
        r = pyutil.convert(self.save(m, name), os.path.join(self.tmp, name + "_out"), "--vocab", self.vocab(7))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertRegex(r.stderr, pattern)
        return r.stderr

    def test_tiny_converts_and_matches(self):
        for acts, ract in ((None, "sigmoid"), (["HardSigmoid", "Tanh", "Tanh"], "hard_sigmoid")):
            m, ref = tiny_lm(activations=acts, seed=3)
            out = os.path.join(self.tmp, f"tiny_{ract}")
            pyutil.convert_ok(self, self.save(m, f"tiny_{ract}"), out, "--vocab", self.vocab(7))
            self.assertEqual(pyutil.read_config(out)["layers"][0]["recurrent_activation"], ract)
            contexts = [[1], [1, 2, 3], [6, 0, 5, 4, 2]]
            for ctx, got in zip(contexts, pyutil.predict_logprobs(out, contexts)):
                x = ref["emb"][ctx][:, None]
                _, h, _ = torch_lstm(x, ref["w_ih"], ref["w_hh"], ref["b"], RACT[ract])
                want = log_softmax(h[0] @ ref["dec"] + ref["dec_b"])
                self.assertLess(np.abs(got - want).max(), 1e-4, (ract, ctx))

    def test_bidirectional_refused(self):
        m, _ = tiny_lm(lstm_attrs={"direction": "bidirectional"}, W_dirs=2)
        self.refused(m, "bidi", r"lstm1.*LSTM.*direction bidirectional; only forward")

    def test_reverse_refused(self):
        self.refused(tiny_lm(lstm_attrs={"direction": "reverse"})[0], "rev", r"lstm1.*direction reverse")

    def test_input_forget_refused(self):
        self.refused(tiny_lm(lstm_attrs={"input_forget": 1})[0], "ifg", r"lstm1.*input_forget=1")

    def test_clip_refused(self):
        self.refused(tiny_lm(lstm_attrs={"clip": 3.0})[0], "clip", r"lstm1.*clip=3.0 clips the gates' inputs")

    def test_peepholes_of_the_wrong_shape_refused(self):
        extra = Inputs(["", "", "", "P"], {"P": np.ones((1, 12), dtype=np.float32)})
        self.refused(tiny_lm(extra_inputs=extra)[0], "peep", r"lstm1.*P \(peepholes\) has shape \[1, 12\], expected "
                     r"\[1, 15\]")

    def test_nonzero_initial_state_refused(self):
        extra = Inputs(["", "h0"], {"h0": np.ones((1, 1, 5), dtype=np.float32)})
        self.refused(tiny_lm(extra_inputs=extra)[0], "h0", r"initial_h is not all zeros")

    def test_zero_initial_state_accepted(self):
        extra = Inputs(["", "z", "z"], {"z": np.zeros((1, 1, 5), dtype=np.float32)})
        path = self.save(tiny_lm(extra_inputs=extra)[0], "zero_state")
        pyutil.convert_ok(self, path, os.path.join(self.tmp, "zero_state_out"), "--vocab", self.vocab(7))

    def test_cell_activation_refused(self):
        self.refused(tiny_lm(activations=["Sigmoid", "Relu", "Tanh"])[0], "relu", r"g=relu, h=tanh.*one activation")
        self.refused(tiny_lm(activations=["Sigmoid", "Elu", "Elu"])[0], "elu", r"g=elu")

    def test_cell_activations_of_format_v2(self):
        # ONNX's activations (operator spec): Relu(x) = max(0, x), Affine(x) = alpha x + beta.
        for acts, name, fn in ((["Sigmoid", "Relu", "Relu"], "relu", lambda x: np.maximum(x, 0.0)),
                               (["Sigmoid", "Sigmoid", "Sigmoid"], "sigmoid", sigmoid),
                               (["Sigmoid", "Affine", "Affine"], "linear", lambda x: x)):
            m, ref = tiny_lm(activations=acts, seed=4)
            if name == "linear":
                for node in m.graph.node:
                    if node.op_type == "LSTM":
                        node.attribute.extend([helper.make_attribute("activation_alpha", [1.0, 1.0]),
                                               helper.make_attribute("activation_beta", [0.0, 0.0])])
            out = os.path.join(self.tmp, f"tiny_v2_{name}")
            pyutil.convert_ok(self, self.save(m, f"tiny_v2_{name}"), out, "--vocab", self.vocab(7))
            cfg = pyutil.read_config(out)
            self.assertEqual((cfg["format_version"], cfg["layers"][0]["activation"]), (2, name))
            contexts = [[1], [1, 2, 3], [6, 0, 5, 4, 2]]
            for ctx, got in zip(contexts, pyutil.predict_logprobs(out, contexts)):
                _, h, _ = torch_lstm(ref["emb"][ctx][:, None], ref["w_ih"], ref["w_hh"], ref["b"], act=fn)
                want = log_softmax(h[0] @ ref["dec"] + ref["dec_b"])
                self.assertLess(np.abs(got - want).max(), 1e-4, (name, ctx))

    def test_gate_activation_refused(self):
        self.refused(tiny_lm(activations=["Tanh", "Tanh", "Tanh"])[0], "tanhgate", r"gate activation \(f\) tanh")

    def test_hardsigmoid_other_alpha_refused(self):
        m, _ = tiny_lm(activations=["HardSigmoid", "Tanh", "Tanh"], lstm_attrs={"activation_alpha": [0.25]})
        self.refused(m, "hs025", r"HardSigmoid alpha 0.25 beta 0.5")

    def test_node_between_lstm_and_dense_refused(self):
        m, _ = tiny_lm()
        g = m.graph
        squeeze = [n for n in g.node if n.op_type == "Squeeze"][0]
        squeeze.output[0] = "y0"
        g.node.insert(list(g.node).index(squeeze) + 1, helper.make_node("Relu", ["y0"], ["y"], name="act"))
        self.refused(m, "relu_mid", r"node 'act' \(Relu\) feeds the output Dense; expected an LSTM, GRU or RNN node")

    def test_cycle_refused(self):
        m, _ = tiny_lm()
        lstm = [n for n in m.graph.node if n.op_type == "LSTM"][0]
        lstm.input[0] = "y"  # the LSTM reads the Squeeze of its own output
        self.refused(m, "cycle", r"a cycle in the graph")

    def test_several_outputs_refused(self):
        m, _ = tiny_lm()
        m.graph.output.append(helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None))
        self.refused(m, "two_out", r"the graph has 2 outputs")

    def test_truncated_file(self):
        m, _ = tiny_lm()
        data = m.SerializeToString()
        path = os.path.join(self.tmp, "truncated.onnx")
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
        r = pyutil.convert(path, os.path.join(self.tmp, "trunc_out"), "--vocab", self.vocab(7))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(path, r.stderr)
        self.assertIn("not a readable ONNX model", r.stderr)

    def test_not_onnx(self):
        path = os.path.join(self.tmp, "text.onnx")
        with open(path, "w") as f:
            f.write("this is not a protobuf\n")
        r = pyutil.convert(path, os.path.join(self.tmp, "text_out"), "--vocab", self.vocab(7))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(path, r.stderr)

    def test_onnx_missing(self):
        # Run convert.py with `import onnx` failing: one line naming the package and the interpreter.
        path = self.save(tiny_lm()[0], "missing")
        code = ("import runpy, sys; sys.modules['onnx'] = None; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        r = subprocess.run([sys.executable, "-c", code, os.path.join(pyutil.TOOLS, "convert.py"), path,
                            os.path.join(self.tmp, "missing_out"), "--vocab", self.vocab(7)],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(f"python3-onnx is not installed for {sys.executable}: apt-get install python3-onnx",
                      r.stderr)


# ---------------------------------------------------------------------------------------- real files
def keras_reference(h5path):
    """Keras 2 Embedding -> LSTM -> Dense(softmax) in float64 from the .h5 (h5py): LSTMCell's documented math,
    kernel [in, 4H] with gate blocks i, f, c, o, recurrent_activation sigmoid (the model config says so),
    activation tanh, zero initial state. Returns ctx -> ln p over the vocabulary."""
    import h5py
    with h5py.File(h5path, "r") as f:
        w = f["model_weights"]
        emb = np.asarray(w["embedding/embedding/embeddings:0"], np.float64)
        cell = w["lstm/lstm/lstm_cell"]
        k, rk, b = (np.asarray(cell[n], np.float64) for n in ("kernel:0", "recurrent_kernel:0", "bias:0"))
        dk, db = np.asarray(w["dense/dense/kernel:0"], np.float64), np.asarray(w["dense/dense/bias:0"], np.float64)
    H = rk.shape[0]

    def next_logprobs(ctx):
        h, c = np.zeros(H), np.zeros(H)
        for t in ctx:
            z = emb[t] @ k + h @ rk + b
            i, f, cc, o = sigmoid(z[:H]), sigmoid(z[H:2 * H]), np.tanh(z[2 * H:3 * H]), sigmoid(z[3 * H:])
            c = f * c + i * cc
            h = o * np.tanh(c)
        return log_softmax(h @ dk + db)
    return next_logprobs


def TorchLM(torch, batch_first):
    """Embedding(11, 6) -> LSTM(6, 8, 2 layers) -> Linear(8, 11) -> log_softmax, seeded."""
    nn = torch.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.rnn = nn.Embedding(11, 6), nn.LSTM(6, 8, num_layers=2, batch_first=batch_first)
            self.dec = nn.Linear(8, 11)

        def forward(self, x):
            return torch.log_softmax(self.dec(self.rnn(self.emb(x))[0]), -1)
    torch.manual_seed(0)
    return LM().eval()


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class RealFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_onnx_real_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_pkrupee_tf2onnx_keras(self):
        d = pyutil.data("onnx-keras-nextword-pkrupee")
        tok = os.path.join(d, "tokenizer.pickle")
        out, h5out = os.path.join(self.tmp, "pk_onnx"), os.path.join(self.tmp, "pk_h5")
        pyutil.convert_ok(self, os.path.join(d, "next_word_model.onnx"), out, "--vocab", tok)
        pyutil.convert_ok(self, os.path.join(d, "next_word_model.h5"), h5out, "--vocab", tok)
        self.assertEqual(pyutil.read_config(out)["input_length"], 5)  # Input (None, 5), as the .h5 says
        self.assertEqual(pyutil.read_vocab(out), pyutil.read_vocab(h5out))
        idx = {w: i for i, w in enumerate(pyutil.read_vocab(out))}
        with open(os.path.join(d, "pak_rupee_data.txt"), encoding="utf-8") as f:
            seq = [idx[w] for w in keras_words(f.read()) if w in idx]
        contexts = [seq[:n] for n in (1, 2, 3, 5, 8)] + [seq[k:k + 5] for k in range(10, 200, 19)] + [seq[20:60]]
        ref = keras_reference(os.path.join(d, "next_word_model.h5"))
        got = pyutil.predict_logprobs(out, contexts)
        got_h5 = pyutil.predict_logprobs(h5out, contexts)
        d_ref = max(np.abs(g - ref(c)).max() for c, g in zip(contexts, got))
        d_h5 = max(np.abs(g - gh).max() for g, gh in zip(got, got_h5))
        print(f"\npkrupee .onnx: max |d ln p| vs numpy Keras {d_ref:.3g}, vs the .h5 conversion {d_h5:.3g}",
              file=sys.stderr)
        self.assertLess(d_ref, 1e-4)
        self.assertLess(d_h5, 1e-5)
        # With the default 5-word window (input_length) both conversions predict the same text the same way.
        runs = [pyutil.run_lstmlm("predict", "-m", o, "--top", "5", "the pakistani rupee is") for o in (out, h5out)]
        self.assertEqual([r.returncode for r in runs], [0, 0], runs[0].stderr)
        self.assertEqual(runs[0].stdout, runs[1].stdout)
        # Trained on 5-word windows of its text: 0.53 nats there (uniform: ln 309 = 5.7), so the vocabulary fits.
        nll = -np.mean([ref(seq[max(0, k - 5):k])[seq[k]] for k in range(1, 60)])
        self.assertLess(nll, 0.2 * np.log(309))

    def fold_lstm(self, path):
        """The file's LSTM node through the constant folder (coli-saar's initial states are graph inputs: a
        model conversion refuses them, the weights are what is checked here)."""
        m = onnx.load(path)
        g = onnx_model.Graph(m.graph, path, onnx_model.opset(m))
        node = [n for n in m.graph.node if n.op_type == "LSTM"][0]
        return m, g, onnx_model.lstm_node(node, g.const, lambda name: True, path)

    def test_torch_patterns_fold_to_pytorch_tensors(self):
        # torch.onnx re-slices PyTorch's i, f, g, o tensors into ONNX's i, o, f, c with Slice / Concat /
        # Unsqueeze: folded and reordered back they must be the PyTorch initializers again.
        d = pyutil.data("onnx-pytorch-lstm-patterns")
        for sub, names in (("lemon234071", ("lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0",
                                            "lstm.bias_hh_l0")), ("coli-saar", ("3", "4", "5", "6"))):
            m, g, lstm = self.fold_lstm(os.path.join(d, sub, "lstm.onnx"))
            w_ih, w_hh, b_ih, b_hh = (g.const(n).astype(np.float64) for n in names)
            self.assertTrue(np.array_equal(lstm["weight_ih"], w_ih), sub)
            self.assertTrue(np.array_equal(lstm["weight_hh"], w_hh), sub)
            self.assertTrue(np.array_equal(lstm["bias"], b_ih + b_hh), sub)

    def test_torch_lemon_classifier_math(self):
        # lemon234071: LSTM -> last step -> Gemm -> LogSoftmax. The reader's canonical weights run through the
        # PyTorch-semantics LSTM give what the PyTorch tensors of the file give (within 1e-4).
        path = os.path.join(pyutil.data("onnx-pytorch-lstm-patterns"), "lemon234071", "lstm.onnx")
        m, g, lstm = self.fold_lstm(path)
        x = np.random.RandomState(0).randn(28, 2, 28)
        p = {n: g.const(n).astype(np.float64) for n in ("lstm.weight_ih_l0", "lstm.weight_hh_l0",
                                                        "lstm.bias_ih_l0", "lstm.bias_hh_l0", "linear.weight",
                                                        "linear.bias")}
        _, h_ref, _ = torch_lstm(x, p["lstm.weight_ih_l0"], p["lstm.weight_hh_l0"],
                                 p["lstm.bias_ih_l0"] + p["lstm.bias_hh_l0"])
        _, h, _ = torch_lstm(x, lstm["weight_ih"], lstm["weight_hh"], lstm["bias"])
        want = log_softmax(h_ref @ p["linear.weight"].T + p["linear.bias"])
        got = log_softmax(h @ p["linear.weight"].T + p["linear.bias"])
        self.assertLess(np.abs(got - want).max(), 1e-4)

    def test_torch_onnx_export_two_layers(self):
        # A PyTorch LM exported here with torch.onnx: with do_constant_folding the weights are initializers in
        # ONNX order, without it PyTorch's tensors re-sliced by Slice / Concat / Unsqueeze (the folder's job);
        # batch_first adds Transposes. Each converts and matches the PyTorch math of the state_dict.
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        vocab = os.path.join(self.tmp, "v11.json")
        with open(vocab, "w") as f:
            f.write('["a","b","c","d","e","f","g","h","i","j","k"]')
        for fold, batch_first in ((True, False), (False, False), (False, True)):
            lm = TorchLM(torch, batch_first)
            path = os.path.join(self.tmp, f"torch_{fold}_{batch_first}.onnx")
            shape = (1, 3) if batch_first else (3, 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(lm, torch.zeros(*shape, dtype=torch.long), path, opset_version=13,
                                  do_constant_folding=fold, input_names=["ids"], output_names=["logp"],
                                  dynamic_axes={"ids": {1 if batch_first else 0: "T"}})
            out = path[:-5]
            pyutil.convert_ok(self, path, out, "--vocab", vocab)
            cfg = pyutil.read_config(out)
            self.assertEqual(([l["hidden_size"] for l in cfg["layers"]], cfg.get("input_length")), ([8, 8], None))
            sd = {k: v.double().numpy() for k, v in lm.state_dict().items()}
            contexts = [[1], [3, 4, 5], [10, 0, 2, 7, 7, 1]]
            for ctx, got in zip(contexts, pyutil.predict_logprobs(out, contexts)):
                x = sd["emb.weight"][ctx][:, None]
                for k in range(2):
                    x, _, _ = torch_lstm(x, sd[f"rnn.weight_ih_l{k}"], sd[f"rnn.weight_hh_l{k}"],
                                         sd[f"rnn.bias_ih_l{k}"] + sd[f"rnn.bias_hh_l{k}"])
                want = log_softmax(x[-1, 0] @ sd["dec.weight"].T + sd["dec.bias"])
                self.assertLess(np.abs(got - want).max(), 1e-4, (fold, batch_first, ctx))

    def test_torch_patterns_refused(self):
        # Neither file is a language model: refused with what is missing.
        d = pyutil.data("onnx-pytorch-lstm-patterns")
        for sub, pattern in (("coli-saar", "the graph has 3 outputs"),
                             ("lemon234071", "the first LSTM reads 'input.1', a graph input")):
            r = pyutil.convert(os.path.join(d, sub, "lstm.onnx"), os.path.join(self.tmp, sub), "--vocab",
                               os.path.join(pyutil.DATA, "onnx-keras-nextword-pkrupee", "tokenizer.pickle"))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(pattern, r.stderr)


if __name__ == "__main__":
    unittest.main()
