"""TF1 checkpoints of GRUCell and LSTMCell(use_peepholes, cell_clip, num_proj, proj_clip) language models, and TF
0.12's sharded LSTMCell kernel (W_0..W_7, W_P_0..W_P_1), written with tf1_ckpt_writer (no TensorFlow), converted
to format v3. A float64 numpy model written here from TF1's rnn_cell_impl formulas runs TF's own tensors in TF's
layout (gates/kernel [in + H, 2H] in columns r, u; LSTM kernel [in + H, 4H] in columns i, j, f, o; forget_bias
added at run time); the converted directory evaluated in float64 (lstmlm_dir_ref) is within 1e-6 of it, and
lstmlm (predict, score) within 1e-4."""
import json
import os
import unittest

import numpy as np

import pyutil
from convert.test_import_keras_cells import check_converted
from tf1_ckpt_writer import write_checkpoint

TMP = pyutil.temp_root("lstmlm_tf1_cells_")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gru_cell(t, x, h):
    """TF1 GRUCell.call: r, u = sigmoid([x, h] Kg + bg); c = tanh([x, r h] Kc + bc); h' = u h + (1 - u) c."""
    r, u = np.split(sigmoid(np.concatenate([x, h]) @ t["gk"] + t["gb"]), 2)
    c = np.tanh(np.concatenate([x, r * h]) @ t["ck"] + t["cb"])
    return u * h + (1 - u) * c


def lstm_cell(t, x, state, forget_bias, cell_clip=None, proj_clip=None):
    """TF1 LSTMCell.call with use_peepholes (w_*_diag), cell_clip, num_proj (proj) and proj_clip."""
    c, h = state
    i, j, f, o = np.split(np.concatenate([x, h]) @ t["kernel"] + t["bias"], 4)
    if "w_i" in t:
        c = sigmoid(f + forget_bias + t["w_f"] * c) * c + sigmoid(i + t["w_i"] * c) * np.tanh(j)
    else:
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        c = np.clip(c, -cell_clip, cell_clip)
    m = sigmoid(o + t["w_o"] * c if "w_i" in t else o) * np.tanh(c)
    if "proj" in t:
        m = m @ t["proj"]
        if proj_clip is not None:
            m = np.clip(m, -proj_clip, proj_clip)
    return c, m


class TF1CellsTest(unittest.TestCase):
    V, E = 12, 5

    def setUp(self):
        self.rng = np.random.RandomState(3)

    def arr(self, *shape, scale=0.6):
        return (self.rng.randn(*shape) * scale).astype(np.float32)

    def write(self, name, tensors):
        d = os.path.join(TMP, name)
        os.makedirs(d)
        prefix = os.path.join(d, "model.ckpt-100")
        write_checkpoint(prefix, tensors)
        vocab = os.path.join(d, "vocab.json")
        with open(vocab, "w") as f:
            json.dump([f"t{i}" for i in range(self.V)], f)
        return prefix, vocab

    def convert(self, prefix, vocab, *opts):
        out = prefix + "-out"
        pyutil.convert_ok(self, prefix, out, "--vocab", vocab, *opts)
        return out, pyutil.read_config(out)

    def reference(self, emb, steps, sw, sb):
        """ids -> ln p(next): steps [(init state, step(state, x) -> (state, output))] over TF's tensors."""
        f64 = lambda a: np.asarray(a, np.float64)  # noqa: E731

        def ref(ids):
            states = [s0 for s0, _ in steps]
            for t in ids:
                x = f64(emb)[t]
                for k, (_, step) in enumerate(steps):
                    states[k], x = step(states[k], x)
            z = x @ f64(sw) + f64(sb)
            return z - z.max() - np.log(np.exp(z - z.max()).sum())
        return ref

    def gru_tensors(self, scope, n_in, H):
        t = {"gk": self.arr(n_in + H, 2 * H), "gb": self.arr(2 * H) + 1.0, "ck": self.arr(n_in + H, H),
             "cb": self.arr(H)}
        names = {f"{scope}/gru_cell/gates/kernel": t["gk"], f"{scope}/gru_cell/gates/bias": t["gb"],
                 f"{scope}/gru_cell/candidate/kernel": t["ck"], f"{scope}/gru_cell/candidate/bias": t["cb"]}
        return t, names

    def test_gru_cells(self):
        # MultiRNNCell([GRUCell(6), GRUCell(4)]), TF >= 1.3 names, with Adam slots to skip.
        H1, H2 = 6, 4
        g1, n1 = self.gru_tensors("rnnlm/multi_rnn_cell/cell_0", self.E, H1)
        g2, n2 = self.gru_tensors("rnnlm/multi_rnn_cell/cell_1", H1, H2)
        emb, sw, sb = self.arr(self.V, self.E), self.arr(H2, self.V, scale=1.5), self.arr(self.V)
        tensors = dict(n1, **n2, embedding=emb, softmax_w=sw, softmax_b=sb)
        tensors["rnnlm/multi_rnn_cell/cell_0/gru_cell/gates/kernel/Adam"] = np.zeros_like(g1["gk"])
        prefix, vocab = self.write("gru", tensors)
        out, cfg = self.convert(prefix, vocab)
        self.assertEqual(cfg["format_version"], 3)
        self.assertEqual(cfg["layers"], [{"cell": "gru", "hidden_size": H, "reset_after": False, "activation": "tanh",
                                          "recurrent_activation": "sigmoid"} for H in (H1, H2)])
        f64 = lambda t: {k: np.asarray(v, np.float64) for k, v in t.items()}  # noqa: E731
        steps = [(np.zeros(H), lambda s, x, g=f64(g): (gru_cell(g, x, s),) * 2) for g, H in ((g1, H1), (g2, H2))]
        check_converted(self, out, self.reference(emb, steps, sw, sb), self.V, self.rng)

    def test_gru_under_peephole_projected_clipped_lstm(self):
        # cell_0 GRUCell(7), cell_1 LSTMCell(6, use_peepholes, cell_clip 0.8, num_proj 4, proj_clip 0.3),
        # forget_bias 0.5; weights wide enough that both clips bind.
        H1, H2, P = 7, 6, 4
        g1, n1 = self.gru_tensors("rnn/multi_rnn_cell/cell_0", self.E, H1)
        scope = "rnn/multi_rnn_cell/cell_1/lstm_cell"
        l2 = {"kernel": self.arr(H1 + P, 4 * H2, scale=1.5), "bias": self.arr(4 * H2), "w_i": self.arr(H2),
              "w_f": self.arr(H2), "w_o": self.arr(H2), "proj": self.arr(H2, P, scale=1.5)}
        n2 = {f"{scope}/kernel": l2["kernel"], f"{scope}/bias": l2["bias"], f"{scope}/w_i_diag": l2["w_i"],
              f"{scope}/w_f_diag": l2["w_f"], f"{scope}/w_o_diag": l2["w_o"],
              f"{scope}/projection/kernel": l2["proj"]}
        emb, sw, sb = self.arr(self.V, self.E), self.arr(P, self.V, scale=3.0), self.arr(self.V)
        prefix, vocab = self.write("mixed", dict(n1, **n2, embedding=emb, softmax_w=sw, softmax_b=sb))
        out, cfg = self.convert(prefix, vocab, "--forget-bias", "0.5", "--cell-clip", "0.8", "--proj-clip", "0.3")
        self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], ["gru", "lstm"])
        self.assertEqual({k: cfg["layers"][1].get(k) for k in ("proj_size", "cell_clip", "proj_clip", "peepholes")},
                         {"proj_size": P, "cell_clip": 0.8, "proj_clip": 0.3, "peepholes": True})
        f64 = lambda t: {k: np.asarray(v, np.float64) for k, v in t.items()}  # noqa: E731
        g, l = f64(g1), f64(l2)
        bound = {"c": 0.0, "m": 0.0}

        def lstm(s, x):
            c, m = lstm_cell(l, x, s, 0.5, 0.8, 0.3)
            bound["c"] = max(bound["c"], float(np.abs(c).max()))
            bound["m"] = max(bound["m"], float(np.abs(m).max()))
            return (c, m), m
        steps = [(np.zeros(H1), lambda s, x: (gru_cell(g, x, s),) * 2), ((np.zeros(H2), np.zeros(P)), lstm)]
        check_converted(self, out, self.reference(emb, steps, sw, sb), self.V, self.rng)
        self.assertEqual((bound["c"], bound["m"]), (0.8, 0.3), "both clips bind somewhere")

    def test_tf012_sharded_kernel_and_projection(self):
        # TF 0.12 LSTMCell(8, num_proj=5, num_unit_shards=8, num_proj_shards=2, use_peepholes=True) under
        # RNN/MultiRNNCell/Cell0: W_0..W_7 row blocks of the [in + P, 4H] kernel, W_P_0..W_P_1 of [H, P], B,
        # W_I_diag / W_F_diag / W_O_diag; TF 0.12's embedding and softmax names.
        H, P = 8, 5
        scope = "RNN/MultiRNNCell/Cell0/LSTMCell"
        t = {"kernel": self.arr(self.E + P, 4 * H), "bias": self.arr(4 * H), "w_i": self.arr(H),
             "w_f": self.arr(H), "w_o": self.arr(H), "proj": self.arr(H, P)}
        rows = np.array_split(np.arange(self.E + P), 8)  # uneven blocks, as TF shards a row count
        tensors = {f"{scope}/W_{i}": t["kernel"][r] for i, r in enumerate(rows)}
        tensors.update({f"{scope}/W_P_{i}": t["proj"][r] for i, r in enumerate(np.array_split(np.arange(H), 2))})
        tensors.update({f"{scope}/B": t["bias"], f"{scope}/W_I_diag": t["w_i"], f"{scope}/W_F_diag": t["w_f"],
                        f"{scope}/W_O_diag": t["w_o"]})
        emb, sw, sb = self.arr(self.V, self.E), self.arr(P, self.V, scale=2.0), self.arr(self.V)
        tensors.update({"embedding": emb, "softmax_w": sw, "softmax_b": sb})
        prefix, vocab = self.write("sharded", tensors)
        out, cfg = self.convert(prefix, vocab)
        self.assertEqual(cfg["layers"][0]["proj_size"], P)
        self.assertTrue(cfg["layers"][0]["peepholes"])
        lt = {k: np.asarray(v, np.float64) for k, v in t.items()}

        def lstm(s, x):
            c, m = lstm_cell(lt, x, s, 1.0)
            return (c, m), m
        check_converted(self, out, self.reference(emb, [((np.zeros(H), np.zeros(P)), lstm)], sw, sb), self.V,
                        self.rng)

    def refused(self, name, tensors, want, *opts):
        prefix, vocab = self.write(name, tensors)
        r = pyutil.convert(prefix, prefix + "-out", "--vocab", vocab, *opts)
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(want, r.stderr)
        return r.stderr

    def test_refusals(self):
        H = 4
        base = {"embedding": self.arr(self.V, self.E), "softmax_w": self.arr(H, self.V),
                "softmax_b": self.arr(self.V)}
        _, gru = self.gru_tensors("rnn/gru_cell_scope", self.E, H)
        gru = {k.replace("gru_cell_scope/", ""): v for k, v in gru.items()}
        no_cand = {k: v for k, v in gru.items() if "candidate/bias" not in k}
        self.refused("gru_nocand", dict(base, **no_cand), "has no candidate/bias variable")
        bad = dict(gru, **{"rnn/gru_cell/gates/kernel": self.arr(self.E + H, 3 * H)})
        self.refused("gru_shape", dict(base, **bad), "expected [9, 8], [8], [9, 4], [4]")
        self.refused("gru_clip", dict(base, **gru), "no cell is an LSTMCell", "--cell-clip", "1")
        scope = "rnn/lstm_cell"
        lstm = {f"{scope}/kernel": self.arr(self.E + H, 4 * H), f"{scope}/bias": self.arr(4 * H)}
        self.refused("proj_clip", dict(base, **lstm), "no LSTMCell has a projection", "--proj-clip", "1")
        self.refused("two_peeps", dict(base, **lstm, **{f"{scope}/w_i_diag": self.arr(H), f"{scope}/w_f_diag":
                                                       self.arr(H)}), "w_f_diag, w_i_diag")
        s012 = "RNN/LSTMCell"
        gap = {f"{s012}/W_0": self.arr(5, 4 * H), f"{s012}/W_2": self.arr(4, 4 * H), f"{s012}/B": self.arr(4 * H)}
        self.refused("gap", dict(base, **gap), "are not numbered 0..1")


if __name__ == "__main__":
    unittest.main()
