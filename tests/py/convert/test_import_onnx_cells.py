"""The ONNX reader's GRU, RNN and peephole LSTM nodes (python/lstmlm/convert/onnx_model.py, format v3).

1. The official ONNX operator tests (../shared/data/onnx-backend-node-lstm: test_gru_*, test_lstm_with_peepholes):
   the reader turns each node into lstmlm's canonical tensors, the float64 cells of lstmlm_dir_ref (written from
   the format's equations) run them, and the test's expected Y / Y_h must come out within 1e-5. This checks the
   reference cells themselves, and the reader's gate orders (ONNX z r h -> r z n, P = i o f).
2. Graphs made with onnx.helper: GRU with linear_before_reset 0 and 1, RNN Tanh / Relu, peepholes, converted and
   compared with numpy written here from the ONNX spec's equations; what the format cannot express (clip, other
   activations) refused in one line.
3. PyTorch LMs (nn.GRU, nn.RNN tanh / relu, nn.GRU followed by nn.LSTM) exported with torch.onnx: the converted
   directory in float64 against PyTorch's own float64 forward within 1e-6, and `lstmlm score` within 1e-4.
"""
import copy
import os
import sys
import tempfile
import unittest
import warnings

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel, gru_step, lstm_step, rnn_step

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError as e:
    onnx = None
    print(f"SKIP: test_import_onnx_cells needs python3-onnx ({e})", file=sys.stderr)

if onnx is not None:
    from lstmlm.convert import onnx_model
    from convert.test_import_onnx import node_test

TMP = pyutil.temp_root("lstmlm_onnx_cells_")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def read(node, values):
    return onnx_model.recurrent_node(node, values.get, lambda n: n in values and not np.any(values[n]), "test")


def run_canonical(layer, x):
    """Y [T, B, H] of one canonical layer (the reader's dict) over x [T, B, in], from the zero state, by the
    float64 cells of lstmlm_dir_ref."""
    cell, H = layer["cell"], layer["hidden_size"]
    w = {k: layer[k] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_ci", "weight_cf",
                               "weight_co") if k in layer}
    if cell == "lstm":
        w["bias_ih"] = layer["bias"]
    conf = {k: layer[k] for k in ("hidden_size", "recurrent_activation", "activation", "reset_after", "peepholes")
            if k in layer}
    ys = np.zeros((x.shape[0], x.shape[1], H))
    for b in range(x.shape[1]):
        h, c = np.zeros(H), np.zeros(H)
        for t in range(x.shape[0]):
            if cell == "lstm":
                h, c = lstm_step(w, conf, x[t, b], h, c)
            elif cell == "gru":
                h = gru_step(w, conf, x[t, b], h)
            else:
                h = rnn_step(w, conf, x[t, b], h)
            ys[t, b] = h
    return ys


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class OperatorConformanceTest(unittest.TestCase):
    def check(self, name, cell):
        m, ins, outs = node_test(name)
        node = copy.deepcopy(m.graph.node[0])
        self.assertEqual(node.op_type, cell.upper())
        if len(node.input) > 4 and node.input[4]:
            # sequence_lens (refused by the converter: an LM runs every step) is the full length here.
            x = ins[node.input[0]]
            self.assertTrue(np.all(ins[node.input[4]] == x.shape[0]))
            node.input[4] = ""
        layer = read(node, ins)
        self.assertEqual(layer["cell"], cell)
        x = ins[node.input[0]].astype(np.float64)
        if layer["layout"] == 1:
            x = x.transpose(1, 0, 2)
        y = run_canonical(layer, x)
        got = {"Y": y[:, None], "Y_h": y[-1][None]}
        if layer["layout"] == 1:
            got = {"Y": y.transpose(1, 0, 2)[:, :, None], "Y_h": y[-1][:, None]}
        names = dict(zip(node.output, ("Y", "Y_h", "Y_c")))
        self.assertTrue(outs)
        for out, want in outs.items():
            self.assertEqual(got[names[out]].shape, want.shape, out)
            self.assertLess(np.abs(got[names[out]] - want).max(), 1e-5, f"{name}: {out}")
        return layer

    def test_gru_defaults(self):
        self.assertFalse(self.check("test_gru_defaults", "gru")["reset_after"])

    def test_gru_with_initial_bias(self):
        self.check("test_gru_with_initial_bias", "gru")

    def test_gru_batchwise(self):
        self.check("test_gru_batchwise", "gru")

    def test_gru_seq_length(self):
        # Random W, R and B: the one that tells the gate blocks apart.
        self.check("test_gru_seq_length", "gru")

    def test_lstm_with_peepholes(self):
        layer = self.check("test_lstm_with_peepholes", "lstm")
        self.assertTrue(layer["peepholes"])


# ----------------------------------------------------------------------------------------- tiny graphs
def tiny_lm(op, V=7, E=4, H=5, seed=0, attrs=None, extra_inputs=None, stack=1):
    """ids -> Gather(emb) -> Transpose -> op (x stack, Squeeze between) -> MatMul -> Add -> LogSoftmax, as an
    exporter writes one; returns (ModelProto, {name: float32 array} of the initializers)."""
    G = onnx_model.RECURRENT_OPS[op]
    rng = np.random.RandomState(seed)
    arrays = {"emb": rng.randn(V, E), "dec": rng.randn(H, V), "dec_b": rng.randn(V)}
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
             helper.make_node("Transpose", ["e"], ["x0"], perm=[1, 0, 2])]
    x = "x0"
    for k in range(stack):
        in_size = E if k == 0 else H
        arrays.update({f"W{k}": rng.randn(1, G * H, in_size) * 0.6, f"R{k}": rng.randn(1, G * H, H) * 0.6,
                       f"B{k}": rng.randn(1, 2 * G * H) * 0.5})
        inputs = [x, f"W{k}", f"R{k}", f"B{k}"]
        for name, arr in (extra_inputs or {}).items():
            inputs += [""] * (int(name.split(":")[0]) - len(inputs)) + [f"{name.split(':')[1]}{k}"]
            arrays[f"{name.split(':')[1]}{k}"] = arr
        nodes += [helper.make_node(op, inputs, [f"Y{k}"], name=f"{op.lower()}{k}", hidden_size=H, **(attrs or {})),
                  helper.make_node("Squeeze", [f"Y{k}", "ax1"], [f"x{k + 1}"])]
        x = f"x{k + 1}"
    nodes += [helper.make_node("MatMul", [x, "dec"], ["logits0"]),
              helper.make_node("Add", ["logits0", "dec_b"], ["logits"]),
              helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=-1)]
    arrays = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "ax1"))
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, None])],
                          [helper.make_tensor_value_info("logp", TensorProto.FLOAT, [None, 1, V])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="test"), arrays


def onnx_gru_step(x, h, W, R, B, H, linear_before_reset, f=sigmoid, g=np.tanh):
    """The ONNX GRU op's equations (Operators.md), gate blocks z, r, h of W, R, Wb, Rb."""
    Wz, Wr, Wh = W[:H], W[H:2 * H], W[2 * H:]
    Rz, Rr, Rh = R[:H], R[H:2 * H], R[2 * H:]
    Wb, Rb = B[:3 * H], B[3 * H:]
    z = f(Wz @ x + Rz @ h + Wb[:H] + Rb[:H])
    r = f(Wr @ x + Rr @ h + Wb[H:2 * H] + Rb[H:2 * H])
    if linear_before_reset:
        hh = g(Wh @ x + r * (Rh @ h + Rb[2 * H:]) + Wb[2 * H:])
    else:
        hh = g(Wh @ x + Rh @ (r * h) + Rb[2 * H:] + Wb[2 * H:])
    return (1 - z) * hh + z * h


def onnx_rnn_step(x, h, W, R, B, H, f):
    return f(W @ x + R @ h + B[:H] + B[H:])


def onnx_lstm_step(x, h, c, W, R, B, P, H, f=sigmoid, g=np.tanh):
    """The ONNX LSTM op's equations with peepholes: blocks i, o, f, c; P = Pi, Po, Pf."""
    z = W @ x + R @ h + B[:4 * H] + B[4 * H:]
    Pi, Po, Pf = P[:H], P[H:2 * H], P[2 * H:]
    i = f(z[:H] + Pi * c)
    fg = f(z[2 * H:3 * H] + Pf * c)
    c = fg * c + i * g(z[3 * H:])
    o = f(z[H:2 * H] + Po * c)
    return o * g(c), c


def onnx_logprobs(arrays, ids, step, stack=1):
    """log p(ids[t] | ids[:t]) for t >= 1 by the ONNX equations (step(k, x, state) -> (y, state))."""
    states = [None] * stack
    out = []
    for t, nxt in zip(ids[:-1], ids[1:]):
        x = arrays["emb"][t].astype(np.float64)
        for k in range(stack):
            x, states[k] = step(k, x, states[k])
        z = x @ arrays["dec"] + arrays["dec_b"]
        z = z - z.max()
        out.append(z[nxt] - np.log(np.exp(z).sum()))
    return np.array(out)


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class TinyGraphTest(unittest.TestCase):
    V, H = 7, 5
    SEQS = ([1, 2, 3, 4, 5, 6, 0], [6, 6, 0, 3, 1], [2, 5])

    def convert(self, m, name):
        path = os.path.join(tempfile.mkdtemp(dir=TMP), name + ".onnx")
        onnx.save(m, path)
        out = path[:-5]
        pyutil.convert_ok(self, path, out, "--vocab", vocab_file(self.V))
        return out

    def refused(self, m, name, pattern):
        path = os.path.join(tempfile.mkdtemp(dir=TMP), name + ".onnx")
        onnx.save(m, path)
        r = pyutil.convert(path, path[:-5], "--vocab", vocab_file(self.V))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertRegex(r.stderr, pattern)

    def compare(self, out, arrays, step, stack=1):
        dm = DirModel(out)
        for ids in self.SEQS:
            want = onnx_logprobs(arrays, ids, step, stack)
            self.assertLess(np.abs(dm.token_logprobs(ids) - want).max(), 1e-6, ids)
        if pyutil.CLI and os.path.exists(pyutil.CLI):
            check_cli_scores(self, out, self.SEQS)

    def test_gru_both_conventions(self):
        H = self.H
        for lbr in (0, 1):
            with self.subTest(linear_before_reset=lbr):
                m, a = tiny_lm("GRU", attrs={"linear_before_reset": lbr}, stack=2, seed=lbr)
                out = self.convert(m, f"gru{lbr}")
                cfg = pyutil.read_config(out)
                self.assertEqual(cfg["format_version"], 3)
                self.assertEqual([(l["cell"], l["reset_after"]) for l in cfg["layers"]], [("gru", bool(lbr))] * 2)

                def step(k, x, h):
                    h = np.zeros(H) if h is None else h
                    h = onnx_gru_step(x, h, a[f"W{k}"][0], a[f"R{k}"][0], a[f"B{k}"][0], H, lbr)
                    return h, h
                self.compare(out, a, step, stack=2)

    def test_rnn_tanh_and_relu(self):
        H = self.H
        for act, f in (("Tanh", np.tanh), ("Relu", lambda v: np.maximum(v, 0))):
            with self.subTest(activation=act):
                m, a = tiny_lm("RNN", attrs={"activations": [act]}, stack=2, seed=3)
                out = self.convert(m, f"rnn_{act}")
                self.assertEqual([(l["cell"], l["activation"]) for l in pyutil.read_config(out)["layers"]],
                                 [("rnn", act.lower())] * 2)

                def step(k, x, h, f=f):
                    h = np.zeros(H) if h is None else h
                    h = onnx_rnn_step(x, h, a[f"W{k}"][0], a[f"R{k}"][0], a[f"B{k}"][0], H, f)
                    return h, h
                self.compare(out, a, step, stack=2)

    def test_lstm_peepholes(self):
        H = self.H
        P = np.random.RandomState(9).randn(1, 3 * H).astype(np.float32)
        m, a = tiny_lm("LSTM", extra_inputs={"7:P": P}, seed=4)
        out = self.convert(m, "peep")
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["format_version"], cfg["layers"][0]["peepholes"]), (3, True))
        w = pyutil.read_safetensors(os.path.join(out, "weights.safetensors"))
        np.testing.assert_array_equal(w["lstm.weight_ci_l0"], P[0, :H])
        np.testing.assert_array_equal(w["lstm.weight_co_l0"], P[0, H:2 * H])
        np.testing.assert_array_equal(w["lstm.weight_cf_l0"], P[0, 2 * H:])

        def step(k, x, state):
            h, c = (np.zeros(H), np.zeros(H)) if state is None else state
            h, c = onnx_lstm_step(x, h, c, a["W0"][0], a["R0"][0], a["B0"][0], a["P0"][0], H)
            return h, (h, c)
        self.compare(out, a, step)

    def test_gru_hard_sigmoids(self):
        H = self.H
        for alpha, name in ((0.2, "hard_sigmoid"), (1 / 6, "hard_sigmoid_keras3")):
            with self.subTest(alpha=alpha):
                attrs = {"activations": ["HardSigmoid", "Tanh"], "activation_alpha": [alpha],
                         "activation_beta": [0.5], "linear_before_reset": 1}
                m, a = tiny_lm("GRU", attrs=attrs, seed=7)
                out = self.convert(m, f"gru_{name}")
                self.assertEqual(pyutil.read_config(out)["layers"][0]["recurrent_activation"], name)
                hard = np.float32(alpha)

                def step(k, x, h, hard=hard):
                    h = np.zeros(H) if h is None else h
                    h = onnx_gru_step(x, h, a["W0"][0], a["R0"][0], a["B0"][0], H, 1,
                                      f=lambda v: np.clip(float(hard) * v + 0.5, 0, 1))
                    return h, h
                self.compare(out, a, step)

    def test_zero_peepholes_stay_format_v1(self):
        m, _ = tiny_lm("LSTM", extra_inputs={"7:P": np.zeros((1, 3 * self.H), np.float32)})
        cfg = pyutil.read_config(self.convert(m, "zero_peep"))
        self.assertEqual(cfg["format_version"], 1)
        self.assertNotIn("peepholes", cfg["layers"][0])

    def test_what_the_format_cannot_express_is_refused(self):
        cases = [
            ("GRU", {"clip": 2.0}, r"gru0.*clip=2.0 clips the gates' inputs before their activations; lstmlm's GRU "
                                   r"cell has no such clip"),
            ("RNN", {"clip": 1.5}, r"rnn0.*clip=1.5 clips the gates' inputs"),
            ("LSTM", {"clip": 3.0}, r"lstm0.*clip=3.0 clips the gates' inputs.*cell_clip clips the cell state"),
            ("RNN", {"activations": ["Sigmoid"]}, r"rnn0.*activation sigmoid; lstmlm's simple RNN runs Tanh or Relu"),
            ("GRU", {"activations": ["Sigmoid", "Softsign"]}, r"gru0.*activation \(g\) softsign"),
            ("GRU", {"activations": ["Tanh", "Tanh"]}, r"gru0.*gate activation \(f\) tanh"),
            ("GRU", {"direction": "reverse"}, r"gru0.*direction reverse; only forward GRUs"),
            ("GRU", {"activations": ["Sigmoid"]}, r"gru0.*1 activations; a forward GRU has 2 \(f, g\)"),
            ("GRU", {"linear_before_reset": "0"}, r"gru0.*linear_before_reset is '0', expected an integer"),
        ]
        for op, attrs, pattern in cases:
            with self.subTest(op=op, attrs=attrs):
                self.refused(tiny_lm(op, attrs=attrs)[0], f"bad_{op}", pattern)
        m, _ = tiny_lm("GRU", extra_inputs={"5:h0": np.ones((1, 1, self.H), np.float32)})
        self.refused(m, "gru_h0", r"gru0.*initial_h is not all zeros")


def vocab_file(n):
    p = os.path.join(TMP, f"vocab{n}.json")
    if not os.path.exists(p):
        with open(p, "w", encoding="utf-8") as f:
            f.write("[" + ",".join(f'"w{i}"' for i in range(n)) + "]")
    return p


def check_cli_scores(test, outdir, sequences):
    from convert.test_convert_torch_cells import check_cli_scores as check
    check(test, outdir, sequences)


# ----------------------------------------------------------------------------------------- torch.onnx
class StackLM:
    """Embedding -> one or two recurrent modules -> Linear -> log_softmax (built lazily: torch is optional)."""

    @staticmethod
    def make(torch, modules, V=11, E=6, batch_first=False):
        nn = torch.nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(V, E)
                self.rnns = nn.ModuleList(modules)
                self.dec = nn.Linear(modules[-1].hidden_size, V)

            def forward(self, ids):
                x = self.emb(ids)
                for rnn in self.rnns:
                    x, _ = rnn(x)
                return torch.log_softmax(self.dec(x), -1)
        lm = LM()
        with torch.no_grad():
            for p in lm.parameters():
                p.uniform_(-0.7, 0.7)
        return lm.eval()


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class TorchOnnxExportTest(unittest.TestCase):
    V = 11

    def setUp(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        self.torch = torch

    def export(self, lm, name, fold=True):
        torch = self.torch
        path = os.path.join(tempfile.mkdtemp(dir=TMP), name + ".onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(lm, torch.zeros(3, 1, dtype=torch.long), path, opset_version=13,
                              do_constant_folding=fold, input_names=["ids"], output_names=["logp"],
                              dynamic_axes={"ids": {0: "T"}})
        out = path[:-5]
        pyutil.convert_ok(self, path, out, "--vocab", vocab_file(self.V))
        return out

    def check(self, lm, out, cells):
        torch = self.torch
        cfg = pyutil.read_config(out)
        self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], cells)
        seqs = [list(np.random.RandomState(s).randint(0, self.V, 9)) for s in range(3)]
        m = lm.double()
        dm = DirModel(out)
        for ids in seqs:
            with torch.no_grad():
                lp = m(torch.tensor(ids[:-1]).view(-1, 1))[:, 0]
            want = np.array([float(lp[t, ids[t + 1]]) for t in range(len(ids) - 1)])
            self.assertLess(np.abs(dm.token_logprobs(ids) - want).max(), 1e-6, ids)
        if pyutil.CLI and os.path.exists(pyutil.CLI):
            check_cli_scores(self, out, seqs)

    def test_gru_rnn_and_mixed_stacks(self):
        nn = self.torch.nn
        self.torch.manual_seed(0)
        cases = [
            ("gru", lambda: [nn.GRU(6, 8, 2)], ["gru", "gru"]),
            ("rnn_tanh", lambda: [nn.RNN(6, 8, 2, nonlinearity="tanh")], ["rnn", "rnn"]),
            ("rnn_relu", lambda: [nn.RNN(6, 8, 1, nonlinearity="relu")], ["rnn"]),
            ("gru_lstm", lambda: [nn.GRU(6, 8), nn.LSTM(8, 7)], ["gru", "lstm"]),
            ("rnn_gru_lstm", lambda: [nn.RNN(6, 5), nn.GRU(5, 8), nn.LSTM(8, 4)], ["rnn", "gru", "lstm"]),
        ]
        for name, modules, cells in cases:
            for fold in (True, False):
                with self.subTest(model=name, fold=fold):
                    lm = StackLM.make(self.torch, modules())
                    out = self.export(lm, f"{name}_{fold}", fold)
                    cfg = pyutil.read_config(out)
                    self.assertEqual(cfg["format_version"], 3)
                    if "gru" in cells:
                        self.assertTrue(cfg["layers"][cells.index("gru")]["reset_after"])
                    self.check(lm, out, cells)


if __name__ == "__main__":
    unittest.main()
