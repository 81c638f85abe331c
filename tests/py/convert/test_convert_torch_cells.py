"""PyTorch GRU and simple RNN models convert to format v3 and compute what PyTorch computes.

Models made here (word_language_model's RNNModel with rnn_type GRU, RNN_TANH, RNN_RELU and LSTM, as a whole
pickled module and as a bare state_dict): the converted directory evaluated in float64 (lstmlm_dir_ref) against
PyTorch's own float64 forward (model.double()), within 1e-6. The real char-rnn.pytorch CharRNN files of
../shared/data (GRU, whole-module pickles): converted, then compared with a float64 GRU written here from
PyTorch's documented formula on the tensors read by the restricted unpickler (never torch.load). With the CLI
(ctest sets LSTMLM_CLI), `lstmlm score` per-token log-probabilities within 1e-4 of the float64 reference.
"""
import json
import os
import string
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

TOL_DIR = 1e-6
TOL_CLI = 1e-4
TMP = pyutil.temp_root("lstmlm_torch_cells_")


def require_torch():
    try:
        import torch
    except ImportError:
        raise unittest.SkipTest("torch is not installed for this python3")
    return torch


def rnn_model_class(torch):
    """pytorch/examples word_language_model's RNNModel (model.py), its module and name as there, so a pickle of
    it names model.RNNModel as the real script's does."""
    nn = torch.nn

    class RNNModel(nn.Module):
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False, bias=True):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout, bias=bias)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout, bias=bias)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def forward(self, ids):
            emb = self.drop(self.encoder(ids))
            output, _ = self.rnn(emb)
            return torch.log_softmax(self.decoder(self.drop(output)), -1)

    RNNModel.__module__, RNNModel.__qualname__ = "model", "RNNModel"
    return RNNModel


def torch_token_logprobs(model, ids):
    """log p(ids[t] | ids[:t]) for t >= 1 by PyTorch itself in float64 (eval mode: dropout off)."""
    torch = require_torch()
    m = model.double().eval()
    with torch.no_grad():
        lp = m(torch.tensor(ids[:-1]).view(-1, 1))[:, 0]
        return np.array([float(lp[t, ids[t + 1]]) for t in range(len(ids) - 1)])


def save(obj, name):
    torch = require_torch()
    p = os.path.join(tempfile.mkdtemp(dir=TMP), name)
    module = obj.get("model") if isinstance(obj, dict) else obj
    if isinstance(module, torch.nn.Module):
        # torch.save pickles the class by reference: it must be importable as model.RNNModel while saving only.
        import types
        assert "model" not in sys.modules
        sys.modules["model"] = types.ModuleType("model")
        sys.modules["model"].RNNModel = type(module)
        try:
            torch.save(obj, p)
        finally:
            del sys.modules["model"]
    else:
        torch.save(obj, p)
    return p


def write_vocab(n):
    p = os.path.join(tempfile.mkdtemp(dir=TMP), "vocab.json")
    with open(p, "w", encoding="utf-8") as f:
        json.dump([f"w{i}" for i in range(n)], f)
    return p


def cli_token_logprobs(outdir, ids):
    """The jsonl record of `lstmlm score --ids` for one line of ids; skips when the CLI is not there."""
    r = subprocess.run([pyutil.require_cli(), "score", "-m", outdir, "--ids", "--output-format", "jsonl"],
                       input=" ".join(str(i) for i in ids) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"lstmlm score failed ({r.returncode}): {r.stderr}")
    rec = json.loads(r.stdout.splitlines()[0])
    return rec


class TorchCellsTest(unittest.TestCase):
    V, E, H = 11, 5, 6

    def make(self, rnn_type, nlayers=2, **kw):
        torch = require_torch()
        torch.manual_seed({"GRU": 1, "RNN_TANH": 2, "RNN_RELU": 3, "LSTM": 4}[rnn_type] + nlayers)
        m = rnn_model_class(torch)(rnn_type, self.V, self.E, self.H, nlayers, dropout=0.3 if nlayers > 1 else 0.0,
                                   **kw)
        with torch.no_grad():
            for p in m.parameters():  # wider than the default init, so relu and the gates leave their linear range
                p.uniform_(-0.8, 0.8)
        return m.eval()

    def ids(self, seed=0, n=12):
        return list(np.random.RandomState(seed).randint(0, self.V, size=n))

    def convert(self, src, *opts):
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
        pyutil.convert_ok(self, src, out, "--vocab", write_vocab(self.V), *opts)
        return out

    def refused(self, src, *opts):
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
        r = pyutil.convert(src, out, "--vocab", write_vocab(self.V), *opts)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(os.path.exists(out))
        return r.stderr

    def check(self, out, model, cells):
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["format_version"], 1 if set(cells) == {"lstm"} else 3)
        self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], cells)
        for seed in range(3):
            ids = self.ids(seed)
            got = DirModel(out).token_logprobs(ids)
            self.assertLess(np.abs(got - torch_token_logprobs(model, ids)).max(), TOL_DIR)

    def test_whole_module_gru_rnn_tanh_rnn_relu_lstm(self):
        for rnn_type, cell in (("GRU", "gru"), ("RNN_TANH", "rnn"), ("RNN_RELU", "rnn"), ("LSTM", "lstm")):
            with self.subTest(rnn_type=rnn_type):
                m = self.make(rnn_type)
                out = self.convert(save(m, "model.pt"))
                cfg = pyutil.read_config(out)
                self.assertEqual(cfg["source"]["module_class"], "model.RNNModel")
                if cell == "rnn":
                    self.assertEqual([l["activation"] for l in cfg["layers"]], [rnn_type[4:].lower()] * 2)
                if cell == "gru":
                    self.assertEqual([l["reset_after"] for l in cfg["layers"]], [True, True])
                self.check(out, m, [cell, cell])

    def test_state_dict_gru_and_rnn_with_nonlinearity_option(self):
        m = self.make("GRU", nlayers=1)
        self.check(self.convert(save(m.state_dict(), "gru.pt")), m, ["gru"])
        for rnn_type in ("RNN_TANH", "RNN_RELU"):
            with self.subTest(rnn_type=rnn_type):
                m = self.make(rnn_type, nlayers=3)
                sd = save({"model_state_dict": m.state_dict(), "epoch": 2}, "rnn.pt")
                self.check(self.convert(sd, "--rnn-nonlinearity", rnn_type[4:].lower()), m, ["rnn"] * 3)

    def test_module_inside_a_checkpoint_dict_names_its_nonlinearity(self):
        m = self.make("RNN_RELU", nlayers=2)
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
        words = [f"t{i}" for i in range(self.V)]
        pyutil.convert_ok(self, save({"model": m, "itos": words, "epoch": 7}, "ckpt.pt"), out)
        self.assertEqual(pyutil.read_vocab(out), words)
        self.assertEqual([l["activation"] for l in pyutil.read_config(out)["layers"]], ["relu", "relu"])
        self.check(out, m, ["rnn", "rnn"])

    def test_tied_and_bias_free(self):
        m = self.make("GRU", nlayers=1, tie_weights=False, bias=False)
        out = self.convert(save(m, "model.pt"))
        self.assertIn("gru.bias_ih_l0", pyutil.read_safetensors(os.path.join(out, "weights.safetensors")))
        self.check(out, m, ["gru"])
        torch = require_torch()
        torch.manual_seed(5)
        m = rnn_model_class(torch)("RNN_RELU", self.V, self.H, self.H, 2, tie_weights=True).eval()
        out = self.convert(save(m, "model.pt"))
        self.assertTrue(pyutil.read_config(out)["output"]["tied"])
        self.check(out, m, ["rnn", "rnn"])

    def test_rnn_nonlinearity_missing_or_contradicted(self):
        m = self.make("RNN_RELU", nlayers=1)
        err = self.refused(save(m.state_dict(), "rnn.pt"))
        self.assertIn("--rnn-nonlinearity", err)
        self.assertIn("rnn.weight_ih_l0", err)
        err = self.refused(save(m, "model.pt"), "--rnn-nonlinearity", "tanh")
        self.assertIn("contradicts", err)
        self.assertIn("relu", err)
        err = self.refused(save(self.make("GRU", nlayers=1), "model.pt"), "--rnn-nonlinearity", "tanh")
        self.assertIn("not an nn.RNN", err)

    def test_module_state_of_the_wrong_type_is_refused(self):
        # A pickled module's attributes are whatever the file says.
        m = self.make("GRU", nlayers=1)
        m.rnn.__dict__["mode"] = ["GRU"]
        err = self.refused(save(m, "model.pt"))
        self.assertIn("module 'rnn' has mode ['GRU']; expected one of LSTM, GRU, RNN_TANH, RNN_RELU", err)
        m = self.make("RNN_RELU", nlayers=1)
        del m.rnn.__dict__["mode"]
        m.rnn.__dict__["nonlinearity"] = {"relu": 1}
        self.assertIn("--rnn-nonlinearity", self.refused(save(m, "model.pt")))

    def test_bidirectional_and_odd_gate_counts_are_refused(self):
        torch = require_torch()
        gru = torch.nn.GRU(self.E, self.H, bidirectional=True)
        sd = {"encoder.weight": torch.zeros(self.V, self.E), **{"rnn." + k: v for k, v in gru.state_dict().items()},
              "decoder.weight": torch.zeros(self.V, self.H), "decoder.bias": torch.zeros(self.V)}
        self.assertIn("bidirectional", self.refused(save(sd, "bi.pt")))
        sd = {"encoder.weight": torch.zeros(self.V, self.E), "rnn.weight_ih_l0": torch.zeros(2 * self.H, self.E),
              "rnn.weight_hh_l0": torch.zeros(2 * self.H, self.H), "decoder.weight": torch.zeros(self.V, self.H),
              "decoder.bias": torch.zeros(self.V)}
        err = self.refused(save(sd, "two.pt"))
        self.assertIn("rnn.weight_hh_l0", err)
        self.assertIn("no LSTM (4), GRU (3) or RNN (1)", err)

    def test_two_recurrent_modules_are_refused(self):
        torch = require_torch()
        gru, lstm = torch.nn.GRU(self.E, self.H), torch.nn.LSTM(self.H, self.H)
        sd = {"encoder.weight": torch.zeros(self.V, self.E), **{"gru." + k: v for k, v in gru.state_dict().items()},
              **{"lstm." + k: v for k, v in lstm.state_dict().items()}, "decoder.weight": torch.zeros(self.V, self.H),
              "decoder.bias": torch.zeros(self.V)}
        err = self.refused(save(sd, "mixed.pt"))
        self.assertIn("found 2: ['gru.', 'lstm.']", err)
        self.assertIn("torch.onnx", err)

    def test_cli_scores_converted_models(self):
        pyutil.require_cli()
        for rnn_type, kw in (("GRU", {}), ("RNN_TANH", {}), ("RNN_RELU", {}), ("LSTM", {})):
            with self.subTest(rnn_type=rnn_type):
                m = self.make(rnn_type, **kw)
                out = self.convert(save(m, "model.pt"))
                check_cli_scores(self, out, [self.ids(seed) for seed in range(3)])


def check_cli_scores(test, outdir, sequences):
    """`lstmlm score --ids` per-token log-probabilities against the float64 evaluation of the directory."""
    dm = DirModel(outdir)
    for ids in sequences:
        ids = [int(i) for i in ids]
        rec = cli_token_logprobs(outdir, ids)
        test.assertEqual([w["id"] for w in rec["words"]], ids)
        # The first id is the context only (the model has no bos), and nothing is appended (no eos).
        test.assertIsNone(rec["words"][0]["logprob"])
        got = np.array([w["logprob"] for w in rec["words"][1:]], dtype=np.float64)
        want = dm.token_logprobs(ids)
        test.assertEqual(len(got), len(want), rec)
        test.assertLess(np.abs(got - want).max(), TOL_CLI, f"lstmlm score vs float64 reference, ids {ids}")


def printable_gru_reference(path):
    """A float64 CharRNN (char-rnn.pytorch model.py: encoder Embedding -> nn.GRU -> decoder Linear) written from
    PyTorch's documented nn.GRU formula, on the tensors of the pickled module read by lstmlm's restricted
    unpickler:
        r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h."""
    from lstmlm.convert import torch_file, unpickle
    sd = {k: np.asarray(v, np.float64) for k, v in unpickle.module_state_dict(torch_file.load(path)).items()}
    layers = sorted(int(k.rsplit("_l", 1)[1]) for k in sd if k.startswith("rnn.weight_ih_l"))

    def token_logprobs(ids):
        hs = [np.zeros(sd[f"rnn.weight_hh_l{k}"].shape[1]) for k in layers]
        out = []
        for t, nxt in zip(ids[:-1], ids[1:]):
            x = sd["encoder.weight"][t]
            for k in layers:
                W_ih, W_hh = sd[f"rnn.weight_ih_l{k}"], sd[f"rnn.weight_hh_l{k}"]
                b_ih, b_hh = sd[f"rnn.bias_ih_l{k}"], sd[f"rnn.bias_hh_l{k}"]
                H = W_hh.shape[1]
                W_ir, W_iz, W_in = W_ih[:H], W_ih[H:2 * H], W_ih[2 * H:]
                W_hr, W_hz, W_hn = W_hh[:H], W_hh[H:2 * H], W_hh[2 * H:]
                h = hs[k]
                r = 1 / (1 + np.exp(-(W_ir @ x + b_ih[:H] + W_hr @ h + b_hh[:H])))
                z = 1 / (1 + np.exp(-(W_iz @ x + b_ih[H:2 * H] + W_hz @ h + b_hh[H:2 * H])))
                n = np.tanh(W_in @ x + b_ih[2 * H:] + r * (W_hn @ h + b_hh[2 * H:]))
                hs[k] = x = (1 - z) * n + z * h
            logits = sd["decoder.weight"] @ x + sd["decoder.bias"]
            m = logits.max()
            out.append(logits[nxt] - m - np.log(np.exp(logits - m).sum()))
        return np.array(out)
    return token_logprobs


class CharRnnPytorchTest(unittest.TestCase):
    FILES = (("shakespeare.pt", 1, 100), ("RNN_2_layers.pt", 2, 100), ("hidden_size_50.pt", 2, 50))

    def sequences(self, d):
        with open(os.path.join(d, "shakespeare.txt"), encoding="utf-8") as f:
            text = f.read(20000)
        idx = {c: i for i, c in enumerate(string.printable)}
        return [[idx[c] for c in text[s:s + 60]] for s in (0, 5000, 13333)]

    def test_converted_gru_matches_the_documented_formula(self):
        d = pyutil.data("torch-charrnn-gru-shakespeare")
        with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), list(string.printable))
        for name, layers, hidden in self.FILES:
            with self.subTest(file=name):
                out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
                r = pyutil.convert_ok(self, os.path.join(d, name), out)
                self.assertIn("string.printable", r.stderr)
                cfg = pyutil.read_config(out)
                self.assertEqual(cfg["format_version"], 3)
                self.assertEqual(cfg["layers"], [{"cell": "gru", "hidden_size": hidden, "reset_after": True,
                                                  "activation": "tanh", "recurrent_activation": "sigmoid"}] * layers)
                self.assertEqual(cfg["tokenizer"]["type"], "char")
                self.assertEqual(pyutil.read_vocab(out), list(string.printable))
                ref = printable_gru_reference(os.path.join(d, name))
                dm = DirModel(out)
                nll = []
                for ids in self.sequences(d):
                    want = ref(ids)
                    self.assertLess(np.abs(dm.token_logprobs(ids) - want).max(), TOL_DIR)
                    nll.append(-want.mean())
                # A trained model with the right vocabulary: far below uniform (ln 100 = 4.6 nats).
                self.assertLess(np.mean(nll), 2.6)

    def test_train_loss_recipe(self):
        # char-rnn.pytorch train.py: random_training_set() takes chunk_len + 1 = 201 chars of the text, the model
        # reads chunk[:-1] from a zero hidden state, and the loss is the mean cross-entropy of chunk[1:]. The
        # lstmlm figure: each chunk as one line of ids, `lstmlm score --ids` (the first id is context only).
        pyutil.require_cli()
        d = pyutil.data("torch-charrnn-gru-shakespeare")
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
        pyutil.convert_ok(self, os.path.join(d, "RNN_2_layers.pt"), out)
        with open(os.path.join(d, "shakespeare.txt"), encoding="utf-8") as f:
            text = f.read()
        idx = {c: i for i, c in enumerate(string.printable)}
        starts = np.random.RandomState(0).randint(0, len(text) - 201, size=20)
        chunks = [[idx[c] for c in text[s:s + 201]] for s in starts]
        ref = printable_gru_reference(os.path.join(d, "RNN_2_layers.pt"))
        recipe = np.concatenate([-ref(c) for c in chunks])
        lines = os.path.join(tempfile.mkdtemp(dir=TMP), "chunks.txt")
        with open(lines, "w", encoding="utf-8") as f:
            f.write("".join(" ".join(map(str, c)) + "\n" for c in chunks))
        r = subprocess.run([pyutil.require_cli(), "score", "-m", out, "--ids", "--output-format", "jsonl", lines],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        words = [w for line in r.stdout.splitlines() for rec in [json.loads(line)] if rec["type"] == "line"
                 for w in rec["words"]]
        self.assertEqual([w["id"] for w in words], [i for c in chunks for i in c])
        got = -np.array([w["logprob"] for w in words if w["logprob"] is not None])
        self.assertEqual(got.size, 200 * len(chunks))
        np.testing.assert_allclose(got, recipe, atol=TOL_CLI, rtol=0)
        print(f"char-rnn.pytorch train.py loss (RNN_2_layers.pt, 20 chunks of 200): recipe {recipe.mean():.6f}, "
              f"lstmlm score --ids {got.mean():.6f} nats/char", flush=True)

    def test_cli_scores_the_real_files(self):
        pyutil.require_cli()
        d = pyutil.data("torch-charrnn-gru-shakespeare")
        for name, _, _ in self.FILES:
            with self.subTest(file=name):
                out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
                pyutil.convert_ok(self, os.path.join(d, name), out)
                check_cli_scores(self, out, self.sequences(d))


if __name__ == "__main__":
    unittest.main()
